/**
 * An Express application: an /api router with its own route, the proxy mounted on it at /flags,
 * and two browser pages that use the proxy through the Unleash browser SDK (browser/pages.ts):
 * `GET /` shows the flags for a context you choose, `GET /sdk` is a bare SDK page.
 */
import express, { type Express } from 'express';
import type { FlagProxy, FlagProxyOptions } from 'flag-proxy';
import { createExpressMiddleware } from 'flag-proxy/express';
import { hello, sessionUser } from '../demo.js';
import { browserPages, type PageName } from './browser/pages.js';

/** Builds the app (not listening yet) and the proxy it serves; close the proxy on shutdown. */
export function buildApp(options: FlagProxyOptions): { app: Express; proxy: FlagProxy } {
  const app = express();
  app.disable('x-powered-by');
  // Behind a load balancer, `app.set('trust proxy', 1)`: with trustProxy unset, the proxy's
  // default remoteAddress then follows Express's req.ip.

  const flags = createExpressMiddleware(options, {
    // A signed-in visitor's userId comes from the app's session, never from what the browser
    // claims. This demo lets an anonymous visitor try any userId (its pages are about choosing a
    // context), so the hook claims the key only when there is a session; a real app returns
    // `{ userId: sessionUser(...)?.id }` always, and an anonymous caller then has no userId.
    context: (req) => {
      const user = sessionUser(req.get('cookie'));
      return user ? { userId: user.id } : {};
    },
  });
  const api = express.Router();
  api.get('/hello', (req, res) => void res.json(hello(sessionUser(req.get('cookie')))));
  api.use('/flags', flags); // GET /api/flags/proxy, /api/flags/proxy/health, …
  app.use('/api', api);

  // The pages: HTML, and each page's script bundled with the browser SDK on first request.
  const pages = browserPages({ proxyPath: '/api/flags/proxy', clientKey: options.clientKeys?.[0] });
  const page = (name: PageName) => (_req: express.Request, res: express.Response) => void res.type('html').send(pages.html(name));
  app.get('/', page('demo'));
  app.get('/sdk', page('sdk'));
  app.get('/assets/:file', async (req, res, next) => {
    const script = await pages.script(req.params.file);
    if (script === undefined) return next();
    res.type('text/javascript').set('Cache-Control', 'no-cache').send(script);
  });
  return { app, proxy: flags.proxy };
}
