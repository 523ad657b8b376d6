/**
 * `flag-proxy/koa`: the proxy as Koa middleware, under a `prefix` or inside `@koa/router`. It
 * reuses `ctx.request.body` when a body parser ran, `await next()`s for every path that is not
 * the proxy's, throws unexpected errors into Koa, and resolves once the answer is written.
 */
import type { IncomingMessage } from 'node:http';
import type { Context, Next } from 'koa';
import type { FlagProxy, FlagProxyOptions } from '../index.js';
import { adapterProxy, below, normalizePrefix, runHandler, type AdapterOptions, type WithProxy } from './shared.js';

/** Options of {@link createKoaMiddleware}. */
export interface KoaAdapterOptions extends AdapterOptions<Context> {
  /** Path the proxy is mounted under, e.g. `/api/flags` (whole segments, case-insensitive). @default '' */
  prefix?: string;
}

/** Koa middleware serving `<prefix>/proxy…`, with the proxy it serves. */
export interface FlagProxyKoaMiddleware extends WithProxy {
  (ctx: Context, next: Next): Promise<void>;
}

/**
 * Creates Koa middleware for a proxy, or for proxy options (the middleware then creates the
 * proxy: `middleware.proxy.close()` on shutdown). With options and `trustProxy` unset, the app's
 * own `proxy` setting decides the client address (Koa's `ctx.ip`).
 *
 * @example
 * ```ts
 * import Koa from 'koa';
 * import { createKoaMiddleware } from 'flag-proxy/koa';
 *
 * const app = new Koa();
 * app.use(createKoaMiddleware(proxyOptions, { prefix: '/api/flags', context: (ctx) => ({ userId: ctx.state.user?.id }) }));
 * ```
 */
export function createKoaMiddleware(proxy: FlagProxy | FlagProxyOptions, options: KoaAdapterOptions = {}): FlagProxyKoaMiddleware {
  const { context } = options;
  const prefix = normalizePrefix(options.prefix);
  const contexts = new WeakMap<IncomingMessage, Context>();
  const target = adapterProxy(proxy, {
    address: (req) => contexts.get(req)?.ip,
    context: context && ((req) => context(contexts.get(req)!)),
  });

  const middleware = async function flagProxyKoa(ctx: Context, next: Next): Promise<void> {
    const inner = below(ctx.req.url ?? '/', prefix);
    if (inner === undefined) return next();
    // Koa body parsers leave the body on ctx.request; the proxy reuses one on the node request.
    const req = ctx.req as IncomingMessage & { body?: unknown };
    const parsed = (ctx.request as { body?: unknown }).body;
    if (req.body === undefined && parsed !== undefined) req.body = parsed;
    contexts.set(req, ctx);
    const passed = await runHandler(target, req, ctx.res, inner);
    if (passed === undefined) {
      ctx.respond = false; // the proxy wrote the answer itself
      return;
    }
    if (passed.error) throw passed.error;
    return next();
  };
  return Object.assign(middleware, { proxy: target });
}
