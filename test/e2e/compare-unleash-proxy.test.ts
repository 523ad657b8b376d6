/**
 * Side by side with the predecessor: `@unleash/proxy` 1.4.19 (from npm) and flag-proxy run against
 * the same test flag server, get the same requests, and must give the same statuses, bodies and
 * headers — except for COMPATIBILITY.md §3, whose cases are checked in the contract suite.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFlagProxy, InMemStorageProvider } from 'flag-proxy';
import { createTestFlagServer, type TestFlagServer, silentLogger as silent } from 'flag-proxy/testing';
import { feature } from '../support/harness.js';

const require = createRequire(import.meta.url);
const { createApp } = require('@unleash/proxy') as {
  createApp(options: Record<string, unknown>): { listen(port: number, cb: () => void): http.Server };
};

const KEY = 'compare-key';
const SERVER_TOKEN = 'compare-server-token';

const FEATURES = [
  feature('plain', { impressionData: true }),
  feature('off', { enabled: false, impressionData: false }),
  feature('user-7', { strategies: [{ name: 'userWithId', parameters: { userIds: '7' }, constraints: [] }] as never }),
  feature('eu', {
    strategies: [{ name: 'default', parameters: {}, constraints: [{ contextName: 'region', operator: 'IN', values: ['eu'], inverted: false }] }] as never,
  }),
  // Only for users 3 and 7, so that no case without a userId meets a random variant.
  feature('colors', {
    strategies: [{ name: 'userWithId', parameters: { userIds: '3,7' }, constraints: [] }] as never,
    variants: [
      { name: 'red', weight: 500, stickiness: 'userId', payload: { type: 'string', value: 'r' } },
      { name: 'green', weight: 500, stickiness: 'userId', payload: { type: 'json', value: '{"g":true}' } },
    ] as never,
  }),
  ...Array.from({ length: 30 }, (_, i) => feature(`filler-${String(i).padStart(2, '0')}-with-a-longer-name`)),
];

interface Target {
  base: string;
  close(): Promise<void>;
}

function listen(server: http.Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

async function startReference(upstream: TestFlagServer, enableAllEndpoint: boolean): Promise<Target> {
  const app = createApp({
    unleashUrl: upstream.url,
    unleashApiToken: upstream.token,
    clientKeys: [KEY],
    clientMode: 'new',
    refreshInterval: 200,
    metricsInterval: 600_000,
    enableAllEndpoint,
    expServerSideSdkConfig: { tokens: [SERVER_TOKEN] },
    storageProvider: new InMemStorageProvider(),
    logLevel: 'fatal',
  });
  const server = http.createServer(app as unknown as http.RequestListener);
  const base = await listen(server);
  return { base, close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

async function startOurs(upstream: TestFlagServer, enableAllEndpoint: boolean): Promise<Target> {
  const proxy = createFlagProxy({
    flagUrl: upstream.url,
    flagApiToken: upstream.token,
    clientKeys: [KEY],
    refreshInterval: 200,
    metricsInterval: 600_000,
    enableAllEndpoint,
    expServerSideSdkConfig: { tokens: [SERVER_TOKEN] },
    storageProvider: new InMemStorageProvider(),
    logger: silent,
  });
  const server = http.createServer(proxy);
  const base = await listen(server);
  await proxy.ready;
  return {
    base,
    close: async () => {
      await proxy.close();
      await new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); });
    },
  };
}

interface Answer {
  status: number;
  headers: Record<string, string | undefined>;
  body: string;
}

const COMPARED_HEADERS = [
  'content-type',
  'cache-control',
  'etag',
  'vary',
  'content-encoding',
  'access-control-allow-origin',
  'access-control-expose-headers',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-max-age',
  'content-security-policy',
  'x-content-type-options',
  'x-powered-by',
  'www-authenticate',
];

function send(base: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let raw = Buffer.concat(chunks);
        if (res.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
        resolve({
          status: res.statusCode ?? 0,
          headers: Object.fromEntries(COMPARED_HEADERS.map((h) => [h, res.headers[h] as string | undefined])),
          body: raw.toString('utf8'),
        });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Our answer with the request tag taken off its ETag (README "Performance": a stable GET answer's
 * ETag is the predecessor's with `.<tag>` before the closing quote, so a poll is answered 304 from
 * the request alone). Everything else must be the predecessor's byte for byte.
 */
