/**
 * What the SDK end-to-end tests share (test/e2e/sdk-*.test.ts in Node, test/browser/sdk-*.test.ts
 * in Chromium): the flags, the proxy options, a loopback server that logs every request it
 * answers, the flag server's own SDK as the oracle, and the checks every SDK run must pass. The
 * checks talk to the SDK through {@link SdkDriver}, so the same steps run against the SDK in Node
 * and in a page.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { InMemStorageProvider, Unleash } from 'unleash-client';
import type { FeatureDefinition, FlagProxy, FlagProxyOptions } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer, silentLogger } from 'flag-proxy/testing';
import { buildApp as buildExpress } from '../../examples/express/app.js';
import { buildApp as buildKoa } from '../../examples/koa/app.js';
import { eventually } from '../support/harness.js';

export { eventually };

/** The frontend key the proxies accept. */
export const CLIENT_KEY = 'sdk-e2e-client-key';
/** Where the proxy's routes are on every host: mounted, never at the root. */
export const MOUNT_PATH = '/api/flags';
/** How often the proxies poll the flag server (ms). */
export const PROXY_REFRESH_MS = 200;
/** How often the proxies report usage upstream (ms). */
export const PROXY_METRICS_MS = 300;

const on = { name: 'default', parameters: {}, constraints: [] };
const flag = (name: string, extra: Record<string, unknown> = {}): FeatureDefinition =>
  ({ name, enabled: true, impressionData: false, strategies: [on], variants: [], ...extra }) as FeatureDefinition;

/** The flag server's state at the start of every run. */
export const FLAGS: FeatureDefinition[] = [
  flag('sdk.everyone'),
  flag('sdk.off', { enabled: false }),
  flag('sdk.users-1-2', { strategies: [{ name: 'userWithId', parameters: { userIds: '1,2' }, constraints: [] }] }),
  flag('sdk.json-payload', {
    variants: [{ name: 'config', weight: 1000, stickiness: 'default', payload: { type: 'json', value: '{"limit":3,"theme":"dark"}' } }],
  }),
  flag('sdk.colors', {
    variants: [
      { name: 'red', weight: 500, stickiness: 'userId', payload: { type: 'string', value: '#c62828' } },
      { name: 'blue', weight: 500, stickiness: 'userId', payload: { type: 'string', value: '#1565c0' } },
    ],
  }),
  flag('sdk.flip'),
  // Touched only by the usage step, so their counts are exactly what that step did.
  flag('sdk.metered'),
  flag('sdk.metered-off', { enabled: false }),
  flag('sdk.metered-variant', { variants: [{ name: 'config', weight: 1000, stickiness: 'default', payload: { type: 'string', value: 'v' } }] }),
];

export { silentLogger };

/** An example app built from proxy options: one node listener, and the proxy it serves under /api/flags. */
export type ExampleHost = (options: FlagProxyOptions) => { listener: http.RequestListener; proxy: FlagProxy };

/** The examples whose pages and mounts the SDK tests use. */
export const EXAMPLES: Array<[string, ExampleHost]> = [
  [
    'Express',
    (options) => {
      const { app, proxy } = buildExpress(options);
      return { listener: app, proxy };
    },
  ],
  [
    'Koa',
    (options) => {
      const { app, proxy } = buildKoa(options);
      return { listener: app.callback(), proxy };
    },
  ],
];

/** A test flag server with {@link FLAGS}. */
export function startUpstream(): Promise<TestFlagServer> {
  return createTestFlagServer({ features: FLAGS });
}

/** Proxy options for `upstream`: fast polling and usage reports, no backup, no logs. */
export function proxyOptions(upstream: TestFlagServer, extra: Partial<FlagProxyOptions> = {}): FlagProxyOptions {
  return {
    flagUrl: upstream.url,
    flagApiToken: upstream.token,
    clientKeys: [CLIENT_KEY],
    storageProvider: createMemoryStorageProvider(),
    refreshInterval: PROXY_REFRESH_MS,
    metricsInterval: PROXY_METRICS_MS,
    logger: silentLogger,
    ...extra,
  };
}

/** One request a logged server answered. */
export interface LoggedRequest {
  /** Which listener took it (`page`, `proxy`, …). */
  server: string;
  method: string;
  /** Path without the query. */
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  /** Status and headers answered; set when the answer finished. */
  status?: number;
  responseHeaders?: http.OutgoingHttpHeaders;
}

