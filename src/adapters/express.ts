/**
 * `flag-proxy/express`: the proxy as Express middleware, mounted at any path. Express strips the
 * mount path from `req.url`, which is all the proxy matches on; a body `express.json()` already
 * parsed is reused; unknown paths go to `next()` and unexpected errors to `next(err)`.
 * Uses no Express runtime API beyond `req.ip`, so Express 4 and 5 behave the same.
 */
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { FlagProxy, FlagProxyOptions } from '../index.js';
import { adapterProxy, type AdapterOptions, type WithProxy } from './shared.js';

/** Options of {@link createExpressMiddleware}. */
export type ExpressAdapterOptions = AdapterOptions<Request>;

/** Express middleware serving `<mount>/proxy…`, with the proxy it serves. */
export interface FlagProxyExpressMiddleware extends WithProxy {
  (req: Request, res: Response, next: NextFunction): void;
}

/**
 * Creates Express middleware for a proxy, or for proxy options (the middleware then creates the
 * proxy: `middleware.proxy.close()` on shutdown). With options and `trustProxy` unset, the app's
 * own `trust proxy` setting decides the client address (Express's `req.ip`).
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { createExpressMiddleware } from 'flag-proxy/express';
 *
 * const app = express();
 * const flags = createExpressMiddleware(
 *   { flagUrl: 'https://flags.example.com/api/', flagApiToken: process.env.FLAG_API_TOKEN, clientKeys: ['browser-key'] },
 *   { context: (req) => ({ userId: req.session?.userId }) },
 * );
 * app.use('/api/flags', flags); // GET /api/flags/proxy, /api/flags/proxy/health, …
 * ```
 */
export function createExpressMiddleware(
  proxy: FlagProxy | FlagProxyOptions,
  options: ExpressAdapterOptions = {},
): FlagProxyExpressMiddleware {
  const { context } = options;
  // Express decorates the node request itself, so the node request is the Express request.
  const target = adapterProxy(proxy, {
    address: (req: IncomingMessage) => (req as Partial<Request>).ip,
    context: context && ((req: IncomingMessage) => context(req as Request)),
  });
  const middleware = function flagProxyExpress(req: Request, res: Response, next: NextFunction): void {
    target(req, res, next);
  };
  return Object.assign(middleware, { proxy: target });
}