function withoutRequestTag(answer: Answer): Answer {
  const etag = answer.headers.etag?.replace(/\.[A-Za-z0-9_-]+"$/, '"');
  return { ...answer, headers: { ...answer.headers, etag } };
}

/**
 * A validation error compared by what a client reads: the message, and each entry's path and text.
 * (The predecessor adds an internal `schemaPath`, so the bodies and their ETags differ.)
 */
function validationView(answer: Answer): unknown {
  const body = JSON.parse(answer.body) as { error: string; validation?: Array<{ instancePath: string; message: string }> };
  return {
    ...answer,
    headers: { ...answer.headers, etag: undefined },
    body: { error: body.error, validation: body.validation?.map((v) => ({ instancePath: v.instancePath, message: v.message })) },
  };
}

const now = new Date().toISOString();
const key = { authorization: KEY };
const json = { ...key, 'content-type': 'application/json' };

const CASES: Array<{ name: string; method: string; path: string; headers?: Record<string, string>; body?: string; view?: (a: Answer) => unknown }> = [
  { name: 'GET /proxy', method: 'GET', path: '/proxy', headers: key },
  { name: 'GET /proxy gzip', method: 'GET', path: '/proxy', headers: { ...key, 'accept-encoding': 'gzip' } },
  { name: 'GET /proxy?userId=7', method: 'GET', path: '/proxy?userId=7', headers: key },
  { name: 'GET /proxy?region=eu', method: 'GET', path: '/proxy?region=eu&userId=3', headers: key },
  { name: 'GET /proxy?properties[region]=eu', method: 'GET', path: '/proxy?properties%5Bregion%5D=eu', headers: key },
  { name: 'GET /proxy trailing slash, upper case', method: 'GET', path: '/PROXY/?userId=7', headers: key },
  { name: 'HEAD /proxy', method: 'HEAD', path: '/proxy?userId=7', headers: key },
  { name: 'GET /proxy no key', method: 'GET', path: '/proxy' },
  { name: 'GET /proxy wrong key', method: 'GET', path: '/proxy', headers: { authorization: 'nope' } },
  { name: 'GET /proxy server token', method: 'GET', path: '/proxy', headers: { authorization: SERVER_TOKEN } },
  { name: 'GET /proxy repeated userId', method: 'GET', path: '/proxy?userId=1&userId=2', headers: key, view: validationView },
  { name: 'GET /proxy properties=string', method: 'GET', path: '/proxy?properties=string', headers: key, view: validationView },
  { name: 'POST /proxy named', method: 'POST', path: '/proxy', headers: json, body: JSON.stringify({ context: { userId: '7' }, toggles: ['user-7', 'off', 'missing', 'colors'] }) },
  { name: 'POST /proxy context only', method: 'POST', path: '/proxy', headers: json, body: JSON.stringify({ context: { userId: '7', region: 'eu' } }) },
  { name: 'POST /proxy {}', method: 'POST', path: '/proxy', headers: json, body: '{}' },
  { name: 'POST /proxy no body', method: 'POST', path: '/proxy', headers: key },
  { name: 'POST /proxy no content type', method: 'POST', path: '/proxy', headers: key, body: JSON.stringify({ context: { userId: '7' }, toggles: ['user-7'] }) },
  { name: 'POST /proxy numeric toggle name', method: 'POST', path: '/proxy', headers: json, body: JSON.stringify({ toggles: [1] }) },
  { name: 'POST /proxy malformed JSON', method: 'POST', path: '/proxy', headers: { 'content-type': 'application/json' }, body: '{bad' },
  { name: 'POST /proxy toggles string', method: 'POST', path: '/proxy', headers: json, body: '{"toggles":"x"}', view: validationView },
  { name: 'POST /proxy context string', method: 'POST', path: '/proxy', headers: json, body: '{"context":"x"}', view: validationView },
  { name: 'POST /proxy array body', method: 'POST', path: '/proxy', headers: json, body: '[]', view: validationView },
  { name: 'POST /proxy text/plain', method: 'POST', path: '/proxy', headers: { 'content-type': 'text/plain' }, body: 'x' },
  { name: 'POST /proxy no key', method: 'POST', path: '/proxy', headers: { 'content-type': 'application/json' }, body: '{}' },
  { name: 'GET /proxy/all', method: 'GET', path: '/proxy/all?userId=7', headers: key },
  { name: 'POST /proxy/all named', method: 'POST', path: '/proxy/all', headers: json, body: JSON.stringify({ toggles: ['off', 'plain'] }) },
  { name: 'GET /proxy/health', method: 'GET', path: '/proxy/health' },
  { name: 'OPTIONS /proxy preflight', method: 'OPTIONS', path: '/proxy', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' } },
  { name: 'OPTIONS elsewhere', method: 'OPTIONS', path: '/somewhere' },
  { name: 'GET with Origin', method: 'GET', path: '/proxy/health', headers: { origin: 'https://app.example' } },
  {
    name: 'POST /proxy/client/metrics',
    method: 'POST',
    path: '/proxy/client/metrics',
    headers: json,
    body: JSON.stringify({ appName: 'web', instanceId: 'i', bucket: { start: now, stop: now, toggles: { plain: { yes: 2, no: 1, variants: { a: 1 } } } } }),
  },
  { name: 'POST /proxy/all/client/metrics', method: 'POST', path: '/proxy/all/client/metrics', headers: json, body: JSON.stringify({ appName: 'web', instanceId: 'i', bucket: { start: now, stop: now, toggles: {} } }) },
  { name: 'POST /proxy/client/metrics no instanceId', method: 'POST', path: '/proxy/client/metrics', headers: json, body: JSON.stringify({ appName: 'web', bucket: { start: now, stop: now, toggles: {} } }), view: validationView },
  { name: 'POST /proxy/client/metrics negative', method: 'POST', path: '/proxy/client/metrics', headers: json, body: JSON.stringify({ appName: 'web', instanceId: 'i', bucket: { start: now, stop: now, toggles: { a: { yes: -1, no: 0 } } } }), view: validationView },
  { name: 'POST /proxy/client/metrics bad date', method: 'POST', path: '/proxy/client/metrics', headers: json, body: JSON.stringify({ appName: 'web', instanceId: 'i', bucket: { start: 'yesterday', stop: now, toggles: {} } }), view: validationView },
  { name: 'POST /proxy/client/register no interval', method: 'POST', path: '/proxy/client/register', headers: json, body: JSON.stringify({ appName: 'svc', instanceId: 'i', strategies: [], started: now }), view: validationView },
  { name: 'POST /proxy/client/metrics blob', method: 'POST', path: '/proxy/client/metrics', headers: json, body: '{"some":"blob"}', view: validationView },
  { name: 'POST /proxy/client/metrics no key', method: 'POST', path: '/proxy/client/metrics', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ appName: 'web', instanceId: 'i', bucket: { start: now, stop: now, toggles: {} } }) },
  {
    name: 'POST /proxy/client/register',
    method: 'POST',
    path: '/proxy/client/register',
    headers: json,
    body: JSON.stringify({ appName: 'svc', instanceId: 'i', strategies: ['default'], started: now, interval: 1000 }),
  },
  { name: 'GET /proxy/client/features token', method: 'GET', path: '/proxy/client/features', headers: { authorization: SERVER_TOKEN } },
  { name: 'GET /proxy/client/features gzip', method: 'GET', path: '/proxy/client/features', headers: { authorization: SERVER_TOKEN, 'accept-encoding': 'gzip' } },
  { name: 'GET /proxy/client/features client key', method: 'GET', path: '/proxy/client/features', headers: key },
  { name: 'GET unknown path', method: 'GET', path: '/proxy/unknown' },
  { name: 'DELETE /proxy', method: 'DELETE', path: '/proxy', headers: key },
];

