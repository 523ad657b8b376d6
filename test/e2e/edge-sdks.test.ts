/**
 * The real clients of Unleash Edge, unchanged, against the proxy's Edge-compatible surfaces (one
 * standalone proxy, the benchmark's generated flag set):
 *
 * - `unleash-client` with `url: <proxy>/api/` and a server-side token: its `isEnabled` and
 *   `getVariant` agree with the proxy's own `/proxy` answers over many generated contexts, and
 *   its usage counts reach the flag server;
 * - `unleash-proxy-client` with `url: <proxy>/api/frontend` (GET and POST): the toggles of
 *   `/proxy` for the same context, and its usage reports reach the flag server;
 * - `@openfeature/unleash-web-provider` with `@openfeature/web-sdk`: the same flags;
 * - `@unleash/nextjs`: `getDefinitions` (with its 304 revalidation) and `evaluateFlags`, and its
 *   `flagsClient`'s browser-format usage report on `/api/client/metrics`;
 * - a second flag-proxy whose upstream is this one: the same answers, byte for byte, and its
 *   usage reaches the flag server through the first.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InMemStorageProvider, Unleash } from 'unleash-client';
import { EVENTS, InMemoryStorageProvider, UnleashClient } from 'unleash-proxy-client';
import { OpenFeature } from '@openfeature/web-sdk';
import { UnleashWebProvider } from '@openfeature/unleash-web-provider';
import { evaluateFlags, flagsClient, getDefinitions } from '@unleash/nextjs';
import { createFlagProxy, type FeatureDefinition, type FlagProxy } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { contextFor, generateFlags, queryFor, type BenchContext } from '../../bench/flags.js';
import { serveLogged, silentLogger, type LoggedRequest, type LoggedServer } from './sdk-fixtures.js';
import { eventually } from '../support/harness.js';
import { sample } from '../operations/support.js';

const CLIENT_KEY = 'edge-e2e-client-key';
const SERVER_TOKEN = 'edge-e2e-server-token';
const CONTEXTS = 150;
const { features: GENERATED, segments: SEGMENTS } = generateFlags(60);
const on = { name: 'default', parameters: {}, constraints: [] };
const metered = (name: string): FeatureDefinition => ({ name, enabled: true, project: 'default', strategies: [on], variants: [] }) as FeatureDefinition;
/** Flags only the usage steps touch, so their counts upstream are exactly what those steps did. */
const METERED = ['edge.metered-server', 'edge.metered-frontend', 'edge.metered-next', 'edge.metered-chained'];

interface ToggleResult {
  name: string;
  enabled: boolean;
  variant: { name: string; enabled: boolean; payload?: { type: string; value: string } };
  impressionData?: boolean;
}

let upstream: TestFlagServer;
let proxy: FlagProxy;
let server: LoggedServer;
const log: LoggedRequest[] = [];
let base: string;

