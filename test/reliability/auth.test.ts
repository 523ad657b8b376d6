/**
 * Issue 5, item 3 (authentication): a table over every route, method and key-header variant.
 * Without a valid key for the route, no answer (status, headers or body) carries a toggle name,
 * a rule or a variant; a matching If-None-Match gets no 304; usage posted without a valid key is
 * not counted. With a valid key, the route answers 200. Keys are compared in constant time by
 * construction (sha256 digests + timingSafeEqual over every configured key, src/core/parts.ts);
 * that is not timed here, which would be flaky on shared CI.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FeatureDefinition } from 'flag-proxy';
import { closeAll, feature, send, startHarness, usageReport, type Harness, type Outcome } from './helpers.js';

const CLIENT_KEYS = ['ck-alpha-0000000001', 'ck-bravo-0000000002'];
const SERVER_TOKENS = ['sst-alpha-000000001', 'sst-bravo-000000002'];
const OTHER_PROXY_KEY = 'ck-of-another-proxy-03';

const FEATURES: FeatureDefinition[] = [
  feature('tgl-secret-launch'),
  feature('tgl-dark', { enabled: false }),
  feature('tgl-vip', {
    strategies: [{ name: 'userWithId', parameters: { userIds: 'rule-user-42' }, constraints: [] }] as never,
    variants: [{ name: 'rule-variant-gold', weight: 1000, stickiness: 'default', payload: { type: 'string', value: 'rule-payload-x' }, overrides: [] }] as never,
  }),
];
/** Anything that would show the flag set: names, strategies, rule values, variants, payloads. */
const LEAK = /tgl-|rule-|userWithId|strategies|constraints|payload|variant/;

type Who = 'client' | 'server' | 'public';
interface Route {
  method: string;
  path: string;
  /** Who may read it. */
  who: Who | 'client-or-server';
  body?: unknown;
  /** The status of an allowed request. @default 200 (204 for OPTIONS) */
  ok?: number;
  /** An allowed request counts one `yes` for tgl-secret-launch (a lookup by name). */
  countsUsage?: boolean;
}

const report = usageReport({ 'tgl-secret-launch': { yes: 1, no: 0 } });
const registration = { appName: 'sdk', instanceId: 'i', strategies: ['default'], started: new Date().toISOString(), interval: 1000 };

/** Every route, with the path spellings the matcher accepts. */
const ROUTES: Route[] = [
  { method: 'GET', path: '/proxy?userId=rule-user-42', who: 'client' },
  { method: 'HEAD', path: '/proxy', who: 'client' },
  { method: 'POST', path: '/proxy', who: 'client', body: { context: { userId: 'rule-user-42' }, toggles: ['tgl-secret-launch', 'tgl-vip'] } },
  { method: 'POST', path: '/proxy', who: 'client', body: {} },
  { method: 'GET', path: '/proxy/all', who: 'client' },
  { method: 'HEAD', path: '/proxy/all', who: 'client' },
  { method: 'POST', path: '/proxy/all', who: 'client', body: { context: { userId: 'rule-user-42' } } },
  { method: 'GET', path: '/PROXY/', who: 'client' },
  { method: 'GET', path: '//proxy//all/', who: 'client' },
  { method: 'GET', path: '/Proxy/All', who: 'client' },
  { method: 'POST', path: '/proxy/client/metrics', who: 'client-or-server', body: report },
  { method: 'POST', path: '/proxy/all/client/metrics', who: 'client-or-server', body: report },
  { method: 'POST', path: '/proxy/client/register', who: 'client-or-server', body: registration },
  { method: 'GET', path: '/proxy/client/features', who: 'server' },
  { method: 'HEAD', path: '/proxy/client/features', who: 'server' },
  { method: 'GET', path: '/PROXY/CLIENT/FEATURES/', who: 'server' },
  { method: 'GET', path: '/proxy/health', who: 'public' },
  { method: 'GET', path: '/proxy/internal-backstage/prometheus', who: 'public' },
  { method: 'OPTIONS', path: '/proxy', who: 'public' },
  // The frontend API (Edge's paths): client keys, as /proxy.
  ...['/api/frontend', '/api/proxy'].flatMap((prefix): Route[] => [
    { method: 'GET', path: `${prefix}?userId=rule-user-42`, who: 'client' },
    { method: 'HEAD', path: prefix, who: 'client' },
    { method: 'POST', path: prefix, who: 'client', body: { userId: 'rule-user-42' } },
    { method: 'POST', path: prefix, who: 'client', body: { context: { userId: 'rule-user-42' }, toggles: ['tgl-secret-launch'] } },
    { method: 'GET', path: `${prefix}/all`, who: 'client' },
    { method: 'GET', path: `${prefix}/features/tgl-secret-launch`, who: 'client', countsUsage: true },
    { method: 'POST', path: `${prefix}/features/tgl-secret-launch`, who: 'client', body: { userId: 'rule-user-42' }, countsUsage: true },
    { method: 'POST', path: `${prefix}/client/metrics`, who: 'client-or-server', body: report, ok: 202 },
    { method: 'POST', path: `${prefix}/all/client/metrics`, who: 'client-or-server', body: report, ok: 202 },
    { method: 'POST', path: `${prefix}/client/register`, who: 'client-or-server', body: registration, ok: 202 },
  ]),
  { method: 'GET', path: '/API/Frontend/', who: 'client' },
  // The client API: server-side tokens only.
  { method: 'GET', path: '/api/client/features', who: 'server' },
  { method: 'HEAD', path: '/api/client/features', who: 'server' },
  { method: 'GET', path: '/api/client/features?namePrefix=tgl-', who: 'server' },
  { method: 'GET', path: '/api/client/features/tgl-vip', who: 'server' },
  { method: 'POST', path: '/api/client/metrics', who: 'server', body: report, ok: 202 },
  { method: 'POST', path: '/api/client/register', who: 'server', body: registration, ok: 202 },
  // Edge's probes: no key.
  { method: 'GET', path: '/internal-backstage/health', who: 'public' },
  { method: 'GET', path: '/internal-backstage/ready', who: 'public' },
];

