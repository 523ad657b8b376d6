/**
 * Several environments behind one handler: each key reaches only its own environment's flags,
 * usage goes upstream under its own token, caches keep the answers apart, and the keyless routes
 * answer for the whole proxy.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createMultiEnvironmentProxy,
  isFlagProxyError,
  multiEnvironmentOptionsFromEnv,
  type FeaturesResponse,
  type MultiEnvironmentProxy,
  type MultiEnvironmentProxyOptions,
} from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer, silentLogger as quiet } from 'flag-proxy/testing';
import { eventually, feature, rawRequest } from '../support/harness.js';

/**
 * How these tests take an upstream down. Not a 5xx: unleash-client's HTTP layer retries those (after
 * about 1 s and 2 s), so a retry could outlive the test's upstream and fail after the proxy is closed.
 */
const DOWN = { status: 404 } as const;


interface Setup {
  a: TestFlagServer;
  b: TestFlagServer;
  proxy: MultiEnvironmentProxy;
  base: string;
  get(path: string, key?: string, headers?: Record<string, string>): Promise<Response>;
  post(path: string, body: unknown, key?: string): Promise<Response>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function listen(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function upstreams(): Promise<{ a: TestFlagServer; b: TestFlagServer }> {
  const a = await createTestFlagServer({
    clientTokens: ['token-a'],
    features: [feature('only-in-a'), feature('in-both', { enabled: true })],
  });
  const b = await createTestFlagServer({
    clientTokens: ['token-b'],
    features: [feature('only-in-b'), feature('in-both', { enabled: false })],
  });
  cleanups.push(() => a.close(), () => b.close());
  return { a, b };
}

/**
 * Options of a proxy over both upstreams: `alpha` on `a` (the shared flagUrl) with key `key-a`,
 * `beta` on `b` with key `key-b`; fast polling, no usage reports, no logs, a memory backup.
 */
function twoEnvironments({ a, b }: { a: TestFlagServer; b: TestFlagServer }, overrides: Partial<MultiEnvironmentProxyOptions> = {}): MultiEnvironmentProxyOptions {
  return {
    flagUrl: a.url,
    refreshInterval: 100,
    metricsInterval: 0,
    logger: quiet,
    storageProvider: createMemoryStorageProvider(),
    ...overrides,
    environments: overrides.environments ?? [
      { name: 'alpha', flagApiToken: 'token-a', clientKeys: ['key-a'] },
      { name: 'beta', flagUrl: b.url, flagApiToken: 'token-b', clientKeys: ['key-b'] },
    ],
  };
}

async function start(overrides: Partial<MultiEnvironmentProxyOptions> = {}, wait = true): Promise<Setup> {
  const { a, b } = await upstreams();
  const proxy = createMultiEnvironmentProxy(
    twoEnvironments({ a, b }, {
      enableAllEndpoint: true,
      ...overrides,
      environments: overrides.environments ?? [
        { name: 'alpha', flagApiToken: 'token-a', clientKeys: ['key-a1', 'key-a2'], expServerSideSdkConfig: { tokens: ['server-a'] } },
        { name: 'beta', flagUrl: b.url, flagApiToken: 'token-b', clientKeys: ['key-b'], expServerSideSdkConfig: { tokens: ['server-b'] } },
      ],
    }),
  );
  cleanups.push(() => proxy.close());
  const base = await listen(proxy);
  if (wait) await proxy.ready;
  return {
    a,
    b,
    proxy,
    base,
    get: (path, key, headers = {}) => fetch(`${base}${path}`, { headers: { ...(key ? { authorization: key } : {}), ...headers } }),
    post: (path, body, key) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key ? { authorization: key } : {}) },
        body: JSON.stringify(body),
      }),
  };
}

/** A GET whose body is kept as bytes (for compressed answers). */
function getBuffer(url: string, headers: Record<string, string>): Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

const names = async (res: Response): Promise<string[]> =>
  ((await res.json()) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name).sort();