/** `/proxy`'s answer for a context (GET, the query a browser SDK builds). */
async function proxyAnswer(context: BenchContext, all = false): Promise<ToggleResult[]> {
  const res = await fetch(`${base}/proxy${all ? '/all' : ''}?${queryFor(context)}`, { headers: { authorization: CLIENT_KEY } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { toggles: ToggleResult[] }).toggles;
}

beforeAll(async () => {
  upstream = await createTestFlagServer({ features: [...GENERATED, ...METERED.map(metered)], segments: SEGMENTS });
  proxy = createFlagProxy({
    flagUrl: upstream.url,
    flagApiToken: upstream.token,
    clientKeys: [CLIENT_KEY],
    expServerSideSdkConfig: { tokens: [SERVER_TOKEN] },
    enableAllEndpoint: true,
    storageProvider: createMemoryStorageProvider(),
    refreshInterval: 200,
    metricsInterval: 200,
    logger: silentLogger,
  });
  server = await serveLogged('proxy', proxy, log);
  base = server.origin;
  await proxy.ready;
});
afterAll(async () => {
  await proxy?.close();
  await server?.close();
  await upstream?.close();
});

describe('unleash-client (Node server SDK) with url <proxy>/api/', () => {
  let sdk: Unleash;
  beforeAll(async () => {
    sdk = new Unleash({
      url: `${base}/api/`,
      appName: 'edge-e2e-server',
      instanceId: 'edge-e2e-server-1',
      customHeaders: { Authorization: SERVER_TOKEN },
      refreshInterval: 60_000,
      metricsInterval: 100,
      storageProvider: new InMemStorageProvider(),
      skipInstanceCountWarning: true,
    });
    await new Promise<void>((resolve, reject) => {
      sdk.once('synchronized', () => resolve());
      sdk.once('error', reject);
    });
  });
  afterAll(() => sdk?.destroy());

  it(`agrees with /proxy/all on every flag and variant over ${CONTEXTS} generated contexts`, async () => {
    const mismatches: unknown[] = [];
    for (let n = 0; n < CONTEXTS; n += 1) {
      const context = contextFor(n * 7919);
      // The proxy fills remoteAddress from the caller (loopback); the SDK is given it.
      const sdkContext = { ...context, remoteAddress: '127.0.0.1' };
      for (const toggle of await proxyAnswer(context, true)) {
        if (METERED.includes(toggle.name)) continue;
        const enabled = sdk.isEnabled(toggle.name, sdkContext);
        const variant = sdk.getVariant(toggle.name, sdkContext);
        const expected = toggle.enabled
          ? { enabled: true, variant: { name: toggle.variant.name, enabled: toggle.variant.enabled, payload: toggle.variant.payload } }
          : { enabled: false, variant: { name: 'disabled', enabled: false, payload: undefined } };
        const actual = { enabled, variant: { name: variant.name, enabled: variant.enabled, payload: variant.payload } };
        if (JSON.stringify(actual) !== JSON.stringify(expected)) mismatches.push({ n, name: toggle.name, expected, actual });
      }
    }
    expect(mismatches).toEqual([]);
    // The SDK read the definitions from the client API, segments included.
    expect(log.some((r) => r.path === '/api/client/features' && r.status === 200)).toBe(true);
  });

  it('registers, and its usage counts reach the flag server', async () => {
    for (let i = 0; i < 7; i += 1) expect(sdk.isEnabled('edge.metered-server')).toBe(true);
    await eventually(() => expect(upstream.countsFor('edge.metered-server').yes).toBe(7), 10_000);
    const text = await proxy.metrics();
    expect(sample(text, 'flag_proxy_http_requests_total', { route: '/api/client/register', method: 'POST', status: '202' })).toBe(1);
    expect(sample(text, 'flag_proxy_http_requests_total', { route: '/api/client/metrics', method: 'POST', status: '202' })).toBeGreaterThanOrEqual(1);
    // Counted once: later reports add nothing.
    await new Promise((r) => setTimeout(r, 600));
    expect(upstream.countsFor('edge.metered-server').yes).toBe(7);
  });
});

describe('unleash-proxy-client (frontend SDK, Node) with url <proxy>/api/frontend', () => {
  const started: UnleashClient[] = [];
  afterAll(() => started.forEach((client) => client.stop()));
  /** A started client; `refreshInterval` in seconds (the SDK multiplies by 1000). */
  const start = async (usePOSTrequests: boolean, context: BenchContext, refreshInterval = 60): Promise<UnleashClient> => {
    const client = new UnleashClient({
      url: `${base}/api/frontend`,
      clientKey: CLIENT_KEY,
      appName: context.appName,
      environment: context.environment,
      refreshInterval,
      metricsInterval: 60,
      usePOSTrequests,
      storageProvider: new InMemoryStorageProvider(),
      context: { userId: context.userId, sessionId: context.sessionId, properties: context.properties },
    });
    started.push(client);
    const ready = new Promise<void>((resolve) => client.once('ready', () => resolve()));
    await client.start();
    await ready;
    return client;
  };

  it.each([
    ['GET', false],
    ['POST', true],
  ])('holds exactly the toggles /proxy answers for its context (%s)', async (_method, post) => {
    for (const n of [3, 41, 977]) {
      const context = contextFor(n);
      const client = await start(post, context);
      expect(client.getAllToggles()).toEqual(await proxyAnswer(context));
      client.stop();
    }
    expect(log.some((r) => r.path === '/api/frontend' && r.method === (post ? 'POST' : 'GET') && r.status === 200)).toBe(true);
  });

  it('polls by POST with its ETag and is answered 304, as by Edge: the same toggles, no update, no error', async () => {
    const context = contextFor(88);
    const from = log.length;
    const client = await start(true, context, 0.2);
    const toggles = client.getAllToggles();
    // Heard from the first answer on: its own arrival is an update.
    const events: string[] = [];
    for (const name of [EVENTS.UPDATE, EVENTS.ERROR]) client.on(name, () => events.push(name));
    expect(toggles).toEqual(await proxyAnswer(context));
    const posts = () => log.slice(from).filter((r) => r.path === '/api/frontend' && r.method === 'POST');
    await eventually(() => expect(posts().filter((r) => r.status === 304).length).toBeGreaterThanOrEqual(3), 5000);
    client.stop();
    const [first, ...polls] = posts();
    expect(first!.status).toBe(200);
    const etag = first!.responseHeaders?.etag;
    for (const poll of polls.filter((r) => r.status === 304)) {
      expect(poll.headers['if-none-match']).toBe(etag);
      expect(poll.responseHeaders?.etag).toBe(etag);
    }
    expect(events).toEqual([]);
    expect(client.getAllToggles()).toEqual(toggles);
  });

  it('sends usage reports that reach the flag server (202)', async () => {
    const client = await start(false, contextFor(5));
    for (let i = 0; i < 4; i += 1) client.isEnabled('edge.metered-frontend');
    await client.sendMetrics();
    await eventually(() => expect(upstream.countsFor('edge.metered-frontend').yes).toBe(4), 10_000);
    expect(log.some((r) => r.path === '/api/frontend/client/metrics' && r.status === 202)).toBe(true);
  });
});

describe('@openfeature/unleash-web-provider with @openfeature/web-sdk (Node)', () => {
  afterAll(() => OpenFeature.close());

  it('evaluates the flags /proxy answers for its context', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const context = contextFor(12);
    await OpenFeature.setProviderAndWait(
      new UnleashWebProvider({
        url: `${base}/api/frontend`,
        clientKey: CLIENT_KEY,
        appName: context.appName,
        refreshInterval: 60,
        disableMetrics: true,
        storageProvider: new InMemoryStorageProvider(),
        context: { userId: context.userId, sessionId: context.sessionId, properties: context.properties },
      }),
    );
    const client = OpenFeature.getClient();
    const expected = await proxyAnswer({ ...context, environment: 'default' });
    const enabled = new Set(expected.map((t) => t.name));
    for (const { name } of GENERATED) expect(client.getBooleanValue(name, false), name).toBe(enabled.has(name));
    const withPayload = expected.find((t) => t.variant.payload?.type === 'string');
    if (withPayload) {
      const details = client.getStringDetails(withPayload.name, 'none');
      expect(details.value).toBe(withPayload.variant.payload?.value);
      expect(details.variant).toBe(withPayload.variant.name);
    }
  });
});

