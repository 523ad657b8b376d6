/**
 * An in-memory flag server speaking the upstream's client API, for tests (ours and users'):
 * `GET /api/client/features` (token check, ETag/304, project/namePrefix/tag filters),
 * `POST /api/client/register` and `POST /api/client/metrics` (captured). Flags are changed by
 * the test through methods; faults can be switched on to see how a proxy copes.
 */
import { createHash } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FlagProxyError } from '../errors.js';
import type { FeatureDefinition } from '../evaluation/types.js';
import { createAdminEventLog, type AdminEventLog } from './admin-event-log.js';
import { fullFlag, fullSegment, type TestFlag, type TestSegment } from './flags.js';

/** What a test flag server received on one request. */
export interface ReceivedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: unknown;
  /** When it arrived (epoch milliseconds). */
  receivedAt: number;
  /** The status answered; `undefined` while held, or when the connection was dropped without an answer. */
  status?: number;
}

/** A usage report as received on `POST /api/client/metrics`. */
export interface ReceivedMetrics {
  appName: string;
  instanceId: string;
  bucket: { start: string; stop: string; toggles: Record<string, { yes: number; no: number; variants?: Record<string, number> }> };
  [key: string]: unknown;
}

/** A fault the server answers `/api/client/*` with until cleared. */
export interface TestFault {
  /** Answer this status (with a JSON error body). */
  status?: number;
  /** Extra headers on a faulty status answer, e.g. `{ 'retry-after': '2' }` with a 429 or 503. */
  headers?: Record<string, string>;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Answer 200 with this raw body (malformed JSON, a wrong shape...). */
  rawBody?: string;
  /** Which routes: features fetches, usage reports (and registrations), or both. @default 'all' */
  routes?: 'features' | 'metrics' | 'all';
  /**
   * Answer 200 as usual, but cut the body after this many bytes (the `Content-Length` header still
   * announces the whole body) and drop the connection: a truncated answer.
   */
  truncateAt?: number;
  /**
   * Hold the request without answering until the fault is changed or cleared (held requests are
   * then handled under the new fault, or normally) or the server closes: a hanging upstream.
   */
  hang?: boolean;
  /** Drop the connection without answering (the client sees a reset). */
  reset?: boolean;
  /** Send the status and headers at once, and the body only after this many milliseconds. */
  bodyDelayMs?: number;
  /**
   * Apply the fault only to every n-th matching request since it was set (2: the 2nd, 4th, ...),
   * so the upstream flaps between failing and answering. @default 1 (every request)
   */
  every?: number;
  /** Apply the fault only to the first n matching requests since it was set, then answer normally. */
  times?: number;
}

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
export interface TestFlagServer {
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
  /** Current flags (copies), in full as served. */
  features(): FeatureDefinition[];
  /** Replaces all flags. */
  setFeatures(features: TestFlag[]): void;
  /** Adds or replaces one flag. */
  upsertFeature(feature: TestFlag): void;
  /** Removes (archives) one flag. */
  removeFeature(name: string): void;
  /** Turns one flag on or off. */
  setEnabled(name: string, enabled: boolean): void;
  /** Replaces all segments. */
  setSegments(segments: TestSegment[]): void;
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

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(text === '' ? undefined : JSON.parse(text));
      } catch {
        resolve(text);
      }
    });
  });
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(text);
}

