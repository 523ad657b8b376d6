/**
 * The Unleash frontend API (`/api/frontend…` and Edge's alias `/api/proxy…`): the same answers,
 * bytes, ETags, answer cache and CORS as `/proxy`; Edge's bare-context POST; the single-flag
 * lookup (200 with `enabled: false` when off, 404 when unknown); reports answered 202; and, as
 * Edge answers them and unlike `/proxy`, POST polls answered 304.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CLIENT_KEY, SERVER_TOKEN, evaluationCount, eventually, feature, launchAt, postJson, startHarness, type Harness } from '../support/harness.js';

const users12 = feature('users-1-2', { strategies: [{ name: 'userWithId', parameters: { userIds: '1,2' }, constraints: [] }] as never });
const colors = feature('colors', {
  impressionData: true,
  variants: [{ name: 'red', weight: 1000, stickiness: 'default', payload: { type: 'string', value: '#f00' } }] as never,
});
const FEATURES = [feature('everyone'), feature('off', { enabled: false }), users12, colors];
const now = () => new Date().toISOString();
const report = (toggles: Record<string, unknown>) => ({ appName: 'web', instanceId: 'browser', bucket: { start: now(), stop: now(), toggles } });
const cacheCount = async (harness: Harness, result: string) =>
  Number(new RegExp(`^flag_proxy_answer_cache_total\\{result="${result}"\\} (\\d+)`, 'm').exec(await harness.proxy.metrics())?.[1] ?? 0);

describe.each(['/api/frontend', '/api/proxy'])('%s', (prefix) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ features: FEATURES, options: { metricsInterval: 100, expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } } });
  });
  afterAll(() => h.close());
  const withKey = { headers: { authorization: CLIENT_KEY } };

  it('answers GET with the very bytes and ETag of /proxy for the same context, from the same cache entry', async () => {
    const query = `?userId=1&sessionId=s-${prefix.length}`;
    // Asked three times, the answer is kept (see test/contract/answer-cache.test.ts).
    await h.raw(`/proxy${query}`, withKey);
    await h.raw(`/proxy${query}`, withKey);
    const viaProxy = await h.raw(`/proxy${query}`, withKey);
    const hits = await cacheCount(h, 'hit');
    const viaFrontend = await h.raw(`${prefix}${query}`, withKey);
    expect(viaFrontend.status).toBe(200);
    expect(viaFrontend.body).toBe(viaProxy.body);
    expect(viaFrontend.headers.etag).toBe(viaProxy.headers.etag);
    expect(viaFrontend.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(viaFrontend.headers['cache-control']).toBe('public, max-age=2');
    expect(await cacheCount(h, 'hit')).toBe(hits + 1);
    expect(JSON.parse(viaFrontend.body).toggles.map((t: { name: string }) => t.name)).toEqual(['everyone', 'users-1-2', 'colors']);
  });

  it("answers 304 to a matching If-None-Match, also to /proxy's ETag", async () => {
    const first = await h.raw(`/proxy?userId=2`, withKey);
    const res = await h.raw(`${prefix}?userId=2`, { headers: { authorization: CLIENT_KEY, 'if-none-match': String(first.headers.etag) } });
    expect(res.status).toBe(304);
    expect(res.body).toBe('');
    expect(res.headers.etag).toBe(first.headers.etag);
  });

  it('takes a POST body as { context } and as a bare context (Edge), with the same answer as GET', async () => {
    const get = await (await h.request(`${prefix}?userId=1&sessionId=x`)).text();
    const wrapped = await h.request(prefix, postJson({ context: { userId: '1', sessionId: 'x' } }));
    const bare = await h.request(prefix, postJson({ userId: 1, sessionId: 'x' }));
    expect(wrapped.status).toBe(200);
    expect(bare.status).toBe(200);
    expect(await wrapped.text()).toBe(get);
    expect(await bare.text()).toBe(get);
    // A bare context's custom fields are properties, as in a query string.
    const custom = await h.request(prefix, postJson({ userId: '3', properties: { plan: 'pro' } }));
    expect((await custom.json()).toggles.map((t: { name: string }) => t.name)).toEqual(['everyone', 'colors']);
  });

  it('validates a bare context as the body (400 naming /body/...)', async () => {
    const res = await h.request(prefix, postJson({ userId: 'u', properties: { nested: { no: 1 } } }));
    expect(res.status).toBe(400);
    expect((await res.json()).validation[0].instancePath).toBe('/body/properties/nested');
  });

  it('still takes a toggles list, answering one result per name', async () => {
    const res = await h.request(prefix, postJson({ toggles: ['off', 'nope'] }));
    expect((await res.json()).toggles.map((t: { name: string; enabled: boolean }) => [t.name, t.enabled])).toEqual([
      ['off', false],
      ['nope', false],
    ]);
  });

  it('answers 401 without a client key, and to a server-side token', async () => {
    expect((await h.request(prefix, { key: null })).status).toBe(401);
    expect((await h.request(prefix, { key: SERVER_TOKEN })).status).toBe(401);
    expect((await h.request(`${prefix}/features/everyone`, { key: 'wrong' })).status).toBe(401);
  });

  it('answers /all with 501 naming its own path when enableAllEndpoint is off (after the key check)', async () => {
    expect((await h.request(`${prefix}/all`, { key: null })).status).toBe(401);
    const res = await h.request(`${prefix}/all`);
    expect(res.status).toBe(501);
    const message = await res.text();
    expect(message).toContain(`The ${prefix}/all endpoint is disabled`);
    expect(message).toContain('ENABLE_ALL_ENDPOINT');
  });

  it('puts the CORS headers of /proxy on answers', async () => {
    const res = await h.raw(prefix, { headers: { authorization: CLIENT_KEY, origin: 'https://app.example' } });
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toBe('ETag');
    const preflight = await h.raw(prefix, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,if-none-match' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-headers']).toBe('authorization,if-none-match');
  });

  describe(`${prefix}/features/:name`, () => {
    it('answers one flag as an object for the context', async () => {
      const res = await h.request(`${prefix}/features/colors?userId=5`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(await res.json()).toEqual({
        name: 'colors',
        enabled: true,
        variant: { name: 'red', enabled: true, payload: { type: 'string', value: '#f00' }, feature_enabled: true, featureEnabled: true },
        impressionData: true,
      });
    });

    it('answers 200 with enabled: false when the flag is off for that context, on GET and POST', async () => {
      const off = await h.request(`${prefix}/features/users-1-2?userId=9`);
      expect(off.status).toBe(200);
      expect(await off.json()).toMatchObject({ name: 'users-1-2', enabled: false, variant: { name: 'disabled', enabled: false } });
      const on = await h.request(`${prefix}/features/users-1-2`, postJson({ userId: '1' }));
      expect(await on.json()).toMatchObject({ name: 'users-1-2', enabled: true });
      const wrapped = await h.request(`${prefix}/features/users-1-2`, postJson({ context: { userId: '2' } }));
      expect(await wrapped.json()).toMatchObject({ name: 'users-1-2', enabled: true });
      expect(await (await h.request(`${prefix}/features/off`)).json()).toMatchObject({ name: 'off', enabled: false });
    });

    it('answers 404 for a flag the proxy does not hold (names are case-sensitive)', async () => {
      const res = await h.request(`${prefix}/features/no-such-flag`);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: 'No flag named "no-such-flag"' });
      expect((await h.request(`${prefix}/features/EVERYONE`)).status).toBe(404);
    });

    it('answers 304 to a matching If-None-Match', async () => {
      const first = await h.raw(`${prefix}/features/everyone?userId=1`, withKey);
      const again = await h.raw(`${prefix}/features/everyone?userId=1`, { headers: { authorization: CLIENT_KEY, 'if-none-match': String(first.headers.etag) } });
      expect(again.status).toBe(304);
    });
  });

  it('answers usage reports and registrations 202, and forwards the counts upstream', async () => {
    // A name nothing else here evaluates (unknown names are reported too, within their own budget).
    const name = `reported-only${prefix.replaceAll('/', '-')}`;
    const before = h.upstream.countsFor(name).yes;
    const metrics = await h.request(`${prefix}/client/metrics`, postJson(report({ [name]: { yes: 4, no: 0 } })));
    expect(metrics.status).toBe(202);
    expect(await metrics.text()).toBe('');
    expect((await h.request(`${prefix}/all/client/metrics`, postJson(report({ [name]: { yes: 1, no: 0 } })))).status).toBe(202);
    await eventually(() => expect(h.upstream.countsFor(name).yes).toBe(before + 5));
    const registration = { appName: 'web', instanceId: 'i', strategies: ['default'], started: now(), interval: 1000 };
    expect((await h.request(`${prefix}/client/register`, postJson(registration))).status).toBe(202);
    expect((await h.request(`${prefix}/client/metrics`, { ...postJson(report({})), key: null })).status).toBe(401);
  });
});

describe('/api/frontend/all with enableAllEndpoint', () => {
  it('answers every toggle, the bytes of /proxy/all', async () => {
    const h = await startHarness({ features: FEATURES, options: { enableAllEndpoint: true } });
    try {
      const viaProxy = await h.raw('/proxy/all?userId=9&sessionId=a', { headers: { authorization: CLIENT_KEY } });
      for (const path of ['/api/frontend/all', '/api/proxy/all']) {
        const res = await h.raw(`${path}?userId=9&sessionId=a`, { headers: { authorization: CLIENT_KEY } });
        expect(res.status).toBe(200);
        expect(res.body).toBe(viaProxy.body);
      }
      expect(JSON.parse(viaProxy.body).toggles.map((t: { name: string }) => t.name)).toEqual(['everyone', 'off', 'users-1-2', 'colors']);
    } finally {
      await h.close();
    }
  });
});

describe('/api/frontend before the first sync', () => {
  it('answers 503 with the not-ready sentence, as /proxy does', async () => {
    const h = await startHarness({ noWait: true, options: { refreshInterval: 60_000 } });
    h.upstream.setFault({ status: 500, routes: 'features' });
    try {
      const res = await h.request('/api/frontend');
      expect(res.status).toBe(503);
      expect(await res.text()).toContain('not ready');
    } finally {
      await h.close();
    }
  });
});

describe('POST polls on the frontend API (answered 304 as Edge does; never on /proxy)', () => {
  const OTHER_KEY = 'client-key-2-long-enough';
  const TAGGED = /^W\/"[0-9a-f]+-[A-Za-z0-9+/]{27}\.[A-Za-z0-9_-]{22}"$/;
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      features: FEATURES,
      options: { clientKeys: [CLIENT_KEY, OTHER_KEY], metricsInterval: 100, enableAllEndpoint: true, answerCacheBytes: 0 },
    });
  });
  afterAll(() => h.close());
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    h.raw(path, { method: 'POST', headers: { authorization: CLIENT_KEY, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const names = (body: string) => (JSON.parse(body) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name);
  const evaluations = (): Promise<number> => evaluationCount(h.proxy);

  it.each(['/api/frontend', '/api/proxy', '/api/frontend/all'])(
    '%s answers a POST poll that sends its ETag back 304, from its context alone (no evaluation, no answer cache)',
    async (path) => {
      for (const body of [{ context: { userId: '1', sessionId: `s${path}` } }, { userId: '1', sessionId: `bare${path}` }]) {
        const first = await post(path, body);
        expect(first.status).toBe(200);
        const etag = String(first.headers.etag);
        expect(etag).toMatch(TAGGED);
        const before = await evaluations();
        for (let i = 0; i < 3; i += 1) {
          const again = await post(path, body, { 'if-none-match': etag });
          expect(again.status).toBe(304);
          expect(again.body).toBe('');
          expect(again.headers.etag).toBe(etag);
          expect(again.headers['cache-control']).toBe('public, max-age=2');
        }
        expect(await evaluations()).toBe(before);
      }
    },
  );

  it("never answers another context, another key or a no-cache POST 304: 200 with that request's own body", async () => {
    const alice = await post('/api/frontend', { context: { userId: '1', sessionId: 'k' } });
    const etag = String(alice.headers.etag);
    const other = await post('/api/frontend', { context: { userId: '3', sessionId: 'k' } }, { 'if-none-match': etag });
    expect(other.status).toBe(200);
    expect(names(other.body)).toEqual(['everyone', 'colors']);
    expect(other.headers.etag).not.toBe(etag);
    const otherKey = await post('/api/frontend', { context: { userId: '1', sessionId: 'k' } }, { authorization: OTHER_KEY, 'if-none-match': etag });
    expect(otherKey.status).toBe(200);
    expect(otherKey.body).toBe(alice.body);
    expect(otherKey.headers.etag).not.toBe(etag);
    const noCache = await post('/api/frontend', { context: { userId: '1', sessionId: 'k' } }, { 'if-none-match': etag, 'cache-control': 'no-cache' });
    expect(noCache.status).toBe(200);
    expect(noCache.body).toBe(alice.body);
  });

  it('answers 200 with the new body once the flag set changes', async () => {
    const body = { context: { userId: '1', sessionId: 'change' } };
    const etag = String((await post('/api/frontend', body)).headers.etag);
    expect((await post('/api/frontend', body, { 'if-none-match': etag })).status).toBe(304);
    h.upstream.upsertFeature(feature('arrived'));
    await eventually(async () => {
      const res = await post('/api/frontend', body, { 'if-none-match': etag });
      expect(res.status).toBe(200);
      expect(names(res.body)).toEqual(['everyone', 'users-1-2', 'colors', 'arrived']);
    });
    h.upstream.removeFeature('arrived');
    // Fetched now: left to the refresh interval, the removal could land between two requests of
    // the next test, which compares two answers.
    await h.proxy.refresh();
    expect(names((await post('/api/frontend', body)).body)).toEqual(['everyone', 'users-1-2', 'colors']);
  });

  it('answers a POST poll whose answer holds until a date 304 from its context alone until then, and the new body from it on', async () => {
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    const at = Date.now() + 60_000;
    const own = await startHarness({ features: [...FEATURES, launchAt(at)], options: { answerCacheBytes: 0 } });
    try {
      const send = (headers: Record<string, string> = {}) =>
        own.raw('/api/frontend', { method: 'POST', headers: { authorization: CLIENT_KEY, 'content-type': 'application/json', ...headers }, body: JSON.stringify({ context: { userId: '3', sessionId: 'later' } }) });
      const first = await send();
      expect(names(first.body)).toEqual(['everyone', 'colors']);
      const etag = String(first.headers.etag);
      expect(etag).toMatch(TAGGED);
      const before = await evaluationCount(own.proxy);
      const again = await send({ 'if-none-match': etag });
      expect(again.status).toBe(304);
      expect(again.headers.etag).toBe(etag);
      expect(await evaluationCount(own.proxy)).toBe(before);
      vi.setSystemTime(at + 1);
      const after = await send({ 'if-none-match': etag });
      expect(after.status).toBe(200);
      expect(names(after.body)).toEqual(['everyone', 'colors', 'launch']);
    } finally {
      vi.useRealTimers();
      await own.close();
    }
  });

  it('keeps /proxy as its predecessor: a POST is never answered 304', async () => {
    const body = { context: { userId: '1', sessionId: 'predecessor' } };
    const first = await post('/proxy', body);
    const again = await post('/proxy', body, { 'if-none-match': String(first.headers.etag) });
    expect(again.status).toBe(200);
    expect(again.body).toBe(first.body);
  });
});

describe('POST polls that name toggles', () => {
  it('are answered 304 from the answer cache once it holds them, and every poll counts the named toggles upstream', async () => {
    const h = await startHarness({ features: FEATURES, options: { metricsInterval: 100 } });
    try {
      const body = JSON.stringify({ context: { userId: '1', sessionId: 'named' }, toggles: ['users-1-2', 'off'] });
      const headers = { authorization: CLIENT_KEY, 'content-type': 'application/json' };
      const before = { on: h.upstream.countsFor('users-1-2').yes, off: h.upstream.countsFor('off').no };
      const first = await h.raw('/api/frontend', { method: 'POST', headers, body });
      const etag = String(first.headers.etag);
      const statuses = [first.status];
      // The cache keeps an answer asked for twice (test/unit/answer-cache.test.ts).
      for (let i = 0; i < 3; i += 1) statuses.push((await h.raw('/api/frontend', { method: 'POST', headers: { ...headers, 'if-none-match': etag }, body })).status);
      expect(statuses).toEqual([200, 200, 304, 304]);
      await eventually(() => {
        expect(h.upstream.countsFor('users-1-2').yes).toBe(before.on + 4);
        expect(h.upstream.countsFor('off').no).toBe(before.off + 4);
      });
    } finally {
      await h.close();
    }
  });
});