describe('flag-proxy and @unleash/proxy 1.4.19 against the same flag server', () => {
  let upstream: TestFlagServer;
  let reference: Target;
  let ours: Target;
  let referenceOff: Target;
  let oursOff: Target;

  beforeAll(async () => {
    upstream = await createTestFlagServer({ features: FEATURES });
    [reference, ours, referenceOff, oursOff] = await Promise.all([
      startReference(upstream, true),
      startOurs(upstream, true),
      startReference(upstream, false),
      startOurs(upstream, false),
    ]);
    // The reference exposes no readiness promise; wait for its health.
    for (const target of [reference, referenceOff]) {
      for (let i = 0; i < 100 && (await send(target.base, 'GET', '/proxy/health', {})).status !== 200; i += 1) {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }, 30_000);

  afterAll(async () => {
    await Promise.all([reference, ours, referenceOff, oursOff].map((t) => t?.close()));
    await upstream?.close();
  });

  it.each(CASES)('answers $name the same', async ({ method, path, headers = {}, body, view = (a: Answer) => a }) => {
    const [theirs, mine] = await Promise.all([send(reference.base, method, path, headers, body), send(ours.base, method, path, headers, body)]);
    expect(view(withoutRequestTag(mine))).toEqual(view(theirs));
  });

  it('answers 304 to a matching If-None-Match the same', async () => {
    const first = await send(reference.base, 'GET', '/proxy?userId=7', key);
    const [theirs, mine] = await Promise.all([
      send(reference.base, 'GET', '/proxy?userId=7', { ...key, 'if-none-match': first.headers.etag! }),
      send(ours.base, 'GET', '/proxy?userId=7', { ...key, 'if-none-match': first.headers.etag! }),
    ]);
    expect(theirs.status).toBe(304);
    expect(withoutRequestTag(mine)).toEqual(theirs);
  });

  it("tags the predecessor's ETag of a stable GET answer, and takes either form back for a 304", async () => {
    const [theirs, mine] = await Promise.all([send(reference.base, 'GET', '/proxy?userId=8', key), send(ours.base, 'GET', '/proxy?userId=8', key)]);
    expect(mine.headers.etag).toMatch(/^W\/"[0-9a-f]+-[A-Za-z0-9+/]{27}\.[A-Za-z0-9_-]{22}"$/);
    expect(withoutRequestTag(mine).headers.etag).toBe(theirs.headers.etag);
    for (const sent of [mine.headers.etag!, theirs.headers.etag!]) {
      expect((await send(ours.base, 'GET', '/proxy?userId=8', { ...key, 'if-none-match': sent })).status).toBe(304);
    }
  });

  it('answers /proxy/all with 501 the same when it is disabled', async () => {
    const [theirs, mine] = await Promise.all([send(referenceOff.base, 'GET', '/proxy/all', key), send(oursOff.base, 'GET', '/proxy/all', key)]);
    expect(theirs.status).toBe(501);
    expect(mine).toEqual(theirs);
  });

  it('serves Prometheus text with the same content type and the renamed up metric', async () => {
    const [theirs, mine] = await Promise.all([
      send(reference.base, 'GET', '/proxy/internal-backstage/prometheus', {}),
      send(ours.base, 'GET', '/proxy/internal-backstage/prometheus', {}),
    ]);
    expect(mine.status).toBe(theirs.status);
    expect(mine.headers['content-type']).toBe(theirs.headers['content-type']);
    expect(theirs.body).toMatch(/^unleash_proxy_up 1$/m);
    expect(mine.body).toMatch(/^flag_proxy_up 1$/m);
    for (const gauge of ['last_metrics_update_epoch_timestamp_ms', 'last_metrics_fetch_epoch_timestamp_ms']) {
      expect(mine.body).toContain(gauge);
      expect(theirs.body).toContain(gauge);
    }
  });
});
