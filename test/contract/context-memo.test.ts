/**
 * The context memo: a repeated GET skips parsing its query, by remembering the parsed context under
 * what identified it before parsing (route, caller address, raw query). These tests pin down each
 * thing that key must hold, so that a memo keyed too loosely fails here: two requests that would
 * build different contexts never share an answer, the gates (readiness, key, route) still run on
 * every request, a flag change still shows, and hooks that read the request turn the memo off.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createMultiEnvironmentProxy, type EvaluationContext } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, silentLogger } from 'flag-proxy/testing';
import { CLIENT_KEY, eventually, feature, rawRequest, startHarness, type Harness } from '../support/harness.js';

let h: Harness | undefined;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const names = (body: { toggles: Array<{ name: string }> }) => body.toggles.map((t) => t.name);
const get = async (path: string, headers: Record<string, string> = {}) => {
  const res = await h!.raw(path, { headers: { authorization: CLIENT_KEY, ...headers } });
  return { ...res, names: res.status === 200 ? names(JSON.parse(res.body)) : undefined };
};
const cacheCount = async (result: string) =>
  Number(new RegExp(`^flag_proxy_answer_cache_total\\{result="${result}"\\} (\\d+)`, 'm').exec(await h!.proxy.metrics())?.[1] ?? 0);

const fromOffice = feature('from-office', { strategies: [{ name: 'remoteAddress', parameters: { IPs: '10.0.0.1' }, constraints: [] }] as never });
const forUser7 = feature('for-user-7', { strategies: [{ name: 'userWithId', parameters: { userIds: '7' }, constraints: [] }] as never });
const offForAll = feature('off-for-all', { enabled: false });

describe('context memo', () => {
  it('serves a repeated poll from the memo and the cache: the second identical GET is a hit', async () => {
    h = await startHarness({ features: [forUser7, feature('always')] });
    const first = await get('/proxy?userId=7&properties[region]=eu');
    expect(first.names).toEqual(['for-user-7', 'always']);
    const again = await get('/proxy?userId=7&properties[region]=eu', { 'if-none-match': String(first.headers.etag) });
    expect(again.status).toBe(304);
    expect(again.headers.etag).toBe(first.headers.etag);
    expect(await cacheCount('hit')).toBe(1);
  });

  it('keeps callers at different addresses apart when the same query is sent (remoteAddress from the address)', async () => {
    h = await startHarness({ features: [fromOffice, feature('always')], options: { trustProxy: true } });
    const office = await get('/proxy?userId=1', { 'x-forwarded-for': '10.0.0.1' });
    expect(office.names).toEqual(['from-office', 'always']);
    const home = await get('/proxy?userId=1', { 'x-forwarded-for': '192.0.2.7' });
    expect(home.names).toEqual(['always']);
    // The office's ETag is not the home answer's: no 304 for it from another address.
    const homeWithOfficeTag = await get('/proxy?userId=1', { 'x-forwarded-for': '192.0.2.7', 'if-none-match': String(office.headers.etag) });
    expect(homeWithOfficeTag.status).toBe(200);
    expect(homeWithOfficeTag.names).toEqual(['always']);
    expect((await get('/proxy?userId=1', { 'x-forwarded-for': '10.0.0.1' })).names).toEqual(['from-office', 'always']);
  });

  it('lets a remoteAddress in the query win over the address, memo or not', async () => {
    h = await startHarness({ features: [fromOffice], options: { trustProxy: true } });
    for (const ip of ['192.0.2.7', '10.0.0.1', '192.0.2.8']) {
      expect((await get('/proxy?remoteAddress=10.0.0.1', { 'x-forwarded-for': ip })).names).toEqual(['from-office']);
    }
  });

  it('keeps /proxy and /proxy/all apart for the same query', async () => {
    h = await startHarness({ features: [feature('on'), offForAll], options: { enableAllEndpoint: true } });
    expect((await get('/proxy?userId=1')).names).toEqual(['on']);
    expect((await get('/proxy/all?userId=1')).names).toEqual(['on', 'off-for-all']);
    expect((await get('/proxy?userId=1')).names).toEqual(['on']);
    expect((await get('/proxy/all?userId=1')).names).toEqual(['on', 'off-for-all']);
  });

  it('still checks the key, readiness and the route on a remembered query', async () => {
    h = await startHarness({ features: [feature('on')] });
    expect((await get('/proxy?userId=1')).status).toBe(200);
    expect((await get('/proxy?userId=1', { authorization: 'wrong-key' })).status).toBe(401);
    expect((await h.raw('/proxy?userId=1')).status).toBe(401);
    expect((await get('/proxy/all?userId=1')).status).toBe(501);
    await h.proxy.close();
    expect((await get('/proxy?userId=1')).status).toBe(503);
  });

  it('answers 400 to an invalid query every time (invalid queries are never remembered)', async () => {
    h = await startHarness({ features: [feature('on')] });
    for (let i = 0; i < 3; i += 1) {
      const res = await get('/proxy?userId=1&userId=2');
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body).validation[0].instancePath).toBe('/query/userId');
    }
  });

  it('shows a flag change on a remembered query within one refresh interval, never 304 to the old ETag', async () => {
    h = await startHarness({ features: [forUser7], options: { refreshInterval: 100 } });
    const first = await get('/proxy?userId=7');
    const old = String(first.headers.etag);
    expect((await get('/proxy?userId=7', { 'if-none-match': old })).status).toBe(304);
    h.upstream.upsertFeature(feature('for-user-7', { enabled: false }));
    await eventually(async () => {
      const res = await get('/proxy?userId=7', { 'if-none-match': old });
      expect(res.status).toBe(200);
      expect(res.names).toEqual([]);
    }, 2000);
  });

  it('treats __proto__ and constructor as plain names, on the first request and when remembered', async () => {
    const tierIsGold = { contextName: 'tier', operator: 'IN', values: ['gold'], inverted: false };
    const gold = feature('gold', { strategies: [{ name: 'default', parameters: {}, constraints: [tierIsGold] }] as never });
    h = await startHarness({ features: [gold, feature('always')] });
    const path = '/proxy?__proto__[tier]=gold&constructor[prototype][tier]=gold&properties[__proto__]=x&properties[toString]=z&userId=1';
    const first = await get(path);
    expect(first.status).toBe(200);
    // No key reached a prototype: `tier` stays unset, for this context and for everyone else.
    expect(first.names).toEqual(['always']);
    for (let i = 0; i < 2; i += 1) expect((await get(path, { 'if-none-match': String(first.headers.etag) })).status).toBe(304);
    expect((await get(path)).body).toBe(first.body);
    expect(({} as Record<string, unknown>).tier).toBeUndefined();
    expect((await get('/proxy?userId=1&properties[tier]=gold')).names).toEqual(['gold', 'always']);
    expect((await get('/proxy?userId=1')).names).toEqual(['always']);
  });

  it('evaluates again, from the query, when the answer is not cacheable (no sessionId, session rollout)', async () => {
    const half = feature('half', {
      strategies: [{ name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'sessionId', groupId: 'g' }, constraints: [] }] as never,
    });
    h = await startHarness({ features: [half] });
    const seen = new Set<number>();
    for (let i = 0; i < 30; i += 1) seen.add((await get('/proxy?userId=1')).names!.length);
    expect(seen).toEqual(new Set([0, 1]));
    expect(await cacheCount('hit')).toBe(0);
  });

  it('is off with a context hook: the same query gets the context the hook gives each request', async () => {
    h = await startHarness({
      features: [forUser7],
      options: { context: (req) => ({ userId: String(req.headers['x-user'] ?? '') || undefined }) },
    });
    expect((await get('/proxy?sessionId=s', { 'x-user': '7' })).names).toEqual(['for-user-7']);
    expect((await get('/proxy?sessionId=s', { 'x-user': '8' })).names).toEqual([]);
    expect((await get('/proxy?sessionId=s', { 'x-user': '7' })).names).toEqual(['for-user-7']);
  });

  it('is off with enrichers: they run on every request', async () => {
    let calls = 0;
    const enrich = (context: EvaluationContext): EvaluationContext => {
      calls += 1;
      return { ...context, userId: calls % 2 === 1 ? '7' : '8' };
    };
    h = await startHarness({ features: [forUser7], options: { expCustomEnrichers: [enrich] } });
    expect((await get('/proxy?sessionId=s')).names).toEqual(['for-user-7']);
    expect((await get('/proxy?sessionId=s')).names).toEqual([]);
    expect(calls).toBe(2);
  });
});

describe('context memo in a multi-environment proxy', () => {
  it('never answers one environment with another’s flags for the same query, nor 304 with its ETag', async () => {
    const a = await createTestFlagServer({ clientTokens: ['token-a'], features: [feature('only-in-a')] });
    const b = await createTestFlagServer({ clientTokens: ['token-b'], features: [feature('only-in-b')] });
    const proxy = createMultiEnvironmentProxy({
      flagUrl: a.url,
      refreshInterval: 100,
      metricsInterval: 0,
      logger: silentLogger,
      storageProvider: createMemoryStorageProvider(),
      environments: [
        { name: 'alpha', flagApiToken: 'token-a', clientKeys: ['key-a'] },
        { name: 'beta', flagUrl: b.url, flagApiToken: 'token-b', clientKeys: ['key-b'] },
      ],
    });
    const server = http.createServer(proxy);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(
      () => a.close(),
      () => b.close(),
      () => proxy.close(),
      () => new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    );
    await proxy.ready;
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/proxy?userId=1&sessionId=s`;
    const alpha = await rawRequest(url, { headers: { authorization: 'key-a' } });
    expect(names(JSON.parse(alpha.body))).toEqual(['only-in-a']);
    const beta = await rawRequest(url, { headers: { authorization: 'key-b', 'if-none-match': String(alpha.headers.etag) } });
    expect(beta.status).toBe(200);
    expect(names(JSON.parse(beta.body))).toEqual(['only-in-b']);
    expect(names(JSON.parse((await rawRequest(url, { headers: { authorization: 'key-a' } })).body))).toEqual(['only-in-a']);
    expect((await rawRequest(url, { headers: { authorization: 'key-b', 'if-none-match': String(beta.headers.etag) } })).status).toBe(304);
    expect((await rawRequest(url, { headers: { authorization: 'key-c' } })).status).toBe(401);
  });
});
