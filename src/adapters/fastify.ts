/**
 * `flag-proxy/fastify`: the proxy as a Fastify plugin, registered under any prefix. Inside its
 * encapsulation context Fastify's body parsers are replaced by a pass-through, so the proxy's own
 * body rules and wire-format errors apply; paths that are not the proxy's go to Fastify's
 * not-found handling and unexpected errors to its error handler.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { FlagProxy, FlagProxyOptions } from '../index.js';
import { adapterProxy, runHandler, type AdapterOptions, type WithProxy } from './shared.js';

/** `url` without its first `count` path segments: `/a/b/proxy?x` less 2 is `/proxy?x`. */
function dropSegments(url: string, count: number): string {
  let index = 0;
  for (let i = 0; i < count && index !== -1; i += 1) index = url.indexOf('/', index + 1);
  return index === -1 ? '/' : url.slice(index);
}

/** Options of {@link createFastifyPlugin}. */
export type FastifyAdapterOptions = AdapterOptions<FastifyRequest>;

/** A Fastify plugin serving `<prefix>/proxy…`, with the proxy it serves. */
export type FlagProxyFastifyPlugin = FastifyPluginAsync & WithProxy;

/**
 * Creates a Fastify plugin for a proxy, or for proxy options (the plugin then creates the proxy
 * and closes it when the Fastify instance starts closing, which ends its event streams). With
 * options and `trustProxy` unset, Fastify's own `trustProxy` setting decides the client address
 * (`request.ip`).
 *
 * @example
 * ```ts
 * import Fastify from 'fastify';
 * import { createFastifyPlugin } from 'flag-proxy/fastify';
 *
 * const app = Fastify();
 * await app.register(createFastifyPlugin(proxyOptions, { context: (request) => ({ userId: request.user?.id }) }), { prefix: '/api/flags' });
 * ```
 */
export function createFastifyPlugin(proxy: FlagProxy | FlagProxyOptions, options: FastifyAdapterOptions = {}): FlagProxyFastifyPlugin {
  const { context } = options;
  const requests = new WeakMap<IncomingMessage, FastifyRequest>();
  const target = adapterProxy(proxy, {
    address: (req) => requests.get(req)?.ip,
    context: context && ((req) => context(requests.get(req)!)),
  });
  const owned = target !== proxy;

  const plugin: FastifyPluginAsync = async function flagProxyFastify(fastify) {
    // Only in this plugin's context: the proxy reads bodies itself (its limit, charset rule and
    // error bodies), while the host's other routes keep Fastify's parsers.
    fastify.removeAllContentTypeParsers();
    fastify.addContentTypeParser('*', (_request, _payload, done) => done(null));
    // Before Fastify waits for in-flight requests, not after (onClose): an open event stream is
    // one that only the proxy's close() ends, so waiting for it first would wait forever.
    if (owned) fastify.addHook('preClose', () => target.close());
    // One catch-all under the prefix: the proxy matches its own paths (any case, extra slashes).
    fastify.all('/*', async (request, reply) => {
      // The prefix may hold parameters (`/tenants/:tenant/flags`), so it is cut by segment count.
      const depth = (request.routeOptions.url ?? '/*').split('/').length - 2;
      requests.set(request.raw, request);
      const passed = await runHandler(target, request.raw, reply.raw, dropSegments(request.raw.url ?? '/', depth));
      if (passed === undefined) return; // the proxy wrote the answer itself (reply.sent is true)
      if (passed.error) throw passed.error;
      return reply.callNotFound();
    });
  };
  return Object.assign(plugin, { proxy: target });
}
