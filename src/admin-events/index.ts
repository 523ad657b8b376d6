/**
 * `flag-proxy/admin-events`: a typed client for the flag server's admin events API, with full
 * history past the server's caps, and a read-only feed a host can mount for its own users.
 *
 * @example
 * ```ts
 * import { createAdminEventsClient, isFlagProxyError } from 'flag-proxy/admin-events';
 *
 * const client = createAdminEventsClient({ flagUrl: process.env.FLAG_URL!, adminToken: process.env.FLAG_ADMIN_TOKEN! });
 * try {
 *   const { events } = await client.list({ project: 'default', all: true });
 * } catch (err) {
 *   if (isFlagProxyError(err) && err.code === 'FORBIDDEN') console.error(err.message);
 * }
 * ```
 */
export {
  createAdminEventsClient,
  type AdminEventsClient,
  type AdminEventsClientOptions,
  type AdminEventsFetch,
  type AdminEventsFilter,
  type AdminEventsIterateOptions,
  type AdminEventsListOptions,
  type AdminEventsSearchOptions,
  type AdminEventsToggleOptions,
} from './client.js';
export { createAdminEventsHandler, type AdminEventsHandler, type AdminEventsHandlerOptions } from './feed.js';
export {
  adminEventSchema,
  adminEventTagSchema,
  type AdminEvent,
  type AdminEventList,
  type AdminEventSearchPage,
  type AdminEventTag,
  type ToggleEventList,
} from './schemas.js';
// Re-exported so that users of this subpath can tell errors apart without importing the root.
export { FlagProxyError, isFlagProxyError, type FlagProxyErrorCode, type FlagProxyErrorOptions } from '../errors.js';
