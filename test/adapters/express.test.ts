/** flag-proxy/express: mounting, next(), next(err), a body the host parsed, trust proxy, host-derived context. */
import http from 'node:http';
import express, { type ErrorRequestHandler, type Request } from 'express';
import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest';
import { createFlagProxy, isFlagProxyError, type FlagProxyOptions } from 'flag-proxy';
import { createExpressMiddleware, type ExpressAdapterOptions } from 'flag-proxy/express';
import type { TestFlagServer } from 'flag-proxy/testing';
import { addressRecorder, CLIENT_KEY, enabledNames, listen, MAPPED_FORWARDED_FOR, proxyOptions, startUpstream, throwingEnricher } from './fixtures.js';

let upstream: TestFlagServer;
beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(() => upstream.close());

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

/** A host app: its own routes, the proxy under /api/flags, its own 404 and error handler. */
async function host(
  options: Partial<FlagProxyOptions> = {},
  adapter: ExpressAdapterOptions = {},
  configure?: (app: express.Express) => void,
  address: '127.0.0.1' | '::' = '127.0.0.1',
) {
  const app = express();
  configure?.(app);
  const errors: unknown[] = [];
  const flags = createExpressMiddleware(proxyOptions(upstream, options), adapter);
  app.get('/api/orders', (_req, res) => void res.json({ orders: [] }));
  app.use('/api/flags', flags);
  app.use((_req, res) => void res.status(404).send('host 404'));
  const onError: ErrorRequestHandler = (err: { status?: number }, _req, res, _next) => {
    errors.push(err);
    res.status(err.status ?? 500).send('host error handler');
  };
  app.use(onError);
  const server = await listen(http.createServer(app), address);
  cleanups.push(async () => {
    await flags.proxy.close();
    await server.close();
  });
  await flags.proxy.ready;
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${server.base}${path}`, { headers: { authorization: CLIENT_KEY, ...headers } });
  return { app, flags, errors, base: server.base, get };
}

describe('createExpressMiddleware', () => {
  it('serves the proxy under the mount path next to the host routes, and passes other paths to next()', async () => {
    const h = await host();
    expect(await enabledNames(await h.get('/api/flags/proxy'))).toEqual(['everyone']);
    expect((await h.get('/api/flags/proxy/health')).status).toBe(200);
    expect(await (await h.get('/api/orders')).json()).toEqual({ orders: [] });
    const unknown = await h.get('/api/flags/proxy/unknown');
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toBe('host 404');
    expect(await (await h.get('/proxy')).text()).toBe('host 404');
  });

  it('works together with proxyBasePath', async () => {
    const h = await host({ proxyBasePath: 'v1' });
    expect((await h.get('/api/flags/v1/proxy/health')).status).toBe(200);
    expect(await (await h.get('/api/flags/proxy/health')).text()).toBe('host 404');
  });

  it('reuses a body express.json() already parsed', async () => {
    const h = await host({}, {}, (app) => app.use(express.json()));
    const res = await fetch(`${h.base}/api/flags/proxy`, {
      method: 'POST',
      headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ context: { userId: '7' }, toggles: ['only-user-7', 'nope'] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { toggles: Array<{ name: string; enabled: boolean }> };
    expect(body.toggles.map((t) => [t.name, t.enabled])).toEqual([
      ['only-user-7', true],
      ['nope', false],
    ]);
  });

  it("sends unexpected errors to the host's error handler with status 500 and expose false", async () => {
    const h = await host({ expCustomEnrichers: [throwingEnricher] });
    const res = await h.get('/api/flags/proxy');
    expect(res.status).toBe(500);
    expect(await res.text()).toBe('host error handler');
    expect(h.errors).toHaveLength(1);
    expect(isFlagProxyError(h.errors[0])).toBe(true);
    expect(h.errors[0]).toMatchObject({ code: 'INTERNAL', status: 500, expose: false });
  });

  it('replaces a spoofed userId with the one the hook derives from the Express request', async () => {
    const sessions = new Map([['session-of-7', '7']]);
    const seen: Request[] = [];
    const h = await host({}, {
      context(req) {
        seen.push(req);
        return { userId: sessions.get(req.get('x-session') ?? '') ?? 'anonymous' };
      },
    });
    expect(await enabledNames(await h.get('/api/flags/proxy?userId=7'))).not.toContain('only-user-7');
    expect(await enabledNames(await h.get('/api/flags/proxy?userId=1', { 'x-session': 'session-of-7' }))).toContain('only-user-7');
    expect(seen[0]?.originalUrl).toBe('/api/flags/proxy?userId=7');
  });

  it("follows the app's trust proxy setting while trustProxy is unset", async () => {
    const trusting = await host({}, {}, (app) => app.set('trust proxy', 'loopback'));
    expect(await enabledNames(await trusting.get('/api/flags/proxy', { 'x-forwarded-for': '10.0.0.1' }))).toContain('from-10-0-0-1');
    const plain = await host();
    expect(await enabledNames(await plain.get('/api/flags/proxy', { 'x-forwarded-for': '10.0.0.1' }))).not.toContain('from-10-0-0-1');
    // Without a forwarded hop, a remoteAddress the caller sends still wins over the socket address.
    expect(await enabledNames(await trusting.get('/api/flags/proxy?remoteAddress=10.0.0.1'))).toContain('from-10-0-0-1');
  });

  it('gives an IPv4 client the IPv4 form of its address when req.ip has the mapped one (server on ::)', async () => {
    const { seen, options } = addressRecorder();
    const h = await host(options, {}, (app) => app.set('trust proxy', 'loopback'), '::');
    expect(await enabledNames(await h.get('/api/flags/proxy', MAPPED_FORWARDED_FOR))).toContain('from-10-0-0-1');
    expect(await enabledNames(await h.get('/api/flags/proxy'))).toEqual(['everyone']);
    expect(seen).toEqual(['10.0.0.1', '127.0.0.1']);
  });

  it('lets an explicit trustProxy win over the app setting', async () => {
    const h = await host({ trustProxy: false }, {}, (app) => app.set('trust proxy', true));
    expect(await enabledNames(await h.get('/api/flags/proxy', { 'x-forwarded-for': '10.0.0.1' }))).not.toContain('from-10-0-0-1');
  });

  it('serves a proxy created beforehand, and refuses an adapter context hook for it', async () => {
    const proxy = createFlagProxy(proxyOptions(upstream));
    try {
      const flags = createExpressMiddleware(proxy);
      expect(flags.proxy).toBe(proxy);
      expect(flags.name).toBe('flagProxyExpress');
      expect(() => createExpressMiddleware(proxy, { context: () => ({}) })).toThrow(/context hook needs proxy options/);
    } finally {
      await proxy.close();
    }
  });
});
