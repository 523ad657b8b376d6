/** A Fastify application: an /api plugin with its own route, and the proxy plugin registered in it at /flags. */
import Fastify, { type FastifyInstance } from 'fastify';
import type { FlagProxy, FlagProxyOptions } from 'flag-proxy';
import { createFastifyPlugin } from 'flag-proxy/fastify';
import { hello, sessionUser } from '../demo.js';

/** Builds the app (not listening yet) and the proxy it serves; `app.close()` also closes the proxy. */
export async function buildApp(options: FlagProxyOptions): Promise<{ app: FastifyInstance; proxy: FlagProxy }> {
  const app = Fastify();
  const flags = createFastifyPlugin(options, {
    // The userId comes from the app's session, never from what the browser claims.
    context: (request) => ({ userId: sessionUser(request.headers.cookie)?.id }),
  });
  await app.register(
    async (api) => {
      api.get('/hello', async (request) => hello(sessionUser(request.headers.cookie)));
      await api.register(flags, { prefix: '/flags' }); // GET /api/flags/proxy, /api/flags/proxy/health, …
    },
    { prefix: '/api' },
  );
  return { app, proxy: flags.proxy };
}
