/**
 * Server-side rendering with flags: an Express page rendered with the signed-in user's flags
 * (`proxy.isEnabled` in process), which the browser SDK then takes over without a flicker. The
 * page embeds `proxy.bootstrap(context)` with `bootstrapScript`; its script starts
 * `unleash-proxy-client` with those toggles (`bootstrap`, `bootstrapOverride`) and the echoed
 * context, so the SDK's first fetch answers exactly what the page already shows.
 *
 * - `GET /`: the page (the `session` cookie signs a user in, see ../demo.ts; a `sid` cookie keeps
 *   the session id of gradual rollouts stable across pages);
 * - `GET /assets/ssr.js`: the page's script, bundled with the SDK by esbuild on first request;
 * - `/api/flags/*`: the proxy the SDK polls; `GET /api/hello`: the app's own route.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import { bootstrapScript, type FlagProxy, type FlagProxyOptions } from 'flag-proxy';
import { createExpressMiddleware } from 'flag-proxy/express';
import { hello, sessionUser } from '../demo.js';

/** The flags the page renders, and what it says for each. */
export const PAGE_FLAGS = [
  { name: 'demo.welcome-banner', on: 'Welcome to the new look!', off: 'Welcome.' },
  { name: 'demo.beta-testers', on: 'Beta features: on', off: 'Beta features: off' },
  { name: 'demo.eu-only', on: 'EU offers: shown', off: 'EU offers: none' },
] as const;

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

/** The session id from the `sid` cookie, if it is one this app could have set. */
function sessionIdOf(cookieHeader: string | undefined): string | undefined {
  const sid = /(?:^|;\s*)sid=([0-9a-f-]{36})(?:;|$)/.exec(cookieHeader ?? '')?.[1];
  return sid;
}

/** Bundles the page script once per process; a failed build is retried on the next request. */
function pageScript(): () => Promise<string> {
  let built: Promise<string> | undefined;
  return () => {
    built ??= (async () => {
      // Imported on first use: an app that never serves the page never loads esbuild.
      const { build } = await import('esbuild');
      const result = await build({
        entryPoints: [fileURLToPath(new URL('./browser/ssr.js', import.meta.url))],
        bundle: true,
        format: 'iife',
        platform: 'browser',
        target: ['es2020'],
        minify: true,
        write: false,
        logLevel: 'silent',
      });
      return result.outputFiles[0]!.text;
    })();
    built.catch(() => (built = undefined));
    return built;
  };
}

/** Builds the app (not listening yet) and the proxy it serves; close the proxy on shutdown. */
export function buildApp(options: FlagProxyOptions): { app: Express; proxy: FlagProxy } {
  const app = express();
  app.disable('x-powered-by');

  const flags = createExpressMiddleware(options, {
    // The userId comes from the app's session, for the page and for the SDK's requests alike.
    context: (req) => ({ userId: sessionUser(req.get('cookie'))?.id }),
  });
  const { proxy } = flags;
  const api = express.Router();
  api.get('/hello', (req, res) => void res.json(hello(sessionUser(req.get('cookie')))));
  api.use('/flags', flags);
  app.use('/api', api);

  const script = pageScript();
  app.get('/assets/ssr.js', async (_req, res, next) => {
    try {
      res.type('text/javascript').set('Cache-Control', 'no-cache').send(await script());
    } catch (error) {
      next(error);
    }
  });

  app.get('/', async (req, res, next) => {
    try {
      const user = sessionUser(req.get('cookie'));
      let sessionId = sessionIdOf(req.get('cookie'));
      if (sessionId === undefined) {
        sessionId = randomUUID();
        res.cookie('sid', sessionId, { httpOnly: true, sameSite: 'lax', path: '/' });
      }
      // The context the proxy builds for this request (address, the hook's userId), as the
      // SDK's own requests will get it.
      const context = await proxy.contextFromRequest(req, { sessionId });
      const items = PAGE_FLAGS.map(({ name, on, off }) => {
        const enabled = proxy.isEnabled(name, context);
        return `<li data-flag="${escapeHtml(name)}" data-on="${escapeHtml(on)}" data-off="${escapeHtml(off)}" class="${enabled ? 'on' : 'off'}">${escapeHtml(enabled ? on : off)}</li>`;
      });
      const nonce = randomBytes(16).toString('base64');
      res
        .type('html')
        .set('Content-Security-Policy', `script-src 'self' 'nonce-${nonce}'; object-src 'none'; base-uri 'none'`)
        .set('Cache-Control', 'no-store')
        .send(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>flag-proxy: server-side rendering</title>
<meta name="flag-proxy" data-proxy="/api/flags/proxy" data-key="${escapeHtml(options.clientKeys?.[0] ?? '')}">
${bootstrapScript(proxy.bootstrap(context), { nonce })}
</head>
<body>
<h1>Hello, ${escapeHtml(user?.name ?? 'stranger')}</h1>
<ul id="flags">
${items.join('\n')}
</ul>
<p>SDK: <span id="sdk-state">not started</span></p>
<script src="/assets/ssr.js"></script>
</body>
</html>
`);
    } catch (error) {
      next(error);
    }
  });
  return { app, proxy };
}
