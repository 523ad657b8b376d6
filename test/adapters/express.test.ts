/** flag-proxy/express: mounting, next(), next(err), a body the host parsed, trust proxy, host-derived context. */
import http from 'node:http';
import express, { type ErrorRequestHandler, type Request } from 'express';
import { describe, expect, it } from 'vitest';
import { createFlagProxy, type FlagProxyOptions } from 'flag-proxy';
import { createExpressMiddleware, type ExpressAdapterOptions } from 'flag-proxy/express';
import { addressRecorder, CLIENT_KEY, enabledNames, expectHostParsedBodyUsed, expectUnexpectedErrorToHost, listen, MAPPED_FORWARDED_FOR, proxyOptions, throwingEnricher, useAdapterSuite } from './fixtures.js';

const suite = useAdapterSuite();
const { cleanups } = suite;

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
  const flags = createExpressMiddleware(proxyOptions(suite.upstream(), options), adapter);
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
    await expectHostParsedBodyUsed(h.base);
  });

  it("sends unexpected errors to the host's error handler with status 500 and expose false", async () => {
    const h = await host({ expCustomEnrichers: [throwingEnricher] });
    await expectUnexpectedErrorToHost(h.get, h.errors);
    expect(h.errors).toHaveLength(1);
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

  it("never lets an anonymous caller choose a userId with the README's example, also behind a trusted hop", async () => {
    // The README's Express example: no session for an anonymous caller, so the hook returns { userId: undefined }.
    const readme: ExpressAdapterOptions = { context: (req) => ({ userId: (req as Request & { session?: { userId?: string } }).session?.userId }) };
    const direct = await host({}, readme);
    expect(await enabledNames(await direct.get('/api/flags/proxy?userId=7'))).not.toContain('only-user-7');
    // Behind a trusted hop the adapter layers the framework's address under the hook: the hook still owns userId.
    const proxied = await host({}, readme, (app) => app.set('trust proxy', 'loopback'));
    const names = await enabledNames(await proxied.get('/api/flags/proxy?userId=7', { 'x-forwarded-for': '10.0.0.1' }));
    expect(names).toContain('from-10-0-0-1');
    expect(names).not.toContain('only-user-7');
    // The core option's field stays when the adapter's hook leaves the same key unset.
    const both = await host({ context: () => ({ userId: '7' }) }, readme);
    expect(await enabledNames(await both.get('/api/flags/proxy?userId=1'))).toContain('only-user-7');
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
    const proxy = createFlagProxy(proxyOptions(suite.upstream()));
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
