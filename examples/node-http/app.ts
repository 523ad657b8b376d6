/**
 * A plain node:http application: its own route, and the proxy at /api/flags. The handler is
 * Connect-style, so the app passes it a `next` that serves everything the proxy does not.
 */
import http from 'node:http';
import { createFlagProxy, type FlagProxy, type FlagProxyOptions } from 'flag-proxy';
import { hello, sessionUser } from '../demo.js';

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
}

/** Builds the app (not listening yet) and the proxy it serves; close the proxy on shutdown. */
export function buildApp(options: FlagProxyOptions): { server: http.Server; proxy: FlagProxy } {
  const proxy = createFlagProxy({
    ...options,
    // node:http has no mount-path stripping, so the proxy's own prefix puts it under /api/flags.
    proxyBasePath: '/api/flags',
    // The userId comes from the app's session, never from what the browser claims.
    context: (req) => ({ userId: sessionUser(req.headers.cookie)?.id }),
  });
  const server = http.createServer((req, res) => {
    proxy(req, res, (error?: unknown) => {
      if (error) return sendJson(res, 500, { error: 'Something went wrong' });
      if (req.method === 'GET' && req.url === '/api/hello') return sendJson(res, 200, hello(sessionUser(req.headers.cookie)));
      sendJson(res, 404, { error: 'Not Found' });
    });
  });
  return { server, proxy };
}
