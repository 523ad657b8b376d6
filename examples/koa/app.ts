/**
 * A Koa application with @koa/router: its own route, the proxy on the router under /api/flags, and
 * the browser pages of the Express example (`GET /` demo page, `GET /sdk` bare SDK page, served
 * from ../express/browser so both examples serve the same pages).
 */
import Koa from 'koa';
import Router from '@koa/router';
import type { FlagProxy, FlagProxyOptions } from 'flag-proxy';
import { createKoaMiddleware } from 'flag-proxy/koa';
import { hello, sessionUser, type SessionUser } from '../demo.js';
import { browserPages, PAGE_NAMES } from '../express/browser/pages.js';

/** Builds the app (not listening yet) and the proxy it serves; close the proxy on shutdown. */
export function buildApp(options: FlagProxyOptions): { app: Koa; proxy: FlagProxy } {
  const app = new Koa();
  // The host's own authentication: it puts the signed-in user on ctx.state.
  app.use(async (ctx, next) => {
    ctx.state.user = sessionUser(ctx.get('cookie'));
    await next();
  });

  const flags = createKoaMiddleware(options, {
    prefix: '/api/flags',
    // As in the Express example: the session's userId for a signed-in visitor; an anonymous one
    // may try any userId on the demo pages (a real app claims the key always: see the README).
    context: (ctx) => {
      const user = ctx.state.user as SessionUser | undefined;
      return user ? { userId: user.id } : {};
    },
  });
  const router = new Router({ prefix: '/api' });
  router.get('/hello', (ctx) => {
    ctx.body = hello(ctx.state.user as SessionUser | undefined);
  });
  router.all('/flags/proxy{/*rest}', flags); // GET /api/flags/proxy, /api/flags/proxy/health, …
  app.use(router.routes()).use(router.allowedMethods());

  // The pages: HTML, and each page's script bundled with the browser SDK on first request.
  const pages = browserPages({ proxyPath: '/api/flags/proxy', clientKey: options.clientKeys?.[0] });
  const site = new Router();
  for (const name of PAGE_NAMES) {
    site.get(name === 'demo' ? '/' : `/${name}`, (ctx) => {
      ctx.type = 'html';
      ctx.body = pages.html(name);
    });
  }
  site.get('/assets/:file', async (ctx, next) => {
    const script = await pages.script(ctx.params.file!);
    if (script === undefined) return next();
    ctx.type = 'text/javascript';
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = script;
  });
  app.use(site.routes());
  return { app, proxy: flags.proxy };
}
