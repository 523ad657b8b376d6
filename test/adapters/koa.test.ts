/** flag-proxy/koa: prefix and @koa/router mounting, await next(), errors into Koa, ctx.request.body, trust, host-derived context. */
import http from 'node:http';
import Koa, { type Context } from 'koa';
import Router from '@koa/router';
import { describe, expect, it } from 'vitest';
import type { FlagProxyOptions } from 'flag-proxy';
import { createKoaMiddleware, type KoaAdapterOptions } from 'flag-proxy/koa';
import { addressRecorder, CLIENT_KEY, enabledNames, expectHostParsedBodyUsed, expectUnexpectedErrorToHost, listen, MAPPED_FORWARDED_FOR, proxyOptions, throwingEnricher, useAdapterSuite } from './fixtures.js';

const suite = useAdapterSuite();
const { cleanups } = suite;

/** A tiny JSON body parser, as @koa/bodyparser behaves: the body lands on ctx.request.body. */
async function bodyParser(ctx: Context, next: Koa.Next): Promise<void> {
  if (ctx.method === 'POST' && ctx.is('application/json')) {
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    (ctx.request as { body?: unknown }).body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  }
  await next();
}

interface Seen {
  /** What an outer middleware saw after `await next()`: [path, status]. */
  finished: Array<[string, number]>;
  errors: unknown[];
}

async function start(app: Koa, flags: { proxy: { ready: Promise<void>; close(): Promise<void> } }, address: '127.0.0.1' | '::' = '127.0.0.1') {
  const server = await listen(http.createServer(app.callback()), address);
  cleanups.push(async () => {
    await flags.proxy.close();
    await server.close();
  });
  await flags.proxy.ready;
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${server.base}${path}`, { headers: { authorization: CLIENT_KEY, ...headers } });
  return { base: server.base, get };
}

/** Outer middleware (timing/logging style, and an error handler), the proxy under a prefix, then host routes. */
async function host(
  options: Partial<FlagProxyOptions> = {},
  adapter: KoaAdapterOptions = {},
  configure?: (app: Koa) => void,
  address: '127.0.0.1' | '::' = '127.0.0.1',
) {
  const app = new Koa();
  const seen: Seen = { finished: [], errors: [] };
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      seen.errors.push(error);
      ctx.status = (error as { status?: number }).status ?? 500;
      ctx.body = 'host error handler';
    }
    seen.finished.push([ctx.path, ctx.status]);
  });
  configure?.(app);
  const flags = createKoaMiddleware(proxyOptions(suite.upstream(), options), { prefix: '/api/flags', ...adapter });
  app.use(flags);
  app.use((ctx) => {
    ctx.body = `host route ${ctx.path}`;
  });
  return { seen, ...(await start(app, flags, address)) };
}

describe('createKoaMiddleware', () => {
  it('serves the proxy under its prefix, awaits next() for other paths, and lets outer middleware finish after it', async () => {
    const h = await host();
    expect(await enabledNames(await h.get('/api/flags/proxy'))).toEqual(['everyone']);
    expect(await (await h.get('/api/orders')).text()).toBe('host route /api/orders');
    expect(await (await h.get('/api/flags/proxy/unknown')).text()).toBe('host route /api/flags/proxy/unknown');
    expect(await (await h.get('/api/flagsx/proxy')).text()).toBe('host route /api/flagsx/proxy');
    expect((await h.get('/API/Flags/proxy/health')).status).toBe(200);
    expect(h.seen.finished).toEqual([
      ['/api/flags/proxy', 200],
      ['/api/orders', 200],
      ['/api/flags/proxy/unknown', 200],
      ['/api/flagsx/proxy', 200],
      ['/API/Flags/proxy/health', 200],
    ]);
  });

  it('works inside @koa/router, next to the router’s own routes', async () => {
    const app = new Koa();
    const flags = createKoaMiddleware(proxyOptions(suite.upstream()), { prefix: '/api/flags' });
    const router = new Router({ prefix: '/api' });
    router.get('/orders', (ctx) => {
      ctx.body = { orders: [] };
    });
    router.all('/flags/proxy{/*rest}', flags);
    app.use(router.routes());
    const h = await start(app, flags);
    expect(await enabledNames(await h.get('/api/flags/proxy'))).toEqual(['everyone']);
    expect(await (await h.get('/api/flags/proxy/health')).text()).toBe('ok');
    expect(await (await h.get('/api/orders')).json()).toEqual({ orders: [] });
    expect((await h.get('/api/flags/other')).status).toBe(404);
  });

  it('reuses ctx.request.body when a body parser ran', async () => {
    const h = await host({}, {}, (app) => app.use(bodyParser));
    await expectHostParsedBodyUsed(h.base);
  });

  it("throws unexpected errors into Koa's error handling with status 500 and expose false", async () => {
    const h = await host({ expCustomEnrichers: [throwingEnricher] });
    await expectUnexpectedErrorToHost(h.get, h.seen.errors);
  });

  it("answers Koa's default 500 without details when nothing catches the error", async () => {
    const app = new Koa();
    app.silent = true;
    const flags = createKoaMiddleware(proxyOptions(suite.upstream(), { expCustomEnrichers: [throwingEnricher] }), { prefix: '/api/flags' });
    app.use(flags);
    const h = await start(app, flags);
    const res = await h.get('/api/flags/proxy');
    expect(res.status).toBe(500);
    expect(await res.text()).toBe('Internal Server Error');
  });

  it('replaces a spoofed userId with the one the hook derives from the Koa context', async () => {
    const h = await host(
      {},
      { context: (ctx) => ({ userId: (ctx.state as { user?: { id: string } }).user?.id ?? 'anonymous' }) },
      (app) =>
        app.use(async (ctx, next) => {
          if (ctx.get('x-session') === 'session-of-7') ctx.state.user = { id: '7' };
          await next();
        }),
    );
    expect(await enabledNames(await h.get('/api/flags/proxy?userId=7'))).not.toContain('only-user-7');
    expect(await enabledNames(await h.get('/api/flags/proxy?userId=1', { 'x-session': 'session-of-7' }))).toContain('only-user-7');
  });

  it("follows the app's proxy setting while trustProxy is unset", async () => {
    const trusting = await host({}, {}, (app) => {
      app.proxy = true;
    });
    expect(await enabledNames(await trusting.get('/api/flags/proxy', { 'x-forwarded-for': '10.0.0.1' }))).toContain('from-10-0-0-1');
    const plain = await host();
    expect(await enabledNames(await plain.get('/api/flags/proxy', { 'x-forwarded-for': '10.0.0.1' }))).not.toContain('from-10-0-0-1');
  });

  it('gives an IPv4 client the IPv4 form of its address when ctx.ip has the mapped one (server on ::)', async () => {
    const { seen, options } = addressRecorder();
    const h = await host(options, {}, (app) => void (app.proxy = true), '::');
    expect(await enabledNames(await h.get('/api/flags/proxy', MAPPED_FORWARDED_FOR))).toContain('from-10-0-0-1');
    expect(await enabledNames(await h.get('/api/flags/proxy'))).toEqual(['everyone']);
    expect(seen).toEqual(['10.0.0.1', '127.0.0.1']);
  });
});