describe('@unleash/nextjs against the proxy', () => {
  it('getDefinitions reads /api/client/features (revalidating with 304) and evaluateFlags gives the toggles /proxy answers', async () => {
    const config = { url: `${base}/api/client/features`, token: SERVER_TOKEN, appName: 'edge-e2e-next' };
    const definitions = await getDefinitions(config);
    expect(definitions.features.map((f) => f.name)).toEqual([...GENERATED, ...METERED.map(metered)].map((f) => f.name));
    expect(definitions.segments?.length).toBeGreaterThan(0);
    const again = await getDefinitions(config);
    expect(again.features.length).toBe(definitions.features.length);
    const fetches = log.filter((r) => r.path === '/api/client/features' && r.headers['unleash-sdk']?.toString().startsWith('unleash-nextjs-sdk'));
    expect(fetches.map((r) => r.status)).toEqual([200, 304]);
    for (const n of [8, 64, 1024]) {
      const context = contextFor(n);
      const { toggles } = evaluateFlags(definitions, { ...context, remoteAddress: '127.0.0.1' });
      const expected = await proxyAnswer(context);
      const shape = (list: Array<{ name: string; enabled: boolean; variant?: { name: string; enabled: boolean; payload?: unknown } }>) =>
        list.map((t) => ({ name: t.name, enabled: t.enabled, variant: { name: t.variant?.name, enabled: t.variant?.enabled, payload: t.variant?.payload } }));
      expect(shape(toggles)).toEqual(shape(expected));
    }
  });

  it("flagsClient's browser-format usage report on /api/client/metrics reaches the flag server", async () => {
    const definitions = await getDefinitions({ url: `${base}/api/client/features`, token: SERVER_TOKEN, appName: 'edge-e2e-next' });
    const { toggles } = evaluateFlags(definitions, { userId: '1' });
    const client = flagsClient(toggles, { url: `${base}/api`, clientKey: SERVER_TOKEN, appName: 'edge-e2e-next' });
    for (let i = 0; i < 3; i += 1) expect(client.isEnabled('edge.metered-next')).toBe(true);
    await client.sendMetrics();
    await eventually(() => expect(upstream.countsFor('edge.metered-next').yes).toBe(3), 10_000);
    const report = log.find((r) => r.path === '/api/client/metrics' && r.headers['unleash-appname'] === 'edge-e2e-next');
    expect(report?.status).toBe(202);
  });
});

