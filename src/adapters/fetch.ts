/**
 * `flag-proxy/fetch`: the proxy as a web-standard handler, `(request) => Promise<Response>`, for
 * Hono, Next.js route handlers and any fetch-style runtime on Node. It runs the same Connect
 * handler over an in-memory HTTP connection, so statuses, headers and bodies are those of node:http
 * (less hop-by-hop headers).
 */
import type { IncomingMessage } from 'node:http';
import type { FlagProxy, FlagProxyOptions } from '../index.js';
import { createNodeBridge } from './node-bridge.js';
import { adapterProxy, below, normalizePrefix, type AdapterOptions, type WithProxy } from './shared.js';

/** Options of {@link createFetchHandler}. */
export interface FetchAdapterOptions extends AdapterOptions<Request> {
  /** Path the proxy is mounted under, e.g. `/api/flags` (whole segments, case-insensitive). @default '' */
  prefix?: string;
}

/** What a fetch runtime knows about the connection, which a `Request` does not carry. */
export interface FetchRequestInfo {
  /** The client's address (e.g. Hono's `getConnInfo(c).remote.address`); the default context `remoteAddress`. @default undefined */
  remoteAddress?: string;
}

/**
 * A fetch handler with the proxy it serves. It answers 404 for paths that are not the proxy's and
 * rejects with the masked FlagProxyError (`status: 500`, `expose: false`) on an unexpected failure,
 * so the host's own error handling answers it.
 */
export interface FlagProxyFetchHandler extends WithProxy {
  (request: Request, info?: FetchRequestInfo): Promise<Response>;
}

/**
 * Creates a fetch handler for a proxy, or for proxy options (the handler then creates the proxy:
 * `handler.proxy.close()` on shutdown). No server has to listen.
 *
 * @example
 * ```ts
 * import { Hono } from 'hono';
 * import { createFetchHandler } from 'flag-proxy/fetch';
 *
 * const flags = createFetchHandler(proxyOptions, { prefix: '/api/flags' });
 * const app = new Hono();
 * app.all('/api/flags/*', (c) => flags(c.req.raw));
 * ```
 */
export function createFetchHandler(proxy: FlagProxy | FlagProxyOptions, options: FetchAdapterOptions = {}): FlagProxyFetchHandler {
  const { context } = options;
  const prefix = normalizePrefix(options.prefix);
  const requests = new WeakMap<IncomingMessage, Request>();
  const target = adapterProxy(proxy, { context: context && ((req) => context(requests.get(req)!)) });
  const exchange = createNodeBridge(target);

  const handler = async function flagProxyFetch(request: Request, info: FetchRequestInfo = {}): Promise<Response> {
    const url = new URL(request.url);
    const path = below(`${url.pathname}${url.search}`, prefix);
    const outcome = path === undefined ? { passed: {} } : await exchange(request, path, info.remoteAddress, (req) => {
            requests.set(req, request);
            // The path as the client sent it, where Express keeps it: routes that hand out URLs need it.
            (req as IncomingMessage & { originalUrl?: string }).originalUrl = `${url.pathname}${url.search}`;
          });
    if ('response' in outcome) return outcome.response;
    if (outcome.passed.error) throw outcome.passed.error;
    return new Response('Not Found', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' } });
  };
  return Object.assign(handler, { proxy: target });
}
