/**
 * Starts a real upstream (the test flag server) and a real proxy on a real socket, so tests assert
 * on what goes over the wire.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createFlagProxy, type FeatureDefinition, type FlagProxy, type FlagProxyOptions } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer, type TestSegment, silentLogger } from 'flag-proxy/testing';

export const CLIENT_KEY = 'client-key-1-long-enough';
export const SERVER_TOKEN = 'server-side-token-1';

/**
 * Where the proxy under test runs: standalone on node:http (the default), or mounted under
 * /api/flags in a host through an adapter (`FLAG_PROXY_TEST_MOUNT=express|koa|fastify|fetch`;
 * vitest.config.ts runs the contract suite once per adapter this way).
 */
export const MOUNT = (process.env.FLAG_PROXY_TEST_MOUNT ?? 'node') as 'node' | 'express' | 'koa' | 'fastify' | 'fetch';
/**
 * True when mounted in a host. Tests of standalone-only behaviour (the 404 page, OPTIONS on any
 * path, the masked 500 body) are skipped then: mounted, those paths and errors belong to the host.
 */
export const MOUNTED = MOUNT !== 'node';

export interface Harness {
  upstream: TestFlagServer;
  proxy: FlagProxy;
  /** `http://127.0.0.1:<port><basePath>` (no trailing slash). */
  base: string;
  request(path: string, init?: RequestInit & { key?: string | null }): Promise<TestResponse>;
  /** A plain node:http request: exactly the headers given (fetch adds its own to conditional requests). */
  raw(path: string, init?: RawInit): Promise<RawResponse>;
  close(): Promise<void>;
}

/** A fetch Response whose JSON is read loosely; the assertions check its shape. */
export type TestResponse = Omit<Response, 'json'> & { json(): Promise<any> };

export interface RawInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The header fields as they came, `[name, value, name, value, …]`, in wire order. */
  rawHeaders: string[];
  body: string;
}

export function rawRequest(url: string, init: RawInit = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? 'GET', headers: init.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

export interface HarnessOptions {
  features?: FeatureDefinition[];
  segments?: TestSegment[];
  options?: Partial<FlagProxyOptions>;
  /** Do not wait for the proxy to become ready. */
  noWait?: boolean;
  /** Reuse an upstream (not closed by the harness). */
  upstream?: TestFlagServer;
  /** Where to run the proxy, whatever `FLAG_PROXY_TEST_MOUNT` says (for tests that loop over mounts themselves). @default MOUNT */
  mount?: typeof MOUNT;
}

export function feature(name: string, overrides: Partial<FeatureDefinition> = {}): FeatureDefinition {
  return { name, enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [] }], variants: [], ...overrides } as FeatureDefinition;
}

/** A toggle on for everyone from `at` (epoch ms): a scheduled launch, whose answers hold until that instant. */
export function launchAt(at: number, name = 'launch'): FeatureDefinition {
  const constraints = [{ contextName: 'currentTime', operator: 'DATE_AFTER', value: new Date(at).toISOString(), inverted: false }];
  return feature(name, { strategies: [{ name: 'default', parameters: {}, constraints }] as never });
}

/** Toggles a proxy has evaluated (`flag_proxy_toggle_evaluations_total`): unchanged by an answer given without evaluating. */
export async function evaluationCount(proxy: Pick<FlagProxy, 'metrics'>): Promise<number> {
  return Number(/^flag_proxy_toggle_evaluations_total (\d+)/m.exec(await proxy.metrics())?.[1] ?? Number.NaN);
}

/** How a test proxy behaves unless a test says otherwise: fast polling, no usage reports, no logs. */
export const TEST_PROXY_DEFAULTS = { refreshInterval: 100, metricsInterval: 0, logger: silentLogger } as const satisfies Partial<FlagProxyOptions>;

/** Proxy options for `upstream`: the test client key, a memory backup of its own, and {@link TEST_PROXY_DEFAULTS}. */
export function testProxyOptions(upstream: TestFlagServer, extra: Partial<FlagProxyOptions> = {}): FlagProxyOptions {
  return {
    ...TEST_PROXY_DEFAULTS,
    flagUrl: upstream.url,
    flagApiToken: upstream.token,
    clientKeys: [CLIENT_KEY],
    storageProvider: createMemoryStorageProvider(),
    ...extra,
  };
}

export async function startHarness(settings: HarnessOptions = {}): Promise<Harness> {
  const upstream = settings.upstream ?? (await createTestFlagServer({ features: settings.features ?? [], segments: settings.segments }));
  const options = testProxyOptions(upstream, settings.options);
  const mount = settings.mount ?? MOUNT;
  const { proxy, base, closeServer } = mount === 'node' ? await startStandalone(options) : await startMounted(options, mount);
  if (!settings.noWait) await proxy.ready;
  return {
    upstream,
    proxy,
    base,
    request(path, init = {}) {
      const { key = CLIENT_KEY, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (key !== null && !headers.has(proxy.config.clientKeysHeaderName)) headers.set(proxy.config.clientKeysHeaderName, key);
      return fetch(`${base}${path}`, { ...rest, headers });
    },
    raw(path, init = {}) {
      return rawRequest(`${base}${path}`, init);
    },
    async close() {
      await proxy.close();
      await closeServer();
      if (!settings.upstream) await upstream.close();
    },
  };
}

interface Served {
  proxy: FlagProxy;
  base: string;
  closeServer(): Promise<void>;
}

/** The proxy as the whole node:http server. */
async function startStandalone(options: FlagProxyOptions): Promise<Served> {
  const proxy = createFlagProxy(options);
  const server = http.createServer(proxy);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    proxy,
    base: `http://127.0.0.1:${port}${proxy.config.basePath}`,
    closeServer: () => closeServer(server),
  };
}

/** Stops `server` and drops its keep-alive connections; resolves once it is closed. */
export function closeServer(server: http.Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** The proxy created by an adapter from the same options, mounted under /api/flags in that framework's host. */
async function startMounted(options: FlagProxyOptions, mount: Exclude<typeof MOUNT, 'node'>): Promise<Served> {
  // Imported only here, so standalone runs never load a framework.
  const { startHost, MOUNT_PATH } = await import('../adapters/hosts.js');
  const host = await startHost(mount, options);
  return { proxy: host.proxy, base: `http://127.0.0.1:${host.port}${MOUNT_PATH}${host.proxy.config.basePath}`, closeServer: () => host.close() };
}

/** POSTs JSON. */
export function postJson(body: unknown, headers: Record<string, string> = {}): RequestInit {
  return { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) };
}

/** Waits until `check` passes or `timeoutMs` elapses. */
export async function eventually(check: () => Promise<void> | void, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/**
 * Has the test flag server answer the same flags under a new ETag (as the flag server does when a
 * flag this key never sees changes: its ETag follows its revision), and resolves once the proxy
 * fetched that answer and adopted it (its next poll starts only then).
 */
export async function refetchSameFlags(h: Pick<Harness, 'upstream'>): Promise<void> {
  const answered = (): number => h.upstream.requests.filter((r) => r.path === '/api/client/features' && r.status === 200).length;
  const before = answered();
  const [first] = h.upstream.features();
  if (first === undefined) throw new Error('refetchSameFlags needs a flag set with a flag in it');
  h.upstream.upsertFeature(first);
  await eventually(() => {
    if (answered() !== before + 1) throw new Error(`the proxy has not fetched the same flags again (${answered()} answers, ${before} before)`);
  });
  const polled = h.upstream.requests.length;
  await eventually(() => {
    if (h.upstream.requests.length <= polled + 1) throw new Error('the proxy has not polled again since');
  });
}