/** Ways a key can be presented. `as` is whose key it is if it counts at all. */
interface Variant {
  name: string;
  headers: Array<[string, string]>;
  as: Who | 'nobody';
}
const [CK, CK2] = CLIENT_KEYS as [string, string];
const [ST] = SERVER_TOKENS as [string];
const VARIANTS: Variant[] = [
  { name: 'no key header', headers: [], as: 'nobody' },
  { name: 'an empty key', headers: [['authorization', '']], as: 'nobody' },
  { name: 'a wrong key', headers: [['authorization', 'nope']], as: 'nobody' },
  { name: 'a Bearer-prefixed client key', headers: [['authorization', `Bearer ${CK}`]], as: 'nobody' },
  { name: 'a Bearer-prefixed server-side token', headers: [['authorization', `Bearer ${ST}`]], as: 'nobody' },
  { name: 'the client key in upper case', headers: [['authorization', CK.toUpperCase()]], as: 'nobody' },
  { name: 'a prefix of the client key', headers: [['authorization', CK.slice(0, -1)]], as: 'nobody' },
  { name: 'the client key plus one character', headers: [['authorization', `${CK}x`]], as: 'nobody' },
  { name: 'two client keys joined by a comma', headers: [['authorization', `${CK},${CK2}`]], as: 'nobody' },
  { name: 'the key of another proxy', headers: [['authorization', OTHER_PROXY_KEY]], as: 'nobody' },
  { name: 'the client key in another header', headers: [['x-api-key', CK]], as: 'nobody' },
  { name: 'the client key as a cookie', headers: [['cookie', `authorization=${CK}`]], as: 'nobody' },
  { name: 'a wrong key, then the client key (duplicated header: the first counts)', headers: [['authorization', 'nope'], ['authorization', CK]], as: 'nobody' },
  { name: 'the client key, then a wrong key (duplicated header: the first counts)', headers: [['authorization', CK], ['authorization', 'nope']], as: 'client' },
  { name: 'the client key', headers: [['authorization', CK]], as: 'client' },
  { name: 'the second client key', headers: [['authorization', CK2]], as: 'client' },
  { name: 'the client key under an upper-case header name', headers: [['AUTHORIZATION', CK]], as: 'client' },
  { name: 'the client key with surrounding spaces (trimmed by HTTP)', headers: [['authorization', `  ${CK}  `]], as: 'client' },
  { name: 'a server-side token', headers: [['authorization', ST]], as: 'server' },
  { name: 'the second server-side token', headers: [['authorization', SERVER_TOKENS[1] as string]], as: 'server' },
];

function allowed(route: Route, variant: Variant): boolean {
  if (route.who === 'public') return true;
  if (variant.as === 'nobody' || variant.as === 'public') return false;
  if (route.who === 'client-or-server') return true;
  return route.who === variant.as;
}

let h: Harness;
/** ETags of authorized answers, which must never be confirmed (304) to anyone else. */
const etags = new Map<string, string>();