describe('a second flag-proxy using this one as its upstream', () => {
  let inner: FlagProxy;
  let innerServer: http.Server;
  let innerBase: string;
  beforeAll(async () => {
    inner = createFlagProxy({
      flagUrl: `${base}/api/`,
      flagApiToken: SERVER_TOKEN,
      clientKeys: [CLIENT_KEY],
      enableAllEndpoint: true,
      storageProvider: createMemoryStorageProvider(),
      refreshInterval: 200,
      metricsInterval: 200,
      logger: silentLogger,
    });
    innerServer = http.createServer(inner);
    await new Promise<void>((resolve) => innerServer.listen(0, '127.0.0.1', resolve));
    innerBase = `http://127.0.0.1:${(innerServer.address() as AddressInfo).port}`;
    await inner.ready;
  });
  afterAll(async () => {
    await inner?.close();
    innerServer?.closeAllConnections();
    await new Promise<void>((resolve) => (innerServer ? innerServer.close(() => resolve()) : resolve()));
  });

  it('answers /proxy/all, /api/frontend and a toggles lookup byte for byte as the first one does', async () => {
    const names = GENERATED.slice(0, 20).map((f) => f.name);
    for (let n = 0; n < 40; n += 1) {
      const query = queryFor(contextFor(n * 104_729));
      for (const path of [`/proxy/all?${query}`, `/api/frontend?${query}`]) {
        const [outer, chained] = await Promise.all([base, innerBase].map((origin) => fetch(`${origin}${path}`, { headers: { authorization: CLIENT_KEY } }).then((r) => r.text())));
        expect(chained, path).toBe(outer);
      }
      const lookup = { method: 'POST', headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' }, body: JSON.stringify({ context: contextFor(n), toggles: names }) };
      const [outer, chained] = await Promise.all([base, innerBase].map((origin) => fetch(`${origin}/proxy`, lookup).then((r) => r.text())));
      expect(chained).toBe(outer);
    }
    // The second proxy polls the first with If-None-Match and is answered 304.
    await eventually(() => expect(log.some((r) => r.path === '/api/client/features' && r.status === 304 && r.headers['unleash-sdk']?.toString().startsWith('flag-proxy'))).toBe(true));
  });

  it("passes its usage on through the first one's /api/client/metrics to the flag server", async () => {
    const lookup = { method: 'POST', headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' }, body: JSON.stringify({ toggles: ['edge.metered-chained'] }) };
    for (let i = 0; i < 3; i += 1) await fetch(`${innerBase}/proxy`, lookup);
    await eventually(() => expect(upstream.countsFor('edge.metered-chained').yes).toBe(3), 10_000);
    expect(log.some((r) => r.path === '/api/client/register' && r.headers['unleash-sdk']?.toString().startsWith('flag-proxy') && r.status === 202)).toBe(true);
  });
});
