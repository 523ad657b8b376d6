/** COMPATIBILITY.md §1–§2 for the evaluation routes: `/proxy` and `/proxy/all`, GET and POST. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_KEY, SERVER_TOKEN, eventually, feature, postJson, startHarness, type Harness } from '../support/harness.js';

const variants = [
  { name: 'blue', weight: 1000, stickiness: 'default', payload: { type: 'json', value: '{"a":1}' }, overrides: [] },
];
const FEATURES = [
  feature('plain', { impressionData: true }),
  feature('with-variants', { variants: variants as never }),
  feature('off', { enabled: false, impressionData: false }),
  feature('no-impression-field'),
  feature('only-user-7', { strategies: [{ name: 'userWithId', parameters: { userIds: '7' }, constraints: [] }] as never }),
  feature('eu-only', {
    strategies: [
      { name: 'default', parameters: {}, constraints: [{ contextName: 'region', operator: 'IN', values: ['eu'], inverted: false }] },
    ] as never,
  }),
  feature('env-prod', {
    strategies: [{ name: 'default', parameters: {}, constraints: [{ contextName: 'environment', operator: 'IN', values: ['prod'] }] }] as never,
  }),
  feature('app-flag-proxy', {
    strategies: [{ name: 'default', parameters: {}, constraints: [{ contextName: 'appName', operator: 'IN', values: ['flag-proxy'] }] }] as never,
  }),
  feature('from-10-0-0-1', { strategies: [{ name: 'remoteAddress', parameters: { IPs: '10.0.0.1' }, constraints: [] }] as never }),
  feature('after-2030', {
    strategies: [
      { name: 'default', parameters: {}, constraints: [{ contextName: 'currentTime', operator: 'DATE_AFTER', value: '2030-01-01T00:00:00.000Z' }] },
    ] as never,
  }),
];
delete (FEATURES[3] as { impressionData?: boolean }).impressionData;

type Toggle = { name: string; enabled: boolean; variant: Record<string, unknown>; impressionData?: boolean };
const names = (body: { toggles: Toggle[] }) => body.toggles.map((t) => t.name);

describe('GET /proxy', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ features: FEATURES });
  });
  afterAll(() => h.close());

  it('answers 200 with the enabled toggles only, in the upstream order', async () => {
    const res = await h.request('/proxy');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(names(await res.json())).toEqual(['plain', 'with-variants', 'no-impression-field', 'app-flag-proxy']);
  });

  it('sends the variant fields of unleash-client 6 and impressionData only when the flag has it', async () => {
    const body = (await (await h.request('/proxy')).json()) as { toggles: Toggle[] };
    const byName = Object.fromEntries(body.toggles.map((t) => [t.name, t]));
    expect(byName.plain).toEqual({
      name: 'plain',
      enabled: true,
      variant: { name: 'disabled', enabled: false, feature_enabled: true, featureEnabled: true },
      impressionData: true,
    });
    expect(byName['with-variants']?.variant).toEqual({
      name: 'blue',
      payload: { type: 'json', value: '{"a":1}' },
      enabled: true,
      feature_enabled: true,
      featureEnabled: true,
    });
    expect(byName['no-impression-field']).not.toHaveProperty('impressionData');
    expect(Object.keys(byName.plain!)).toEqual(['name', 'enabled', 'variant', 'impressionData']);
  });

  it('never shows strategies, constraints, weights, stickiness or overrides', async () => {
    const text = await (await h.request('/proxy?region=eu&userId=7')).text();
    for (const word of ['strategies', 'constraints', 'weight', 'stickiness', 'overrides', 'parameters']) expect(text).not.toContain(word);
  });

  it('sends the cache, ETag, CORS and Vary headers of the predecessor', async () => {
    const res = await h.request('/proxy');
    expect(res.headers.get('cache-control')).toBe('public, max-age=2');
    expect(res.headers.get('etag')).toMatch(/^W\/"[0-9a-f]+-[A-Za-z0-9+/]{27}"$/);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-expose-headers')).toBe('ETag');
    expect(res.headers.get('vary')).toBe('Accept-Encoding');
    expect(res.headers.get('x-powered-by')).toBeNull();
  });

  it('answers 304 with no body when If-None-Match matches, keeping CORS, cache and ETag headers', async () => {
    const first = await h.raw('/proxy?userId=7', { headers: { authorization: CLIENT_KEY } });
    const etag = String(first.headers.etag);
    const res = await h.raw('/proxy?userId=7', { headers: { authorization: CLIENT_KEY, 'if-none-match': etag } });
    expect(res.status).toBe(304);
    expect(res.body).toBe('');
    expect(res.headers.etag).toBe(etag);
    expect(res.headers['cache-control']).toBe('public, max-age=2');
    expect(res.headers['access-control-allow-origin']).toBe('*');
  });

  it('answers 200, not 304, to a different context or Cache-Control: no-cache', async () => {
    const etag = String((await h.raw('/proxy?userId=7', { headers: { authorization: CLIENT_KEY } })).headers.etag);
    const other = await h.raw('/proxy?userId=8', { headers: { authorization: CLIENT_KEY, 'if-none-match': etag } });
    expect(other.status).toBe(200);
    const noCache = await h.raw('/proxy?userId=7', { headers: { authorization: CLIENT_KEY, 'if-none-match': etag, 'cache-control': 'no-cache' } });
    expect(noCache.status).toBe(200);
  });

  it('answers HEAD with the headers and no body', async () => {
    const res = await h.request('/proxy', { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toMatch(/^W\//);
    expect(await res.text()).toBe('');
  });

  it('returns 401 Unauthorized as text/plain when the client key is missing', async () => {
    const res = await h.request('/proxy', { key: null });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).toBe('Unauthorized');
    expect(res.headers.get('www-authenticate')).toBeNull();
  });

  it.each([
    ['a wrong key', 'nope'],
    ['a Bearer-prefixed key', `Bearer ${CLIENT_KEY}`],
    ['a prefix of the key', CLIENT_KEY.slice(0, -1)],
    ['the key in other case', CLIENT_KEY.toUpperCase()],
  ])('returns 401 for %s', async (_label, key) => {
    expect((await h.request('/proxy', { key })).status).toBe(401);
  });

  it('moves unknown query keys and properties[x] into properties', async () => {
    const body = await (await h.request('/proxy?region=eu')).json();
    expect(names(body)).toContain('eu-only');
    const nested = await (await h.request('/proxy?properties%5Bregion%5D=eu')).json();
    expect(names(nested)).toContain('eu-only');
    const dotted = await (await h.request('/proxy?properties.region=eu')).json();
    expect(names(dotted)).not.toContain('eu-only');
  });

  it('evaluates userId from the query', async () => {
    expect(names(await (await h.request('/proxy?userId=7')).json())).toContain('only-user-7');
    expect(names(await (await h.request('/proxy?userId=8')).json())).not.toContain('only-user-7');
  });

  it('uses the caller environment and appName when the proxy fixes none; the default appName is flagAppName', async () => {
    expect(names(await (await h.request('/proxy?environment=prod')).json())).toContain('env-prod');
    expect(names(await (await h.request('/proxy')).json())).toContain('app-flag-proxy');
    expect(names(await (await h.request('/proxy?appName=other')).json())).not.toContain('app-flag-proxy');
  });

  it('drops an invalid currentTime and honours a valid one', async () => {
    expect(names(await (await h.request('/proxy?currentTime=2031-05-05T00:00:00Z')).json())).toContain('after-2030');
    expect(names(await (await h.request('/proxy?currentTime=not-a-date')).json())).not.toContain('after-2030');
  });

  it('lets a caller-supplied remoteAddress win over the socket address', async () => {
    expect(names(await (await h.request('/proxy?remoteAddress=10.0.0.1')).json())).toContain('from-10-0-0-1');
    expect(names(await (await h.request('/proxy')).json())).not.toContain('from-10-0-0-1');
  });

  it('ignores X-Forwarded-For when trustProxy is off', async () => {
    const res = await h.request('/proxy', { headers: { 'x-forwarded-for': '10.0.0.1' } });
    expect(names(await res.json())).not.toContain('from-10-0-0-1');
  });

  it.each(['userId', 'appName', 'sessionId', 'remoteAddress', 'currentTime', 'environment'])(
    'returns 400 when the scalar %s is repeated',
    async (field) => {
      const res = await h.request(`/proxy?${field}=1&${field}=2`);
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body.error).toBe('Request validation failed');
      expect(body.validation[0]).toMatchObject({ instancePath: `/query/${field}`, message: 'must be string' });
    },
  );

  it('returns 400 when properties is not an object', async () => {
    const res = await h.request('/proxy?properties=string');
    expect(res.status).toBe(400);
    expect((await res.json()).validation[0]).toMatchObject({ instancePath: '/query/properties', message: 'must be object' });
  });

  it('passes repeated non-declared keys through as a list (no 400)', async () => {
    expect((await h.request('/proxy?tenant=a&tenant=b')).status).toBe(200);
  });

  it('rejects a server-side token as a client key', async () => {
    expect((await h.request('/proxy', { key: SERVER_TOKEN })).status).toBe(401);
  });

  // @unleash/proxy checks the content type of every request with a body, whatever its method.
  it.each([
    ['GET', '/proxy'],
    ['HEAD', '/proxy'],
    ['GET', '/proxy/all'],
    ['GET', '/proxy/health'],
  ])('answers an empty 415 to %s %s with a non-JSON body, before auth', async (method, path) => {
    // node's client sends a GET body without a length unless told: given, as browsers and curl do.
    const res = await h.raw(path, { method, headers: { 'content-type': 'text/plain', 'content-length': '5' }, body: 'hello' });
    expect(res.status).toBe(415);
    expect(res.body).toBe('');
  });

  it('ignores the JSON body of a GET, or one with no content type, and evaluates the query', async () => {
    const body = '{"context":{"userId":"8"}}';
    for (const headers of [{ 'content-type': 'application/json' }, {}] as Array<Record<string, string>>) {
      const res = await h.raw('/proxy?userId=7', { headers: { ...headers, 'content-length': String(body.length), authorization: CLIENT_KEY }, body });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body).toggles.map((t: Toggle) => t.name)).toContain('only-user-7');
    }
  });
});

describe('POST /proxy', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ features: FEATURES });
  });
  afterAll(() => h.close());

  it('returns the enabled toggles for a body without toggles, with {} and with no body', async () => {
    const expected = ['plain', 'with-variants', 'no-impression-field', 'app-flag-proxy'];
    expect(names(await (await h.request('/proxy', postJson({ context: {} }))).json())).toEqual(expected);
    expect(names(await (await h.request('/proxy', postJson({}))).json())).toEqual(expected);
    expect(names(await (await h.request('/proxy', { method: 'POST' })).json())).toEqual(expected);
    expect(names(await (await h.request('/proxy', postJson({ toggles: [] }))).json())).toEqual(expected);
  });

  it('answers one result per listed name, in request order, unknown names as disabled', async () => {
    const res = await h.request('/proxy', postJson({ context: { userId: '7' }, toggles: ['nope', 'only-user-7', 'off', 'plain'] }));
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=2');
    const disabled = { name: 'disabled', enabled: false, feature_enabled: false, featureEnabled: false };
    expect((await res.json()).toggles).toEqual([
      { name: 'nope', enabled: false, variant: disabled, impressionData: false },
      {
        name: 'only-user-7',
        enabled: true,
        variant: { name: 'disabled', enabled: false, feature_enabled: true, featureEnabled: true },
        impressionData: false,
      },
      { name: 'off', enabled: false, variant: disabled, impressionData: false },
      {
        name: 'plain',
        enabled: true,
        variant: { name: 'disabled', enabled: false, feature_enabled: true, featureEnabled: true },
        impressionData: true,
      },
    ]);
  });

  it('coerces numeric toggle names and property values to strings', async () => {
    const res = await h.request('/proxy', postJson({ context: { properties: { n: 24 } }, toggles: [1] }));
    expect(res.status).toBe(200);
    expect((await res.json()).toggles[0].name).toBe('1');
  });

  it('moves unknown context keys into properties; explicit properties win', async () => {
    const on = await h.request('/proxy', postJson({ context: { region: 'eu' }, toggles: ['eu-only'] }));
    expect((await on.json()).toggles[0].enabled).toBe(true);
    const win = await h.request('/proxy', postJson({ context: { region: 'eu', properties: { region: 'us' } }, toggles: ['eu-only'] }));
    expect((await win.json()).toggles[0].enabled).toBe(false);
  });

  it('treats a body with no content type as JSON', async () => {
    const res = await h.raw('/proxy', {
      method: 'POST',
      headers: { authorization: CLIENT_KEY },
      body: JSON.stringify({ context: { userId: '7' }, toggles: ['only-user-7'] }),
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).toggles[0].enabled).toBe(true);
  });

  it('never answers 304', async () => {
    const first = await h.request('/proxy', postJson({}));
    const res = await h.request('/proxy', { ...postJson({}), headers: { 'content-type': 'application/json', 'if-none-match': first.headers.get('etag')! } });
    expect(res.status).toBe(200);
  });

  it('returns 400 with the parser message for malformed JSON, before readiness and auth', async () => {
    const res = await h.request('/proxy', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{bad', key: null });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect((await res.json()).error).toMatch(
      /^We were unable to parse the data you provided\. Please check it for syntax errors\. The message we got was: ".+"$/,
    );
  });

  it('returns the parse error for a JSON string at the top level', async () => {
    const res = await h.request('/proxy', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '"str"' });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatch(/^We were unable to parse the data/);
  });

  it.each([
    ['a top-level array', [], '/body', 'must be object'],
    ['toggles as a string', { toggles: 'x' }, '/body/toggles', 'must be array'],
    ['context as a string', { context: 'x' }, '/body/context', 'must be object'],
    ['a nested property value', { context: { properties: { x: { y: 1 } } } }, '/body/context/properties/x', 'must be string'],
  ])('returns 400 Request validation failed for %s', async (_label, body, instancePath, message) => {
    const res = await h.request('/proxy', { ...postJson(body), key: null });
    expect(res.status).toBe(400);
    const answer = await res.json();
    expect(answer.error).toBe('Request validation failed');
    expect(answer.validation[0]).toMatchObject({ instancePath, message });
  });

  it('returns an empty 415 for a non-JSON content type, before auth', async () => {
    const res = await h.request('/proxy', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello', key: null });
    expect(res.status).toBe(415);
    expect(await res.text()).toBe('');
  });

  it('returns 415 with a message for a charset other than UTF-8 (predecessor: 500)', async () => {
    const res = await h.request('/proxy', { method: 'POST', headers: { 'content-type': 'application/json; charset=latin1' }, body: '{}' });
    expect(res.status).toBe(415);
    expect((await res.json()).error).toMatch(/charset "LATIN1"/);
  });

  it('accepts application/json with charset=UTF-8', async () => {
    const res = await h.request('/proxy', { method: 'POST', headers: { 'content-type': 'application/json; charset=UTF-8' }, body: '{}' });
    expect(res.status).toBe(200);
  });

  it('returns 413 with a JSON message for a body over 100 kB (predecessor: 500), and accepts 99 kB', async () => {
    const big = JSON.stringify({ context: { properties: { x: 'a'.repeat(101 * 1024) } } });
    const res = await h.request('/proxy', { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
    expect(res.status).toBe(413);
    expect((await res.json()).error).toMatch(/larger than the limit of 102400 bytes/);
    const ok = JSON.stringify({ context: { properties: { x: 'a'.repeat(99 * 1024) } } });
    expect((await h.request('/proxy', { method: 'POST', headers: { 'content-type': 'application/json' }, body: ok })).status).toBe(200);
  });

  it('returns 401 without a key once the body is valid', async () => {
    expect((await h.request('/proxy', { ...postJson({}), key: null })).status).toBe(401);
  });
});

describe('GET and POST /proxy/all', () => {
  let off: Harness;
  let on: Harness;
  beforeAll(async () => {
    off = await startHarness({ features: FEATURES });
    on = await startHarness({ features: FEATURES, options: { enableAllEndpoint: true } });
  });
  afterAll(async () => {
    await off.close();
    await on.close();
  });

  it('returns 501 naming enableAllEndpoint and ENABLE_ALL_ENDPOINT when disabled, after auth', async () => {
    const res = await off.request('/proxy/all');
    expect(res.status).toBe(501);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const text = await res.text();
    expect(text).toContain('`enableAllEndpoint`');
    expect(text).toContain('`ENABLE_ALL_ENDPOINT`');
    expect((await off.request('/proxy/all', { key: null })).status).toBe(401);
    expect((await off.request('/proxy/all', postJson({}))).status).toBe(501);
  });

  it('returns every toggle, disabled ones with the disabled variant and no featureEnabled', async () => {
    const res = await on.request('/proxy/all');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=2');
    const body = await res.json();
    expect(names(body)).toEqual(FEATURES.map((f) => f.name));
    expect(body.toggles.find((t: Toggle) => t.name === 'off')).toEqual({
      name: 'off',
      enabled: false,
      variant: { name: 'disabled', enabled: false, feature_enabled: false },
      impressionData: false,
    });
  });

  it('answers named toggles on POST /proxy/all', async () => {
    const res = await on.request('/proxy/all', postJson({ toggles: ['off', 'plain'] }));
    expect(names(await res.json())).toEqual(['off', 'plain']);
  });
});

describe('evaluation context on the server side', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('fixes the context environment when the environment option is set', async () => {
    h = await startHarness({ features: FEATURES, options: { environment: 'prod' } });
    expect(names(await (await h.request('/proxy')).json())).toContain('env-prod');
    expect(names(await (await h.request('/proxy?environment=dev')).json())).toContain('env-prod');
  });

  it('takes remoteAddress from X-Forwarded-For when trustProxy is true', async () => {
    h = await startHarness({ features: FEATURES, options: { trustProxy: true } });
    const res = await h.request('/proxy', { headers: { 'x-forwarded-for': '10.0.0.1, 127.0.0.1' } });
    expect(names(await res.json())).toContain('from-10-0-0-1');
  });

  it('trusts only the given number of hops when trustProxy is a count', async () => {
    h = await startHarness({ features: FEATURES, options: { trustProxy: 1 } });
    const one = await h.request('/proxy', { headers: { 'x-forwarded-for': '10.0.0.1' } });
    expect(names(await one.json())).toContain('from-10-0-0-1');
    const spoofed = await h.request('/proxy', { headers: { 'x-forwarded-for': '10.0.0.1, 10.9.9.9' } });
    expect(names(await spoofed.json())).not.toContain('from-10-0-0-1');
  });

  it('uses one random sessionId for the whole answer when the caller sends none', async () => {
    const rollout = (i: number) =>
      feature(`half-${i}`, {
        strategies: [
          { name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'sessionId', groupId: 'same' }, constraints: [] },
        ] as never,
      });
    h = await startHarness({ features: Array.from({ length: 8 }, (_, i) => rollout(i)) });
    const sizes = new Set<number>();
    for (let i = 0; i < 30; i += 1) sizes.add((await (await h.request('/proxy')).json()).toggles.length);
    // All eight share a group, so one session puts all of them in or all out.
    expect([...sizes].every((n) => n === 0 || n === 8)).toBe(true);
    expect(sizes.size).toBe(2);
  });

  it('reads the client key from a custom header, case-insensitively, and no longer from Authorization', async () => {
    h = await startHarness({ features: FEATURES, options: { clientKeysHeaderName: 'X-Client-Key' } });
    const base = h.base;
    expect((await fetch(`${base}/proxy`, { headers: { 'x-client-key': CLIENT_KEY } })).status).toBe(200);
    expect((await fetch(`${base}/proxy`, { headers: { authorization: CLIENT_KEY } })).status).toBe(401);
  });

  it('counts named lookups upstream with the next usage report, but not GET evaluations', async () => {
    h = await startHarness({ features: FEATURES, options: { metricsInterval: 100 } });
    await h.request('/proxy?userId=7');
    await h.request('/proxy', postJson({ context: { userId: '7' }, toggles: ['only-user-7', 'off', 'only-user-7'] }));
    await eventually(() => {
      expect(h!.upstream.countsFor('only-user-7')).toMatchObject({ yes: 2, no: 0 });
      expect(h!.upstream.countsFor('off')).toMatchObject({ yes: 0, no: 1 });
    });
    expect(h.upstream.countsFor('plain')).toMatchObject({ yes: 0, no: 0 });
  });
});
