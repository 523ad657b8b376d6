/**
 * The app's one proxy, served by the route handler (app/api/flags/[...path]/route.js) and asked
 * in process by server components. Created on first use and kept on `globalThis`, because Next.js
 * may load this module more than once (per route bundle, and again on every dev reload).
 */
import { createFetchHandler } from 'flag-proxy/fetch';
import { exampleFlags, sessionUser } from '../../demo';

const KEY = Symbol.for('flag-proxy.example.nextjs');

/**
 * The proxy's fetch handler (with the proxy itself as `handler.proxy`), ready to evaluate.
 * @returns {Promise<import('flag-proxy/fetch').FlagProxyFetchHandler>}
 */
export function flags() {
  globalThis[KEY] ??= (async () => {
    const { options } = await exampleFlags();
    const handler = createFetchHandler(options, {
      prefix: '/api/flags',
      // The userId comes from the app's session, for the SDK's requests as for the page.
      context: (request) => ({ userId: sessionUser(request.headers.get('cookie'))?.id }),
    });
    await handler.proxy.ready;
    return handler;
  })();
  return globalThis[KEY];
}
