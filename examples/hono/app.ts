/**
 * A Hono application: an /api router with its own route, and the proxy's fetch handler on it at
 * /flags. The same handler serves Next.js route handlers or any other fetch-style runtime on Node.
 */
import { Hono } from 'hono';
import type { HttpBindings } from '@hono/node-server';
import type { FlagProxy, FlagProxyOptions } from 'flag-proxy';
import { createFetchHandler } from 'flag-proxy/fetch';
import { hello, sessionUser } from '../demo.js';

/** Builds the app (serve it with `@hono/node-server`, or call `app.request()`) and the proxy it serves. */
export function buildApp(options: FlagProxyOptions): { app: Hono<{ Bindings: Partial<HttpBindings> }>; proxy: FlagProxy } {
  const flags = createFetchHandler(options, {
    prefix: '/api/flags',
    // The userId comes from the app's session, never from what the browser claims.
    context: (request) => ({ userId: sessionUser(request.headers.get('cookie'))?.id }),
  });
  const api = new Hono<{ Bindings: Partial<HttpBindings> }>();
  api.get('/hello', (c) => c.json(hello(sessionUser(c.req.header('cookie')))));
  // On @hono/node-server the node request gives the client address; a Request alone has none.
  api.all('/flags/*', (c) => flags(c.req.raw, { remoteAddress: c.env?.incoming?.socket.remoteAddress }));
  const app = new Hono<{ Bindings: Partial<HttpBindings> }>();
  app.route('/api', api);
  return { app, proxy: flags.proxy };
}
