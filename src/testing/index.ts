/**
 * `flag-proxy/testing`: an in-memory flag server and storage provider for your own unit tests.
 */
export {
  createTestFlagServer,
  type TestFlagServer,
  type TestFlagServerOptions,
  type TestFault,
  type ReceivedMetrics,
  type ReceivedRequest,
} from './flag-server.js';
export {
  flag,
  type TestFlag,
  type TestStrategy,
  type TestConstraint,
  type TestOperator,
  type TestVariant,
  type TestSegment,
} from './flags.js';
export { silentLogger } from './silent-logger.js';
export { createMemoryStorageProvider, type MemoryStorageProvider } from './storage.js';
export { createAdminEventLog, type AdminEventLog, type AdminEventLogOptions, type AdminEventInput } from './admin-event-log.js';
