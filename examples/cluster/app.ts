/**
 * The app each worker runs: a flag proxy in a plain node:http server. Nothing here knows about
 * the cluster; `server.ts` decides how many copies run.
 */
import http from 'node:http';
import { createFlagProxy, type FlagProxy, type FlagProxyOptions } from 'flag-proxy';

/** One worker's server and proxy. */
export interface App {
  server: http.Server;
  proxy: FlagProxy;
}

/**
 * Builds the worker's app (not listening yet).
 *
 * @example
 * ```ts
 * const { server, proxy } = buildApp({ flagUrl, flagApiToken, clientKeys: ['browser-key'] });
 * server.listen(3000);
 * ```
 */
export function buildApp(options: FlagProxyOptions): App {
  const proxy = createFlagProxy(options);
  return { server: http.createServer(proxy), proxy };
}