describe('createMultiEnvironmentProxy: isolation', () => {
  it('answers each key with its own environment’s flags only', async () => {
    const { get } = await start();
    expect(await names(await get('/proxy', 'key-a1'))).toEqual(['in-both', 'only-in-a']);
    expect(await names(await get('/proxy', 'key-a2'))).toEqual(['in-both', 'only-in-a']);
    expect(await names(await get('/proxy', 'key-b'))).toEqual(['only-in-b']);
  });

  it('answers toggles of another environment as unknown in POST /proxy and leaves them out of /proxy/all', async () => {
    const { post, get } = await start();
    const res = await post('/proxy', { toggles: ['only-in-a', 'only-in-b', 'in-both'] }, 'key-b');
    const { toggles } = (await res.json()) as { toggles: Array<{ name: string; enabled: boolean }> };
    expect(toggles.map((t) => [t.name, t.enabled])).toEqual([
      ['only-in-a', false],
      ['only-in-b', true],
      ['in-both', false],
    ]);
    expect(await names(await get('/proxy/all', 'key-b'))).toEqual(['in-both', 'only-in-b']);
    expect(await names(await get('/proxy/all', 'key-a1'))).toEqual(['in-both', 'only-in-a']);
  });

  it('serves raw definitions to an environment’s server-side token, and to no other environment’s key', async () => {
    const { get } = await start();
    const res = await get('/proxy/client/features', 'server-a');
    expect(res.status).toBe(200);
    const body = (await res.json()) as FeaturesResponse;
    expect(body.features.map((f) => f.name).sort()).toEqual(['in-both', 'only-in-a']);
    expect((await get('/proxy/client/features', 'key-b')).status).toBe(401);
  });

  it('routes /api/client/delta and /api/client/streaming by the server-side token, each to its own environment', async () => {
    const { get, base } = await start();
    const hydrated = async (key: string) => {
      const res = await get('/api/client/delta', key);
      expect(res.status).toBe(200);
      return ((await res.json()) as { events: Array<{ features: Array<{ name: string }> }> }).events[0]!.features.map((f) => f.name).sort();
    };
    expect(await hydrated('server-a')).toEqual(['in-both', 'only-in-a']);
    expect(await hydrated('server-b')).toEqual(['in-both', 'only-in-b']);
    expect((await get('/api/client/delta', 'key-b')).status).toBe(401);
    const controller = new AbortController();
    const stream = await fetch(`${base}/api/client/streaming`, {
      headers: { authorization: 'server-b' },
      signal: controller.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    controller.abort();
  });

  it('returns the core’s 401 Unauthorized (text/plain) for a missing or unknown key', async () => {
    const { get, post } = await start();
    for (const res of [await get('/proxy'), await get('/proxy', 'no-such-key'), await post('/proxy', {}, 'no-such-key')]) {
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(await res.text()).toBe('Unauthorized');
    }
  });

  it('checks the body before the key, as the core does (malformed JSON without a key is 400)', async () => {
    const { base } = await start();
    const res = await fetch(`${base}/proxy`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"context":' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/^We were unable to parse the data you provided/);
  });

  it('varies keyed answers on the key header, so a shared cache never mixes environments', async () => {
    const { get, base } = await start();
    const a = await get('/proxy', 'key-a1');
    expect(a.headers.get('cache-control')).toBe('public, max-age=2');
    expect(a.headers.get('vary')).toBe('Authorization, Accept-Encoding');
    const etag = a.headers.get('etag')!;
    // The same validator is fresh for the key that was given it, not for another environment's.
    // (Plain node:http requests: fetch adds headers of its own to conditional requests.)
    const again = await rawRequest(`${base}/proxy`, { headers: { authorization: 'key-a1', 'if-none-match': etag } });
    expect(again.status).toBe(304);
    // Another key of the same environment: the same toggles, with that key's own tag.
    const sibling = await rawRequest(`${base}/proxy`, { headers: { authorization: 'key-a2', 'if-none-match': etag } });
    expect(sibling.status).toBe(200);
    expect(JSON.parse(sibling.body)).toEqual(await a.json());
    const b = await rawRequest(`${base}/proxy`, { headers: { authorization: 'key-b', 'if-none-match': etag } });
    expect(b.status).toBe(200);
    expect(b.headers.vary).toBe('Authorization, Accept-Encoding');
    expect(JSON.parse(b.body).toggles.map((t: { name: string }) => t.name)).toEqual(['only-in-b']);
  });

  it('varies on a custom key header name', async () => {
    const { get } = await start({ clientKeysHeaderName: 'X-Flag-Key' });
    const res = await get('/proxy', undefined, { 'x-flag-key': 'key-b' });
    expect(res.status).toBe(200);
    expect(res.headers.get('vary')).toBe('x-flag-key, Accept-Encoding');
  });

  it('reports usage upstream under the token of the key’s environment', async () => {
    const { a, b, proxy, post } = await start();
    expect((await post('/proxy/client/metrics', {
      appName: 'web',
      instanceId: 'browser',
      bucket: { start: new Date().toISOString(), stop: new Date().toISOString(), toggles: { 'only-in-b': { yes: 3, no: 1 } } },
    }, 'key-b')).status).toBe(200);
    expect((await post('/proxy', { toggles: ['only-in-a'] }, 'key-a1')).status).toBe(200);
    await proxy.close();
    expect(b.countsFor('only-in-b')).toMatchObject({ yes: 3, no: 1 });
    expect(a.countsFor('only-in-b')).toMatchObject({ yes: 0, no: 0 });
    expect(a.countsFor('only-in-a')).toMatchObject({ yes: 1, no: 0 });
    expect(b.countsFor('only-in-a')).toMatchObject({ yes: 0, no: 0 });
    const reportsTo = (server: TestFlagServer) =>
      server.requests.filter((r) => r.path === '/api/client/metrics').map((r) => r.headers.authorization);
    expect(reportsTo(a)).toEqual(['token-a']);
    expect(reportsTo(b)).toEqual(['token-b']);
  });
});

describe('createMultiEnvironmentProxy: OpenFeature (OFREP)', () => {
  const ofrep = (base: string, path: string, headers: Record<string, string>) =>
    fetch(`${base}/ofrep/v1/evaluate/flags${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"context":{}}' });
  const keys = async (res: Response): Promise<string[]> => ((await res.json()) as { flags: Array<{ key: string }> }).flags.map((f) => f.key).sort();

  it('answers each key, sent as X-API-Key or a bearer token, with its own environment’s flags', async () => {
    const { base } = await start();
    expect(await keys(await ofrep(base, '', { 'x-api-key': 'key-a1' }))).toEqual(['in-both', 'only-in-a']);
    expect(await keys(await ofrep(base, '', { authorization: 'Bearer key-b' }))).toEqual(['in-both', 'only-in-b']);
    const single = await ofrep(base, '/only-in-b', { 'x-api-key': 'key-b' });
    expect(single.status).toBe(200);
    expect((await ofrep(base, '/only-in-b', { 'x-api-key': 'key-a1' })).status).toBe(404);
    expect((await ofrep(base, '', { 'x-api-key': 'unknown' })).status).toBe(403);
    expect((await ofrep(base, '', {})).status).toBe(401);
  });

  it('opens the event stream a key’s bulk answer advertises in that key’s environment', async () => {
    const { base } = await start();
    const { eventStreams } = (await (await ofrep(base, '', { 'x-api-key': 'key-b' })).json()) as { eventStreams: Array<{ url: string }> };
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.get(eventStreams[0]!.url, { agent: false }, (res) => {
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', reject);
    });
    expect(status).toBe(200);
  });
});

describe('createMultiEnvironmentProxy: routes without a key', () => {
  it('answers /proxy/health 503 until every environment is ready, then 200', async () => {
    const { a, b } = await upstreams();
    b.setFault(DOWN);
    const proxy = createMultiEnvironmentProxy(twoEnvironments({ a, b }));
    cleanups.push(() => proxy.close());
    const base = await listen(proxy);
    await proxy.environments.get('alpha')!.ready;
    expect(proxy.isReady()).toBe(false);
    const waiting = await fetch(`${base}/proxy/health`);
    expect(waiting.status).toBe(503);
    expect(await waiting.text()).toBe('The flag proxy has not connected to the flag API and is not ready to accept requests yet.');
    expect((await fetch(`${base}/proxy/internal-backstage/prometheus`)).status).toBe(503);
    // The ready environment serves its keys meanwhile; the other one's keys wait.
    expect((await fetch(`${base}/proxy`, { headers: { authorization: 'key-a' } })).status).toBe(200);
    expect((await fetch(`${base}/proxy`, { headers: { authorization: 'key-b' } })).status).toBe(503);
    b.setFault(undefined);
    await proxy.ready;
    expect(proxy.isReady()).toBe(true);
    const healthy = await fetch(`${base}/proxy/health`);
    expect(healthy.status).toBe(200);
    expect(await healthy.text()).toBe('ok');
  });

  it('serves every environment’s metrics in one exposition, labelled by environment', async () => {
    const { base, proxy } = await start();
    const res = await fetch(`${base}/proxy/internal-backstage/prometheus`, { headers: { 'accept-encoding': 'identity' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8; version=0.0.4');
    const text = await res.text();
    expect(text).toContain('flag_proxy_up{environment="alpha"} 1');
    expect(text).toContain('flag_proxy_up{environment="beta"} 1');
    expect(text.match(/^# TYPE flag_proxy_up counter$/gm)).toHaveLength(1);
    expect(text.match(/^# HELP flag_proxy_up /gm)).toHaveLength(1);
    // Each family's samples follow its own header (the text format needs them grouped).
    const lines = text.trim().split('\n');
    const header = lines.indexOf('# TYPE flag_proxy_up counter');
    expect(lines.slice(header + 1, header + 3)).toEqual(['flag_proxy_up{environment="alpha"} 1', 'flag_proxy_up{environment="beta"} 1']);
    // A valid exposition: every family declared once, every series once, each labelled.
    const types = lines.filter((l) => l.startsWith('# TYPE ')).map((l) => l.split(' ')[2]);
    expect(new Set(types).size).toBe(types.length);
    const series = lines.filter((l) => !l.startsWith('#')).map((l) => l.slice(0, l.lastIndexOf(' ')));
    expect(new Set(series).size).toBe(series.length);
    for (const sample of series) expect(sample).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*\{environment="(alpha|beta)"[,}]/);
    expect(await proxy.metrics()).toContain('flag_proxy_up{environment="beta"} 1');
    expect(Buffer.byteLength(text)).toBeGreaterThan(1024);
    const zipped = await getBuffer(`${base}/proxy/internal-backstage/prometheus`, { 'accept-encoding': 'gzip' });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers.vary).toBe('Accept-Encoding');
    expect(gunzipSync(zipped.body).toString()).toContain('flag_proxy_up{environment="alpha"} 1');
  });

  it('answers a CORS preflight from the shared cors options, with no key', async () => {
    const { base } = await start({ cors: { origin: 'https://app.example', maxAge: 60 } });
    const res = await fetch(`${base}/proxy`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(res.headers.get('access-control-max-age')).toBe('60');
  });

  it('serves under the shared base path and passes other paths to next() when mounted', async () => {
    const { a, b } = await upstreams();
    const proxy = createMultiEnvironmentProxy(twoEnvironments({ a, b }, { proxyBasePath: '/flags', refreshInterval: undefined }));
    cleanups.push(() => proxy.close());
    const base = await listen((req, res) =>
      proxy(req, res, () => {
        res.statusCode = 418;
        res.end('host');
      }),
    );
    await proxy.ready;
    expect(await names(await fetch(`${base}/FLAGS/proxy/`, { headers: { authorization: 'key-b' } }))).toEqual(['only-in-b']);
    const other = await fetch(`${base}/elsewhere`, { headers: { authorization: 'key-b' } });
    expect(other.status).toBe(418);
    expect(other.headers.get('vary')).toBeNull();
  });
});

describe('createMultiEnvironmentProxy: backups and lifecycle', () => {
  it('keeps each environment’s backup under its own key, and restarts each from its own', async () => {
    const { a, b } = await upstreams();
    const storageProvider = createMemoryStorageProvider();
    const options = (): MultiEnvironmentProxyOptions => twoEnvironments({ a, b }, { storageProvider });
    const first = createMultiEnvironmentProxy(options());
    await first.ready;
    await eventually(() => expect([...storageProvider.saved.keys()].sort()).toEqual(['alpha:flag-proxy', 'beta:flag-proxy']));
    await first.close();

    // Both upstreams down: each environment starts from its own backup, not the other's.
    a.setFault(DOWN);
    b.setFault(DOWN);
    const second = createMultiEnvironmentProxy(options());
    cleanups.push(() => second.close());
    const base = await listen(second);
    await second.ready;
    expect(await names(await fetch(`${base}/proxy`, { headers: { authorization: 'key-a' } }))).toEqual(['in-both', 'only-in-a']);
    expect(await names(await fetch(`${base}/proxy`, { headers: { authorization: 'key-b' } }))).toEqual(['only-in-b']);
  });

  it('closeStreams() refuses the event streams of every environment and leaves evaluation running', async () => {
    const { proxy, get } = await start();
    proxy.closeStreams();
    for (const token of ['server-a', 'server-b']) expect((await get('/api/client/streaming', token, { accept: 'text/event-stream' })).status).toBe(503);
    expect((await get('/proxy', 'key-b')).status).toBe(200);
  });

  it('rejects ready when closed first, and closes every environment', async () => {
    const { a, b } = await upstreams();
    a.setFault(DOWN);
    const proxy = createMultiEnvironmentProxy(twoEnvironments({ a, b }));
    await proxy.environments.get('beta')!.ready;
    await proxy.close();
    await expect(proxy.ready).rejects.toMatchObject({ code: 'NOT_READY' });
    const fetched = b.requests.length;
    await new Promise((r) => setTimeout(r, 300));
    expect(b.requests.length).toBe(fetched);
    expect(proxy.close()).toBe(proxy.close());
  });

  it('logs each environment’s messages with its name', async () => {
    const lines: string[] = [];
    const logger = { ...quiet, warn: (m: string) => lines.push(m), error: (m: string) => lines.push(m) };
    const { a, b } = await upstreams();
    b.setFault(DOWN);
    const proxy = createMultiEnvironmentProxy(twoEnvironments({ a, b }, { logger }));
    cleanups.push(() => proxy.close());
    await eventually(() => expect(lines.some((l) => l.startsWith('[beta] '))).toBe(true));
    expect(lines.join('\n')).not.toContain('token-b');
  });
});

describe('createMultiEnvironmentProxy: options', () => {
  const valid = (): MultiEnvironmentProxyOptions => ({
    flagUrl: 'http://127.0.0.1:9/api/',
    logger: quiet,
    environments: [
      { name: 'alpha', flagApiToken: 't-a', clientKeys: ['k-a'] },
      { name: 'beta', flagApiToken: 't-b', clientKeys: ['k-b'] },
    ],
  });
  const failure = (options: unknown): string => {
    try {
      createMultiEnvironmentProxy(options as MultiEnvironmentProxyOptions);
    } catch (error) {
      expect(isFlagProxyError(error) && error.code).toBe('INVALID_OPTION');
      return (error as Error).message;
    }
    throw new Error('expected INVALID_OPTION');
  };

  it.each([
    ['no environments', { ...valid(), environments: [] }, 'Invalid option environments: must be a non-empty list of environments'],
    ['a key in two environments', { ...valid(), environments: [{ name: 'a', flagApiToken: 't', clientKeys: ['same'] }, { name: 'b', flagApiToken: 'u', clientKeys: ['same'] }] }, 'configured for both "a" and "b"'],
    ['a key that is another environment’s server-side token', { ...valid(), environments: [{ name: 'a', flagApiToken: 't', clientKeys: ['k'], expServerSideSdkConfig: { tokens: ['x'] } }, { name: 'b', flagApiToken: 'u', clientKeys: ['x'] }] }, 'configured for both "a" and "b"'],
    ['two environments with one name', { ...valid(), environments: [{ name: 'Prod', flagApiToken: 't', clientKeys: ['k'] }, { name: 'prod', flagApiToken: 'u', clientKeys: ['l'] }] }, 'environments[1].name: "prod" is used by another environment'],
    ['a name with a space', { ...valid(), environments: [{ name: 'my env', flagApiToken: 't', clientKeys: ['k'] }] }, 'environments[0].name: must be'],
    ['a shared-only option in an environment', { ...valid(), environments: [{ name: 'a', flagApiToken: 't', clientKeys: ['k'], cors: { origin: '*' } }] }, 'environments[0].cors: is shared by all environments'],
    ['client keys outside environments', { ...valid(), clientKeys: ['k'] }, 'Invalid option clientKeys: give it per environment'],
    ['an environment without client keys', { ...valid(), environments: [{ name: 'a', flagApiToken: 't' }] }, 'Environment "a": You must specify the clientKeys (FLAG_PROXY_CLIENT_KEYS) option'],
    ['an environment with an empty client-key list', { ...valid(), environments: [{ name: 'a', flagApiToken: 't', clientKeys: [] }] }, 'Invalid option environments[0].clientKeys: must list at least one key'],
    ['a bad option in one environment', { ...valid(), environments: [{ name: 'a', flagApiToken: 't', clientKeys: ['k'], refreshInterval: -1 }] }, 'Environment "a": Invalid option refreshInterval'],
  ])('refuses %s', (_, options, message) => {
    expect(failure(options)).toContain(message);
  });

  it('starts nothing when one environment is invalid', async () => {
    const { a } = await upstreams();
    failure({ ...valid(), flagUrl: a.url, environments: [{ name: 'ok', flagApiToken: 'token-a', clientKeys: ['k'] }, { name: 'bad', flagApiToken: 't' }] });
    await new Promise((r) => setTimeout(r, 200));
    expect(a.requests).toHaveLength(0);
  });

  it('does not change the options it is given', () => {
    const options = valid();
    const copy = structuredClone({ ...options, logger: undefined });
    const proxy = createMultiEnvironmentProxy(options);
    cleanups.push(() => proxy.close());
    expect({ ...options, logger: undefined }).toEqual(copy);
  });
});

describe('multiEnvironmentOptionsFromEnv', () => {
  it('returns undefined without FLAG_ENV_ variables (the single-environment form applies)', () => {
    expect(multiEnvironmentOptionsFromEnv({ FLAG_URL: 'http://x/api/', FLAG_API_TOKEN: 't', FLAG_ENVIRONMENT: 'production' })).toBeUndefined();
  });

  it('reads one environment per FLAG_ENV_<NAME>_ group, and shares the ordinary variables', () => {
    const options = multiEnvironmentOptionsFromEnv({
      FLAG_URL: 'http://flags.internal/api/',
      FLAG_FETCH_INTERVAL: '2000',
      FLAG_ENV_PRODUCTION_API_TOKEN: 'prod-token',
      FLAG_ENV_PRODUCTION_CLIENT_KEYS: 'web-prod, ios-prod',
      FLAG_ENV_PRODUCTION_ENVIRONMENT: 'production',
      FLAG_ENV_EU_STAGING_API_TOKEN: 'staging-token',
      FLAG_ENV_EU_STAGING_CLIENT_KEYS: 'web-staging',
      FLAG_ENV_EU_STAGING_URL: 'http://staging.internal/api/',
      FLAG_ENV_EU_STAGING_PROJECT_NAME: 'shop',
      FLAG_ENV_EU_STAGING_NAME_PREFIX: 'shop.',
      FLAG_ENV_EU_STAGING_TAGS: 'team:web,tier:1',
      FLAG_ENV_EU_STAGING_APP_NAME: 'staging-proxy',
      FLAG_ENV_EU_STAGING_SERVER_SIDE_TOKENS: 'srv-1,srv-2',
    });
    expect(options).toEqual({
      flagUrl: 'http://flags.internal/api/',
      refreshInterval: 2000,
      environments: [
        {
          name: 'eu_staging',
          flagApiToken: 'staging-token',
          clientKeys: ['web-staging'],
          flagUrl: 'http://staging.internal/api/',
          flagAppName: 'staging-proxy',
          projectName: 'shop',
          namePrefix: 'shop.',
          tags: [
            { name: 'team', value: 'web' },
            { name: 'tier', value: '1' },
          ],
          expServerSideSdkConfig: { tokens: ['srv-1', 'srv-2'] },
        },
        { name: 'production', flagApiToken: 'prod-token', clientKeys: ['web-prod', 'ios-prod'], environment: 'production' },
      ],
    });
  });

  it.each([
    [{ FLAG_ENV_PROD_CLIENT_KEYS: 'k' }, 'Invalid variable FLAG_ENV_PROD_API_TOKEN: environment "prod" needs it'],
    [{ FLAG_ENV_PROD_API_TOKEN: 't' }, 'Invalid variable FLAG_ENV_PROD_CLIENT_KEYS: environment "prod" needs it'],
    [{ FLAG_ENV_PROD_API_TOKEN: 't', FLAG_ENV_PROD_CLIENT_KEYS: ',,' }, 'Invalid variable FLAG_ENV_PROD_CLIENT_KEYS: lists no key'],
    [{ FLAG_ENV_PROD_API_TOKEN: 't', FLAG_ENV_PROD_CLIENT_KEYS: 'k', FLAG_ENV_PROD_REFRESH: '1' }, 'Invalid variable FLAG_ENV_PROD_REFRESH: expected FLAG_ENV_<NAME>_<SETTING>'],
    [{ FLAG_ENV_PROD_API_TOKEN: 't', FLAG_ENV_PROD_CLIENT_KEYS: 'k', FLAG_API_TOKEN: 'single' }, 'Invalid variable FLAG_API_TOKEN: not used when environments are configured'],
    [{ FLAG_ENV_PROD_API_TOKEN: 't', FLAG_ENV_PROD_CLIENT_KEYS: 'k', FLAG_ENV_PROD_TAGS: 'nocolon' }, 'Invalid variable FLAG_ENV_PROD_TAGS: expected name:value pairs'],
    [{ FLAG_ENV_PROD_API_TOKEN: 't', FLAG_ENV_PROD_CLIENT_KEYS: 'k', FLAG_FETCH_INTERVAL: 'x' }, 'Invalid option refreshInterval (FLAG_FETCH_INTERVAL)'],
  ])('refuses %j', (env, message) => {
    expect(() => multiEnvironmentOptionsFromEnv(env)).toThrow(message);
  });
});
