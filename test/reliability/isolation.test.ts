/**
 * Issue 5, item 6: two proxies in one process, with different upstreams, keys and options, mounted
 * side by side in one host server. Neither ever sees the other's flags, usage counts, keys,
 * metrics or lifecycle. The shared default backup file is known-bugs BUG-13.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFlagProxy, Strategy, type FlagProxy } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { feature, fetchesOf, metricValue, quiet, send, settle, silentLogger, sleep, strictJson, usageReport, waitUntil } from './helpers.js';

class Throwing extends Strategy {
  constructor() {
    super('throwing');
  }
  override isEnabled(): boolean {
    throw new Error('only proxy A has this strategy');
  }
}

interface Side {
  upstream: TestFlagServer;
  proxy: FlagProxy;
  base: string;
  key: string;
  token: string;
  only: string;
}

let host: http.Server;
let a: Side;
let b: Side;

beforeAll(async () => {
  const upA = await createTestFlagServer({
    clientTokens: ['upstream-token-a'],
    features: [feature('shared-name'), feature('only-in-a'), feature('a-throws', { strategies: [{ name: 'throwing', parameters: {}, constraints: [] }] as never })],
  });
  const upB = await createTestFlagServer({
    clientTokens: ['upstream-token-b'],
    features: [feature('shared-name', { enabled: false }), feature('only-in-b')],
  });
  const proxyA = createFlagProxy({
    flagUrl: upA.url,
    flagApiToken: 'upstream-token-a',
    clientKeys: ['key-a'],
    proxyBasePath: '/a',
    flagAppName: 'app-a',
    environment: 'production',
    enableAllEndpoint: true,
    customStrategies: [new Throwing()],
    expServerSideSdkConfig: { tokens: ['server-token-a'] },
    storageProvider: createMemoryStorageProvider(),
    refreshInterval: 100,
    metricsInterval: 100,
    logger: silentLogger(),
  });
  const proxyB = createFlagProxy({
    flagUrl: upB.url,
    flagApiToken: 'upstream-token-b',
    clientKeys: ['key-b'],
    proxyBasePath: '/b',
    flagAppName: 'app-b',
    clientKeysHeaderName: 'x-key',
    expServerSideSdkConfig: { tokens: ['server-token-b'] },
    storageProvider: createMemoryStorageProvider(),
    refreshInterval: 150,
    metricsInterval: 100,
    logger: silentLogger(),
  });
  host = http.createServer((req, res) => proxyA(req, res, () => proxyB(req, res, () => res.writeHead(404).end('host 404'))));
  await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
  await Promise.all([proxyA.ready, proxyB.ready]);
  a = { upstream: upA, proxy: proxyA, base: `${origin}/a`, key: 'key-a', token: 'server-token-a', only: 'only-in-a' };
  b = { upstream: upB, proxy: proxyB, base: `${origin}/b`, key: 'key-b', token: 'server-token-b', only: 'only-in-b' };
});
afterAll(async () => {
  for (const side of [a, b]) {
    await settle(side.upstream).catch(() => undefined);
    await side.proxy.close();
  }
  host.closeAllConnections();
  host.close();
  await quiet(a.upstream);
  await quiet(b.upstream);
  await a.upstream.close();
  await b.upstream.close();
});

/** Calls a side's route with a key in that side's header. */
function call(side: Side, p: string, key: string, init: { method?: string; body?: unknown } = {}) {
  const header = side === a ? 'authorization' : 'x-key';
  return send(`${side.base}${p}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { [header]: key, 'content-type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
}
const enabledNames = async (side: Side, p = '/proxy') => strictJson((await call(side, p, side.key)).body ?? '').toggles.filter((t: { enabled: boolean }) => t.enabled).map((t: { name: string }) => t.name);

describe('two proxies in one process', () => {
  it('each answers only its own flags, on every evaluation route', async () => {
    expect(await enabledNames(a)).toEqual(['shared-name', 'only-in-a']);
    expect(await enabledNames(b)).toEqual(['only-in-b']);
    const lookup = { toggles: ['shared-name', 'only-in-a', 'only-in-b'] };
    const inA = strictJson((await call(a, '/proxy', a.key, { body: lookup })).body ?? '').toggles.map((t: { enabled: boolean }) => t.enabled);
    const inB = strictJson((await call(b, '/proxy', b.key, { body: lookup })).body ?? '').toggles.map((t: { enabled: boolean }) => t.enabled);
    expect(inA).toEqual([true, true, false]);
    expect(inB).toEqual([false, false, true]);
    const rawA = strictJson((await call(a, '/proxy/client/features', a.token)).body ?? '').features.map((f: { name: string }) => f.name);
    const rawB = strictJson((await call(b, '/proxy/client/features', b.token)).body ?? '').features.map((f: { name: string }) => f.name);
    expect(rawA).toEqual(['shared-name', 'only-in-a', 'a-throws']);
    expect(rawB).toEqual(['shared-name', 'only-in-b']);
  });

  it("refuses the other proxy's client keys and server-side tokens on every keyed route", async () => {
    const routes: Array<[string, unknown?]> = [
      ['/proxy'],
      ['/proxy', { toggles: ['only-in-a', 'only-in-b'] }],
      ['/proxy/all'],
      ['/proxy/client/features'],
      ['/proxy/client/metrics', usageReport({ 'only-in-a': { yes: 1, no: 0 } })],
      ['/proxy/client/register', { appName: 'x', strategies: [], started: 1, interval: 1 }],
    ];
    for (const [mine, theirs] of [
      [a, b],
      [b, a],
    ] as Array<[Side, Side]>) {
      for (const [route, body] of routes) {
        for (const key of [theirs.key, theirs.token]) {
          const res = await call(mine, route, key, { body });
          expect(res.status, `${mine.base}${route} with ${key}`).toBe(401);
          expect(res.body).not.toMatch(/only-in-|shared-name/);
        }
      }
    }
  });

  it('keeps their options apart: /proxy/all, the fixed environment, the key header', async () => {
    expect((await call(a, '/proxy/all', a.key)).status).toBe(200);
    expect((await call(b, '/proxy/all', b.key)).status).toBe(501);
    expect((await send(`${b.base}/proxy`, { headers: { authorization: b.key } })).status).toBe(401);
    expect((await send(`${a.base}/proxy`, { headers: { 'x-key': a.key } })).status).toBe(401);
  });

  it('reports usage only to its own upstream, under its own app name and token', async () => {
    await call(a, '/proxy', a.key, { body: { toggles: ['shared-name', 'shared-name', 'only-in-a'] } });
    await call(a, '/proxy/client/metrics', a.key, { body: usageReport({ 'sdk-a': { yes: 4, no: 0 } }) });
    await call(b, '/proxy', b.key, { body: { toggles: ['shared-name', 'only-in-b'] } });
    await call(b, '/proxy/all/client/metrics', b.key, { body: usageReport({ 'sdk-b': { yes: 0, no: 6 } }) });
    await waitUntil(() => a.upstream.countsFor('sdk-a').yes === 4 && b.upstream.countsFor('sdk-b').no === 6, 3000, 'both reports');
    const names = (side: Side) => new Set(side.upstream.metrics.flatMap((m) => Object.keys(m.bucket.toggles)));
    // The first test asked each proxy (with its own key) about all three names: those count too.
    expect(names(a)).toEqual(new Set(['shared-name', 'only-in-a', 'only-in-b', 'sdk-a']));
    expect(names(b)).toEqual(new Set(['shared-name', 'only-in-a', 'only-in-b', 'sdk-b']));
    expect(a.upstream.countsFor('shared-name')).toEqual({ yes: 3, no: 0, variants: {} });
    expect(b.upstream.countsFor('shared-name')).toEqual({ yes: 0, no: 2, variants: {} });
    expect(a.upstream.countsFor('sdk-b')).toEqual({ yes: 0, no: 0, variants: {} });
    expect(b.upstream.countsFor('sdk-a')).toEqual({ yes: 0, no: 0, variants: {} });
    expect(new Set(a.upstream.metrics.map((m) => m.appName))).toEqual(new Set(['app-a']));
    expect(new Set(b.upstream.metrics.map((m) => m.appName))).toEqual(new Set(['app-b']));
    expect(a.upstream.registrations.map((r) => r.appName)).toEqual(['app-a']);
    expect(b.upstream.registrations.map((r) => r.appName)).toEqual(['app-b']);
    // Each upstream only ever saw its own token.
    expect(new Set(a.upstream.requests.map((r) => r.headers.authorization))).toEqual(new Set(['upstream-token-a']));
    expect(new Set(b.upstream.requests.map((r) => r.headers.authorization))).toEqual(new Set(['upstream-token-b']));
  });

  it('keeps Prometheus metrics apart: a strategy error in A is not counted in B', async () => {
    const before = metricValue(await b.proxy.metrics(), 'flag_proxy_strategy_errors_total');
    await call(a, '/proxy', a.key);
    expect(metricValue(await a.proxy.metrics(), 'flag_proxy_strategy_errors_total')).toBeGreaterThan(0);
    expect(metricValue(await b.proxy.metrics(), 'flag_proxy_strategy_errors_total')).toBe(before);
    expect(before).toBe(0);
  });

  it("follows only its own upstream's changes and outages", async () => {
    a.upstream.upsertFeature(feature('new-in-a'));
    await waitUntil(async () => (await enabledNames(a)).includes('new-in-a'), 3000, 'A to see its change');
    expect(await enabledNames(b)).toEqual(['only-in-b']);
    b.upstream.setFault({ status: 404, routes: 'features' });
    a.upstream.upsertFeature(feature('newer-in-a'));
    await waitUntil(async () => (await enabledNames(a)).includes('newer-in-a'), 3000, 'A to follow while B is failing');
    expect((await call(b, '/proxy/health', b.key)).status).toBe(200);
    expect(await enabledNames(b)).toEqual(['only-in-b']);
    await settle(b.upstream);
  });

  it('closing one leaves the other serving and polling', async () => {
    await settle(a.upstream);
    await a.proxy.close();
    // A fetch sent just before close() (and aborted by it) may still reach the upstream.
    await sleep(100);
    const afterClose = fetchesOf(a.upstream).length;
    const before = fetchesOf(b.upstream).length;
    await sleep(500);
    expect(fetchesOf(a.upstream).length).toBe(afterClose);
    expect(fetchesOf(b.upstream).length).toBeGreaterThan(before);
    expect(await enabledNames(b)).toEqual(['only-in-b']);
    expect(await b.proxy.metrics()).toMatch(/^flag_proxy_up 1$/m);
  });
});