const clone = <T>(value: T): T => structuredClone(value);

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
  const environment = options.environment ?? 'development';
  const events = createAdminEventLog({ adminTokens, clientTokens: tokens });
  const record = (type: string, feature: FeatureDefinition, preData: FeatureDefinition | null, withEnvironment = false): void => {
    events.record({
      type,
      featureName: feature.name,
      project: feature.project ?? 'default',
      environment: withEnvironment ? environment : null,
      data: type === 'feature-archived' ? null : clone(feature),
      preData: preData ? clone(preData) : null,
      createdBy: 'test-flag-server',
    });
  };
  /** Records what changed between two versions of one flag. */
  const recordChange = (before: FeatureDefinition | undefined, after: FeatureDefinition): void => {
    if (!before) {
      record('feature-created', after, null);
      return;
    }
    if (before.enabled !== after.enabled) {
      record(after.enabled ? 'feature-environment-enabled' : 'feature-environment-disabled', after, null, true);
      if (JSON.stringify({ ...before, enabled: after.enabled }) === JSON.stringify(after)) return;
    }
    record('feature-updated', after, before);
  };
  let features = new Map<string, FeatureDefinition>((options.features ?? []).map((f) => [f.name, clone(fullFlag(f))]));
  for (const feature of features.values()) record('feature-created', feature, null);
  let segments = clone((options.segments ?? []).map(fullSegment));
  let fault: TestFault | undefined;
  let revision = 0;
  const requests: ReceivedRequest[] = [];
  const metrics: ReceivedMetrics[] = [];
  const registrations: Array<Record<string, unknown>> = [];
  const waiters = new Set<{ predicate: (m: ReceivedMetrics) => boolean; resolve: (m: ReceivedMetrics) => void }>();
  const changed = (): void => {
    revision += 1;
  };

  const featuresAnswer = (query: URLSearchParams): { body: string; etag: string } => {
    const project = query.get('project');
    const prefix = query.get('namePrefix');
    const tags = query.getAll('tag').map((t) => t.split(':'));
    const list = [...features.values()].filter(
      (f) =>
        (!project || f.project === project) &&
        (!prefix || f.name.startsWith(prefix)) &&
        (tags.length === 0 ||
          tags.some(([n, v]) => ((f as { tags?: Array<{ type: string; value: string }> }).tags ?? []).some((t) => t.type === n && t.value === v))),
    );
    const body = JSON.stringify({ version: 2, features: list, segments, query: Object.fromEntries(query) });
    return { body, etag: `"${createHash('sha1').update(body).digest('hex').slice(0, 16)}:${revision}"` };
  };

  type Route = 'features' | 'metrics' | 'register';
  /** Matching requests seen since the fault was set (for `every` and `times`). */
  let faultHits = 0;
  /** Requests held by a `hang` fault: released (true) on the next setFault, dropped (false) on close. */
  const held = new Set<(release: boolean) => void>();
  let fetchesNow = 0;
  let fetchesMax = 0;

  const faultFor = (route: Route, count: boolean): TestFault | undefined => {
    const current = fault;
    if (!current) return undefined;
    const scope = current.routes ?? 'all';
    if (scope !== 'all' && scope !== (route === 'features' ? 'features' : 'metrics')) return undefined;
    if (count) {
      faultHits += 1;
      if (current.times !== undefined && faultHits > current.times) return undefined;
      if (current.every !== undefined && current.every > 1 && faultHits % current.every !== 0) return undefined;
    }
    return current;
  };

  /** Writes an answer, honouring the body faults (`truncateAt`, `bodyDelayMs`). */
  const deliver = async (
    res: ServerResponse,
    received: ReceivedRequest,
    status: number,
    body: string,
    headers: Record<string, string>,
    active: TestFault | undefined,
  ): Promise<void> => {
    const bytes = Buffer.from(body, 'utf8');
    received.status = status;
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(bytes.length), ...headers });
    if (active?.bodyDelayMs) {
      res.flushHeaders();
      await new Promise((r) => setTimeout(r, active.bodyDelayMs));
    }
    if (active?.truncateAt !== undefined && active.truncateAt < bytes.length) {
      res.write(bytes.subarray(0, active.truncateAt), () => res.destroy());
      return;
    }
    res.end(bytes);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (events.handle(req, res)) return;
    const url = new URL(req.url ?? '/', 'http://localhost');
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    const received: ReceivedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body,
      receivedAt: Date.now(),
    };
    requests.push(received);
    const path = url.pathname.replace(/\/+$/, '');
    const route: Route | undefined =
      path === '/api/client/features' ? 'features' : path === '/api/client/metrics' ? 'metrics' : path === '/api/client/register' ? 'register' : undefined;
    const reply = (status: number, value: unknown, headers?: Record<string, string>): void => {
      received.status = status;
      send(res, status, value, headers);
    };
    if (!route) return reply(404, { message: 'Not found' });
    if (!tokens.includes(String(req.headers.authorization ?? ''))) return reply(401, { message: 'You must log in to use Unleash.' });
    if (route === 'features') {
      fetchesNow += 1;
      fetchesMax = Math.max(fetchesMax, fetchesNow);
      res.on('close', () => {
        fetchesNow -= 1;
      });
    }
    let active = faultFor(route, true);
    while (active?.hang) {
      const released = await new Promise<boolean>((resolve) => held.add(resolve));
      if (!released) return;
      active = faultFor(route, false);
    }
    if (active?.reset) {
      req.socket.destroy();
      return;
    }
    if (active?.delayMs) await new Promise((r) => setTimeout(r, active.delayMs));
    if (active?.status) return reply(active.status, { message: `fault ${active.status}` }, active.headers);
    if (active?.rawBody !== undefined) return deliver(res, received, 200, active.rawBody, {}, active);
    if (route === 'features' && req.method === 'GET') {
      const answer = featuresAnswer(url.searchParams);
      if (req.headers['if-none-match'] === answer.etag) {
        received.status = 304;
        res.writeHead(304, { etag: answer.etag });
        res.end();
        return;
      }
      return deliver(res, received, 200, answer.body, { etag: answer.etag }, active);
    }
    if (route === 'register' && req.method === 'POST') {
      registrations.push(body as Record<string, unknown>);
      return deliver(res, received, 202, '', {}, active);
    }
    if (route === 'metrics' && req.method === 'POST') {
      const report = body as ReceivedMetrics;
      // A report whose answer is cut or delayed has still been received (and is counted).
      metrics.push(report);
      for (const w of [...waiters]) {
        if (w.predicate(report)) {
          waiters.delete(w);
          w.resolve(report);
        }
      }
      return deliver(res, received, 202, '', {}, active);
    }
    return reply(405, { message: 'Method not allowed' });
  };

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
    features: () => [...features.values()].map(clone),
    setFeatures(list) {
      const next = new Map(list.map((f) => [f.name, clone(fullFlag(f))]));
      for (const [name, before] of features) if (!next.has(name)) record('feature-archived', before, before);
      for (const [name, after] of next) recordChange(features.get(name), after);
      features = next;
      changed();
    },
    upsertFeature(definition) {
      const feature = clone(fullFlag(definition));
      recordChange(features.get(feature.name), feature);
      features.set(feature.name, feature);
      changed();
    },
    removeFeature(name) {
      const before = features.get(name);
      if (!before) return;
      record('feature-archived', before, before);
      features.delete(name);
      changed();
    },
    setEnabled(name, enabled) {
      const feature = features.get(name);
      if (!feature) throw new Error(`No flag named ${name}`);
      recordChange(feature, { ...feature, enabled });
      features.set(name, { ...feature, enabled });
      changed();
    },
    setSegments(list) {
      segments = clone(list.map(fullSegment));
      changed();
    },
    setFault(next) {
      fault = next;
      faultHits = 0;
      for (const release of [...held]) {
        held.delete(release);
        release(true);
      }
    },
    requests,
    fetchConcurrency: () => ({ current: fetchesNow, max: fetchesMax }),
    metrics,
    registrations,
    countsFor(name) {
      const total = { yes: 0, no: 0, variants: {} as Record<string, number> };
      for (const report of metrics) {
        const counts = report.bucket?.toggles?.[name];
        if (!counts) continue;
        total.yes += counts.yes;
        total.no += counts.no;
        for (const [v, n] of Object.entries(counts.variants ?? {})) total.variants[v] = (total.variants[v] ?? 0) + n;
      }
      return total;
    },
    waitForMetrics(predicate = () => true, timeoutMs = 10_000) {
      const already = metrics.find(predicate);
      if (already) return Promise.resolve(already);
      return new Promise((resolve, reject) => {
        const waiter = { predicate, resolve };
        waiters.add(waiter);
        setTimeout(() => {
          if (waiters.delete(waiter)) reject(new Error(`No matching usage report within ${timeoutMs} ms`));
        }, timeoutMs).unref();
      });
    },
    close() {
      for (const release of [...held]) {
        held.delete(release);
        release(false);
      }
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
