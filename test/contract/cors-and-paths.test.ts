/** CORS (preflight, origin lists, merged defaults) and path handling (base path, case, slashes, 404). */
import { afterEach, describe, expect, it } from 'vitest';
import { CLIENT_KEY, MOUNT, MOUNTED, feature, startHarness, type Harness } from '../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('CORS preflight', () => {
  it('answers OPTIONS with 204 and the default CORS headers, before auth and readiness', async () => {
    h = await startHarness({ noWait: true, options: { refreshInterval: 60_000 } });
    h.upstream.setFault({ status: 503, routes: 'features' });
    const res = await h.raw('/proxy', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization,content-type' },
    });
    expect(res.status).toBe(204);
    expect(res.headers['content-length']).toBe('0');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toBe('GET, POST');
    expect(res.headers['access-control-allow-headers']).toBe('authorization,content-type');
    expect(res.headers['access-control-max-age']).toBe('172800');
    expect(res.headers['access-control-expose-headers']).toBe('ETag');
    expect(res.headers.vary).toBe('Access-Control-Request-Headers');
  });

  // Not through the fetch bridge: a web Response keeps its headers sorted by name.
  it.skipIf(MOUNT === 'fetch')('writes the preflight and health fields in the order the cors middleware and Express did', async () => {
    h = await startHarness();
    // Fields the proxy writes, in wire order (a host may add its own around them).
    const ours = (raw: string[]): string[] =>
      raw.filter((_, i) => i % 2 === 0).filter((name) => /^(access-control-|vary$|content-|etag$)/i.test(name));
    const preflight = await h.raw('/proxy', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization,unleash-sdk' },
    });
    expect(ours(preflight.rawHeaders)).toEqual([
      'Access-Control-Allow-Origin',
      'Access-Control-Allow-Methods',
      'Vary',
      'Access-Control-Allow-Headers',
      'Access-Control-Max-Age',
      'Access-Control-Expose-Headers',
      'Content-Length',
    ]);
    const health = await h.raw('/proxy/health', { headers: { origin: 'https://app.example' } });
    expect(ours(health.rawHeaders)).toEqual([
      'Access-Control-Allow-Origin',
      'Access-Control-Expose-Headers',
      'Content-Type',
      'ETag',
      'Vary',
      'Content-Length',
    ]);
    expect(health.headers.etag).toBe('W/"2-eoX0dku9ba8cNUXvu/DyeabcC+s"');
    expect(health.body).toBe('ok');
  });

  it('puts Vary: Origin where the origin set it, merged with the answer\'s own, for one fixed origin', async () => {
    h = await startHarness({ options: { cors: { origin: 'https://a.example', credentials: true } } });
    const preflight = await h.raw('/proxy', { method: 'OPTIONS', headers: { origin: 'https://a.example', 'access-control-request-headers': 'authorization' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://a.example');
    expect(preflight.headers.vary).toBe('Origin, Access-Control-Request-Headers');
    expect(preflight.headers['access-control-allow-credentials']).toBe('true');
    expect(preflight.headers['access-control-allow-headers']).toBe('authorization');
    const health = await h.raw('/proxy/health', { headers: { origin: 'https://elsewhere.example' } });
    expect(health.headers['access-control-allow-origin']).toBe('https://a.example');
    expect(health.headers.vary).toBe('Origin, Accept-Encoding');
    expect(health.headers['access-control-allow-credentials']).toBe('true');
  });

  // node:http only: mounted in a host, paths outside the mount (and their preflights) are the host's.
  it.skipIf(MOUNTED)('answers OPTIONS on any path when standalone', async () => {
    h = await startHarness();
    expect((await h.raw('/anything/else', { method: 'OPTIONS' })).status).toBe(204);
  });

  it('echoes a listed origin with Vary: Origin, and serves a non-listed one without ACAO', async () => {
    h = await startHarness({ features: [feature('a')], options: { cors: { origin: ['https://a.example', 'https://b.example'] } } });
    const listed = await h.raw('/proxy', { headers: { authorization: CLIENT_KEY, origin: 'https://b.example' } });
    expect(listed.headers['access-control-allow-origin']).toBe('https://b.example');
    expect(listed.headers.vary).toBe('Origin, Accept-Encoding');
    const other = await h.raw('/proxy', { headers: { authorization: CLIENT_KEY, origin: 'https://evil.example' } });
    expect(other.status).toBe(200);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('merges a programmatic cors object over the defaults (predecessor: replaced them)', async () => {
    h = await startHarness({ options: { cors: { origin: ['https://a.example'] } } });
    const res = await h.raw('/proxy', { method: 'OPTIONS', headers: { origin: 'https://a.example' } });
    expect(res.headers['access-control-expose-headers']).toBe('ETag');
    expect(res.headers['access-control-allow-methods']).toBe('GET, POST');
    expect(res.headers['access-control-max-age']).toBe('172800');
  });

  it('adds Access-Control-Allow-Credentials when credentials is set', async () => {
    h = await startHarness({ options: { cors: { credentials: true } } });
    expect((await h.raw('/proxy/health')).headers['access-control-allow-credentials']).toBe('true');
  });
});

describe('paths', () => {
  it('serves every route under proxyBasePath, and nothing at the bare /proxy', async () => {
    h = await startHarness({ features: [feature('a')], options: { proxyBasePath: '  base/path/ ' } });
    expect(h.base.endsWith('/base/path')).toBe(true);
    expect((await h.request('/proxy')).status).toBe(200);
    expect((await h.request('/proxy/health')).status).toBe(200);
    const bare = await fetch(h.base.replace('/base/path', '/proxy'), { headers: { authorization: CLIENT_KEY } });
    expect(bare.status).toBe(404);
  });

  it('matches paths case-insensitively, with one trailing slash and doubled slashes', async () => {
    h = await startHarness({ features: [feature('a')] });
    expect((await h.request('/PROXY/Health')).status).toBe(200);
    expect((await h.request('/proxy/')).status).toBe(200);
    expect((await h.request('/proxy//health')).status).toBe(200);
  });

  // node:http only: mounted, unknown paths and methods go to next(), so the host answers them.
  it.skipIf(MOUNTED)('answers 404 with the Express-style page for unknown paths and methods when standalone', async () => {
    h = await startHarness();
    const res = await h.raw('/proxy/unknown');
    expect(res.status).toBe(404);
    expect(res.headers['content-security-policy']).toBe("default-src 'none'");
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.body).toContain('<pre>Cannot GET /proxy/unknown</pre>');
    expect((await h.raw('/proxy', { method: 'DELETE' })).status).toBe(404);
    expect((await h.raw('/proxy/client/features', { method: 'POST' })).status).toBe(404);
  });

  // node:http only: mounted, the 404 page is the host's.
  it.skipIf(MOUNTED)('escapes the path it echoes in the 404 page', async () => {
    h = await startHarness();
    const res = await h.raw('/%3Cscript%3E<b>');
    expect(res.body).not.toContain('<b>');
  });
});