/** A listener on loopback whose requests are logged. */
export interface LoggedServer {
  origin: string;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 (a free port) with `listener`, logging every request into `log`. */
export async function serveLogged(name: string, listener: http.RequestListener, log: LoggedRequest[]): Promise<LoggedServer> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const entry: LoggedRequest = { server: name, method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers };
    log.push(entry);
    res.on('finish', () => {
      entry.status = res.statusCode;
      entry.responseHeaders = res.getHeaders();
    });
    listener(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The flag server's own server-side SDK, pointed straight at it: what every answer must match. */
export async function startOracle(upstream: TestFlagServer): Promise<Unleash> {
  const oracle = new Unleash({
    url: upstream.url,
    appName: 'sdk-e2e-oracle',
    instanceId: 'sdk-e2e-oracle-1',
    customHeaders: { Authorization: upstream.token },
    refreshInterval: 60_000,
    disableMetrics: true,
    storageProvider: new InMemStorageProvider(),
    skipInstanceCountWarning: true,
  });
  await new Promise<void>((resolve, reject) => {
    oracle.once('synchronized', () => resolve());
    oracle.once('error', reject);
  });
  return oracle;
}

/** A variant as the frontend SDK returns it. */
export interface SdkVariant {
  name: string;
  enabled: boolean;
  feature_enabled?: boolean;
  payload?: { type: string; value: string };
}

/** One event the frontend SDK emitted, with its detail as plain JSON. */
export interface SdkEvent {
  name: string;
  at: number;
  detail: any;
}

/** One running frontend SDK (`unleash-proxy-client`), in Node or in a page. */
export interface SdkDriver {
  isEnabled(name: string): Promise<boolean>;
  getVariant(name: string): Promise<SdkVariant>;
  /** The names of the toggles it holds (`getAllToggles()`, which counts no usage). */
  enabledNames(): Promise<string[]>;
  updateContext(context: { userId?: string; properties?: Record<string, string> }): Promise<void>;
  events(): Promise<SdkEvent[]>;
  isReady(): Promise<boolean>;
  /** Stops the SDK (and closes its page). */
  close(): Promise<void>;
}

/** How each driver is started: against the proxy at `url`, with these settings. */
export interface DriverSettings {
  url: string;
  clientKey: string;
  userId?: string;
  /** Seconds between polls. */
  refresh: number;
  /** Seconds between usage reports (the first one too). */
  metrics: number;
}

/** Requests for the proxy's evaluation route (`GET <mount>/proxy`) in `log`. */
export const polls = (log: LoggedRequest[]): LoggedRequest[] => log.filter((r) => r.method === 'GET' && r.path === `${MOUNT_PATH}/proxy`);

const count = (events: SdkEvent[], name: string): number => events.filter((e) => e.name === name).length;

/** The steps every SDK run goes through, in order, on one driver. */
export const steps = {
  /** Ready, and every flag and variant (with its payload) as the oracle says, for userId 7. */
  async answers(sdk: SdkDriver, oracle: Unleash): Promise<void> {
    await eventually(async () => expect(await sdk.isReady()).toBe(true), 10_000);
    const context = { userId: '7' };
    const enabled: Record<string, boolean> = {};
    const expected: Record<string, boolean> = {};
    for (const { name } of FLAGS.filter((f) => !f.name.startsWith('sdk.metered'))) {
      enabled[name] = await sdk.isEnabled(name);
      expected[name] = oracle.isEnabled(name, context);
    }
    expect(enabled).toEqual(expected);
    expect(enabled).toMatchObject({ 'sdk.everyone': true, 'sdk.off': false, 'sdk.users-1-2': false, 'sdk.json-payload': true });
    for (const name of ['sdk.json-payload', 'sdk.colors', 'sdk.off']) {
      const { name: variant, enabled: on, payload } = await sdk.getVariant(name);
      const direct = oracle.getVariant(name, context);
      expect({ name: variant, enabled: on, payload }, name).toEqual({ name: direct.name, enabled: direct.enabled, payload: direct.payload });
    }
    // And straight from the definitions, where no hashing is involved.
    expect(await sdk.getVariant('sdk.json-payload')).toMatchObject({
      name: 'config',
      enabled: true,
      feature_enabled: true,
      payload: { type: 'json', value: '{"limit":3,"theme":"dark"}' },
    });
    expect(JSON.parse((await sdk.getVariant('sdk.json-payload')).payload!.value)).toEqual({ limit: 3, theme: 'dark' });
    expect(['#c62828', '#1565c0']).toContain((await sdk.getVariant('sdk.colors')).payload?.value);
    expect(await sdk.getVariant('sdk.off')).toMatchObject({ name: 'disabled', enabled: false, feature_enabled: false });
  },

  /** updateContext refetches with the new context, and the answer changes. */
  async updateContext(sdk: SdkDriver, log: LoggedRequest[]): Promise<void> {
    expect(await sdk.enabledNames()).not.toContain('sdk.users-1-2');
    const before = polls(log).filter((r) => r.query.get('userId') === '1').length;
    expect(before).toBe(0);
    await sdk.updateContext({ userId: '1' });
    expect(await sdk.enabledNames()).toContain('sdk.users-1-2');
    expect(await sdk.isEnabled('sdk.users-1-2')).toBe(true);
    const refetched = polls(log).filter((r) => r.query.get('userId') === '1');
    expect(refetched.length).toBeGreaterThanOrEqual(1);
    expect(refetched[0]!.status).toBe(200);
  },

  /**
   * The SDK's next polls carry `If-None-Match`, are answered 304, and change nothing: no update
   * event, no error, the same toggles.
   */
  async revalidates(sdk: SdkDriver, log: LoggedRequest[], refreshSeconds: number): Promise<void> {
    const names = (await sdk.enabledNames()).sort();
    const updates = count(await sdk.events(), 'update');
    const from = log.length;
    const revalidated = (): LoggedRequest[] => polls(log.slice(from)).filter((r) => r.status === 304);
    await eventually(() => expect(revalidated().length).toBeGreaterThanOrEqual(2), refreshSeconds * 3000 + 3000);
    const notModified = revalidated()[0]!;
    expect(notModified.headers['if-none-match']).toMatch(/^W\/"/);
    expect(notModified.responseHeaders?.etag).toBe(notModified.headers['if-none-match']);
    const events = await sdk.events();
    expect(count(events, 'update')).toBe(updates);
    expect(events.filter((e) => e.name === 'error')).toEqual([]);
    expect((await sdk.enabledNames()).sort()).toEqual(names);
    expect(await sdk.isEnabled('sdk.users-1-2')).toBe(true);
  },

  /** A flag turned off at the flag server is off in the SDK within one SDK poll (plus one proxy poll). */
  async upstreamChange(sdk: SdkDriver, upstream: TestFlagServer, log: LoggedRequest[], refreshSeconds: number): Promise<number> {
    expect(await sdk.enabledNames()).toContain('sdk.flip');
    const from = log.length;
    const started = Date.now();
    upstream.setEnabled('sdk.flip', false);
    // One SDK interval, one proxy interval, and a second of slack for a busy machine.
    const bound = refreshSeconds * 1000 + PROXY_REFRESH_MS + 1000;
    await eventually(async () => expect(await sdk.enabledNames()).not.toContain('sdk.flip'), bound + 2000);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThanOrEqual(bound);
    // The change came as a full answer with a new ETag, after the 304s.
    const fresh = polls(log.slice(from)).filter((r) => r.status === 200);
    expect(fresh.length).toBeGreaterThanOrEqual(1);
    expect(fresh[0]!.headers['if-none-match']).not.toBe(fresh[0]!.responseHeaders?.etag);
    return elapsed;
  },

  /** The SDK's usage report (POST <mount>/proxy/client/metrics) reaches the flag server with the exact counts. */
  async usage(sdk: SdkDriver, upstream: TestFlagServer, log: LoggedRequest[]): Promise<void> {
    for (let i = 0; i < 5; i += 1) expect(await sdk.isEnabled('sdk.metered')).toBe(true);
    for (let i = 0; i < 3; i += 1) expect(await sdk.isEnabled('sdk.metered-off')).toBe(false);
    for (let i = 0; i < 2; i += 1) expect((await sdk.getVariant('sdk.metered-variant')).name).toBe('config');
    const expected = {
      'sdk.metered': { yes: 5, no: 0, variants: {} },
      'sdk.metered-off': { yes: 0, no: 3, variants: {} },
      'sdk.metered-variant': { yes: 2, no: 0, variants: { config: 2 } },
    };
    const counts = () => Object.fromEntries(Object.keys(expected).map((name) => [name, upstream.countsFor(name)]));
    await eventually(() => expect(counts()).toEqual(expected), 10_000);
    const posts = log.filter((r) => r.method === 'POST' && r.path === `${MOUNT_PATH}/proxy/client/metrics`);
    expect(posts.length).toBeGreaterThanOrEqual(1);
    expect(posts.every((r) => r.status === 200)).toBe(true);
    // What the SDK says it sent (the calls may have straddled two of its reports).
    const sent = (await sdk.events()).filter((e) => e.name === 'sent');
    expect(sent.reduce((sum, e) => sum + (e.detail?.bucket?.toggles?.['sdk.metered']?.yes ?? 0), 0)).toBe(5);
    // Counted once: a later report (SDK and proxy) adds nothing.
    await new Promise((r) => setTimeout(r, 1000));
    expect(counts()).toEqual(expected);
  },

  /** A key the proxy does not know: the SDK's error event (HttpError 401) comes quickly, and it never becomes ready. */
  async wrongKey(sdk: SdkDriver, started: number, log: LoggedRequest[]): Promise<void> {
    await eventually(async () => expect((await sdk.events()).some((e) => e.name === 'error')).toBe(true), 5000);
    const error = (await sdk.events()).find((e) => e.name === 'error')!;
    expect(error.detail).toEqual({ type: 'HttpError', code: 401 });
    expect(error.at - started).toBeLessThan(5000);
    expect(await sdk.isReady()).toBe(false);
    expect(await sdk.enabledNames()).toEqual([]);
    expect(polls(log).some((r) => r.status === 401)).toBe(true);
  },
};
