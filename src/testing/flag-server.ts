/**
 * An in-memory flag server speaking the upstream's client API, for tests (ours and users'):
 * `GET /api/client/features` (token check, ETag/304, project/namePrefix/tag filters),
 * `POST /api/client/register` and `POST /api/client/metrics` (captured). Flags are changed by
 * the test through methods; faults can be switched on to see how a proxy copes.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FlagProxyError } from '../errors.js';
import type { FeatureDefinition } from '../evaluation/types.js';
import { createAdminEventLog, type AdminEventLog } from './admin-event-log.js';
import { createFlagServerHandler, send } from './flag-server-routes.js';
import { createFaultState, createFlagState, createReceivedLog, type FlagEditing } from './flag-server-state.js';
import type { ReceivedMetrics, ReceivedRequest, TestFault } from './flag-server-types.js';
import type { TestFlag, TestSegment } from './flags.js';

export type { ReceivedMetrics, ReceivedRequest, TestFault } from './flag-server-types.js';

/** Options of {@link createTestFlagServer}. */
export interface TestFlagServerOptions {
  /** Tokens accepted on the client API. @default ['test-client-token'] */
  clientTokens?: string[];
  /** Initial flags (plain objects, or built with `flag()`). @default [] */
  features?: TestFlag[];
  /** Initial segments. @default [] */
  segments?: TestSegment[];
  /** Port to listen on (loopback); a port in use rejects with an error naming it. @default 0, a free port */
  port?: number;
  /** Tokens accepted on the admin events API. @default ['test-admin-token'] */
  adminTokens?: string[];
  /** Environment the recorded flag events name. @default 'development' */
  environment?: string;
}

/** A running in-memory flag server. */
export interface TestFlagServer extends FlagEditing {
  /** The API URL to give a proxy as `flagUrl`, e.g. `http://127.0.0.1:4242/api/`. */
  readonly url: string;
  /** The server root, e.g. `http://127.0.0.1:4242`. */
  readonly origin: string;
  /** The first accepted client token. */
  readonly token: string;
  /** The first accepted admin token (for the admin events API). */
  readonly adminToken: string;
  /** The admin event log: every flag change made through this server is recorded in it. */
  readonly events: AdminEventLog;
  /** Answers with a fault until called again with `undefined`. */
  setFault(fault: TestFault | undefined): void;
  /** Every request received, oldest first. */
  readonly requests: ReceivedRequest[];
  /** Flag fetches (`GET /api/client/features`) being answered now, and the most ever at once. */
  fetchConcurrency(): { current: number; max: number };
  /** Every usage report received (2xx only). */
  readonly metrics: ReceivedMetrics[];
  /** Every registration received. */
  readonly registrations: Array<Record<string, unknown>>;
  /** Sum of `yes`, `no` and variant counts received for one toggle. */
  countsFor(name: string): { yes: number; no: number; variants: Record<string, number> };
  /** Resolves when a usage report matching `predicate` arrives (or rejects after `timeoutMs`). */
  waitForMetrics(predicate?: (m: ReceivedMetrics) => boolean, timeoutMs?: number): Promise<ReceivedMetrics>;
  /** Stops the server. */
  close(): Promise<void>;
}

/** Listens on loopback; a failure (a port in use) rejects naming the address, and nothing keeps running. */
function listen(server: http.Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException): void => {
      const reason = error.code === 'EADDRINUSE' ? 'the port is in use (EADDRINUSE)' : error.message;
      reject(new FlagProxyError('INVALID_OPTION', `Test flag server could not listen on 127.0.0.1:${port}: ${reason}`, { status: 500, cause: error }));
    };
    server.once('error', failed);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', failed);
      resolve();
    });
  });
}

/**
 * Starts an in-memory flag server on loopback.
 *
 * @example
 * ```ts
 * const upstream = await createTestFlagServer({ features: [flag('new-ui'), flag('beta', { enabled: false })] });
 * const proxy = createFlagProxy({ flagUrl: upstream.url, flagApiToken: upstream.token, clientKeys: ['k'] });
 * await proxy.ready;
 * ```
 */
export async function createTestFlagServer(options: TestFlagServerOptions = {}): Promise<TestFlagServer> {
  const tokens = options.clientTokens ?? ['test-client-token'];
  const adminTokens = options.adminTokens ?? ['test-admin-token'];
  const events = createAdminEventLog({ adminTokens, clientTokens: tokens });
  const flags = createFlagState({ ...options, environment: options.environment ?? 'development' }, events);
  const faults = createFaultState();
  const received = createReceivedLog();
  const handle = createFlagServerHandler({ tokens, events, flags, faults, received });

  const server = http.createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, { message: 'test server error' });
    });
  });
  server.keepAliveTimeout = 1000;
  await listen(server, options.port ?? 0);
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;

  return {
    url: `${origin}/api/`,
    origin,
    token: tokens[0] ?? '',
    adminToken: adminTokens[0] ?? '',
    events,
    features: flags.features,
    setFeatures: flags.setFeatures,
    upsertFeature: flags.upsertFeature,
    removeFeature: flags.removeFeature,
    setEnabled: flags.setEnabled,
    setSegments: flags.setSegments,
    setFault: faults.set,
    requests: received.requests,
    fetchConcurrency: received.fetchConcurrency,
    metrics: received.metrics,
    registrations: received.registrations,
    countsFor: received.countsFor,
    waitForMetrics: received.waitForMetrics,
    close() {
      faults.dropHeld();
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