beforeAll(async () => {
  h = await startHarness({
    features: FEATURES,
    options: {
      clientKeys: CLIENT_KEYS,
      enableAllEndpoint: true,
      expServerSideSdkConfig: { tokens: SERVER_TOKENS },
      metricsInterval: 0,
    },
  });
  for (const route of ROUTES) {
    if (route.method !== 'GET' || route.who === 'public') continue;
    const res = await call(route, route.who === 'server' ? [['authorization', ST]] : [['authorization', CK]]);
    expect(res.status).toBe(200);
    if (route.countsUsage === true) accepted.usagePosts += 1;
    if (res.headers?.etag) etags.set(route.path, String(res.headers.etag));
  }
});
afterAll(() => closeAll([h]));

function call(route: Route, headers: Array<[string, string]>, extra: Array<[string, string]> = []): Promise<Outcome> {
  const body = route.body === undefined ? undefined : JSON.stringify(route.body);
  const all: Array<[string, string]> = [...headers, ...extra];
  if (body !== undefined) all.push(['content-type', 'application/json']);
  return send(`${h.base}${route.path}`, { method: route.method, headers: all, body });
}

const accepted = { usagePosts: 0 };

describe('every route × every key variant', () => {
  const table = ROUTES.flatMap((route) => VARIANTS.map((variant) => ({ route, variant, label: `${route.method} ${route.path} with ${variant.name}` })));

  it.for(table)('$label', async ({ route, variant }) => {
    const ok = allowed(route, variant);
    const res = await call(route, variant.headers);
    expect(res.error).toBeUndefined();
    if (ok) {
      expect(res.status).toBe(route.ok ?? (route.method === 'OPTIONS' ? 204 : 200));
      // Usage that must reach the upstream: SDK reports (yes: 1) and lookups by name (enabled).
      const lookup = (route.body as { toggles?: string[] } | undefined)?.toggles?.includes('tgl-secret-launch') === true;
      if (route.path.includes('client/metrics') || lookup || route.countsUsage === true) accepted.usagePosts += 1;
    } else {
      expect(res.status).toBe(401);
      if (route.method !== 'HEAD') expect(res.body).toBe('Unauthorized');
      expect(res.headers?.['content-type']).toBe('text/plain; charset=utf-8');
    }
    if (!ok || route.who === 'public') {
      // No flag data in the status line's company: headers and body.
      expect(`${JSON.stringify(res.headers)}\n${res.body}`).not.toMatch(LEAK);
      // Nor a confirmation of an authorized answer's ETag.
      for (const tag of etags.values()) expect(res.headers?.etag).not.toBe(tag);
    }
  });

  it.for(table.filter(({ route, variant }) => route.method === 'GET' && etags.has(route.path) && !allowed(route, variant)))(
    '$label and the ETag of the authorized answer gets no 304',
    async ({ route, variant }) => {
      const res = await call(route, variant.headers, [['if-none-match', etags.get(route.path) as string]]);
      expect(res.status).toBe(401);
    },
  );

  it('counted usage only from reports and lookups that carried a valid key', async () => {
    expect(accepted.usagePosts).toBeGreaterThan(0);
    await h.proxy.close();
    expect(h.upstream.countsFor('tgl-secret-launch').yes).toBe(accepted.usagePosts);
  });
});

describe('methods without a route', () => {
  it.for(['PUT', 'DELETE', 'PATCH', 'TRACE', 'PROPFIND'])('%s /proxy answers 404 without flag data, with or without a key', async (method) => {
    for (const headers of [[], [['authorization', CK]]] as Array<Array<[string, string]>>) {
      const res = await send(`${h.base}/proxy`, { method, headers });
      expect(res.status).toBe(404);
      expect(`${JSON.stringify(res.headers)}\n${res.body}`).not.toMatch(LEAK);
    }
  });
});

describe('a custom key header (clientKeysHeaderName)', () => {
  it('accepts the key only in that header; duplicates of it are joined and refused', async () => {
    const custom = await startHarness({ features: FEATURES, options: { clientKeysHeaderName: 'X-Client-Key', clientKeys: [CK] } });
    try {
      const get = (headers: Array<[string, string]>) => send(`${custom.base}/proxy`, { headers });
      expect((await get([['x-client-key', CK]])).status).toBe(200);
      expect((await get([['X-CLIENT-KEY', CK]])).status).toBe(200);
      for (const headers of [[['authorization', CK]], [['x-client-key', CK], ['x-client-key', CK]], [['x-client-key', `Bearer ${CK}`]], []] as Array<Array<[string, string]>>) {
        const res = await get(headers);
        expect(res.status, JSON.stringify(headers)).toBe(401);
        expect(res.body).not.toMatch(LEAK);
      }
    } finally {
      await closeAll([custom]);
    }
  });
});
