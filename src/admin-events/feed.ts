/**
 * A read-only, mountable feed of the flag server's events for a host's own users: the admin
 * token stays on the server, each request is authorised by the host, and upstream failures are
 * answered without their details.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { json, writeResponse } from '../core/http.js';
import { FlagProxyError, isFlagProxyError, type FlagProxyErrorCode } from '../errors.js';
import { invalidOption } from './checks.js';
import { createAdminEventsClient } from './client.js';
import type { AdminEventsClient, AdminEventsClientOptions } from './types.js';

/**
 * Options of {@link createAdminEventsHandler}.
 *
 * @example
 * ```ts
 * const options: AdminEventsHandlerOptions = {
 *   client: { flagUrl: process.env.FLAG_URL!, adminToken: process.env.FLAG_ADMIN_TOKEN! },
 *   authorize: (req) => req.headers['x-role'] === 'auditor',
 * };
 * ```
 */
export interface AdminEventsHandlerOptions {
  /** A client from {@link createAdminEventsClient}, or the options to create one. */
  client: AdminEventsClient | AdminEventsClientOptions;
  /**
   * Decides whether a request may read the feed. Required: the feed is the flag server's audit log
   * and has no open mode. Only `true` (or a promise of it) lets the request through; anything
   * else answers 403. A throw is treated as an unexpected error.
   */
  authorize: (req: IncomingMessage) => boolean | Promise<boolean>;
  /**
   * A path prefix the handler strips itself, for hosts that don't (plain `node:http`). Leave it
   * empty under Express, Connect or Koa mounts, which strip their mount path from `req.url`.
   * @default ''
   */
  basePath?: string;
}

/**
 * The Connect-style middleware {@link createAdminEventsHandler} returns. It never throws; errors
 * it does not answer itself go to `next(err)` when there is a `next`.
 *
 * @example
 * ```ts
 * const handler: AdminEventsHandler = createAdminEventsHandler({ client, authorize });
 * http.createServer((req, res) => handler(req, res)).listen(8080);
 * ```
 */
export type AdminEventsHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  next?: (err?: unknown) => void,
) => void;

type Route = { kind: 'list' } | { kind: 'toggle'; name: string };

/** What an authorised caller sees for each upstream failure; the details stay in server logs. */
const PUBLIC_UPSTREAM_MESSAGES: Partial<Record<FlagProxyErrorCode, string>> = {
  UNAUTHORIZED: 'The flag server refused the configured admin token.',
  FORBIDDEN: 'The configured flag server token is not an admin token.',
  NOT_FOUND: 'The flag server does not serve the admin events API at the configured URL.',
  UPSTREAM: 'The flag server answered with an error.',
  NETWORK: 'The flag server could not be reached.',
  INVALID_RESPONSE: 'The flag server sent an answer that could not be read.',
  TIMEOUT: 'The flag server did not answer in time.',
};

/**
 * Creates a read-only, mountable feed of the flag server's events:
 * `GET <mount>/events[?project=P][&all=true]` and `GET <mount>/events/<toggle>[?all=true]`
 * answer JSON shaped like the client's results. The admin token stays on the server; the
 * caller's own `Authorization` header is never forwarded. Upstream failures answer 502 (504 on a
 * timeout) with `{error, code}`; unknown paths go to `next()` (404 without one); other methods
 * than GET answer 405.
 *
 * Works as a plain `node:http` listener and as Express/Connect middleware.
 *
 * @throws FlagProxyError `INVALID_OPTION` when `authorize` is missing or the client options are bad.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { createAdminEventsHandler } from 'flag-proxy/admin-events';
 *
 * const app = express();
 * app.use('/audit', createAdminEventsHandler({
 *   client: { flagUrl: process.env.FLAG_URL!, adminToken: process.env.FLAG_ADMIN_TOKEN! },
 *   authorize: async (req) => (await sessionOf(req))?.isAdmin === true,
 * }));
 * // GET /audit/events?project=default&all=true
 * ```
 */
export function createAdminEventsHandler(options: AdminEventsHandlerOptions): AdminEventsHandler {
  if (typeof options !== 'object' || options === null) {
    throw invalidOption('createAdminEventsHandler needs an options object with client and authorize');
  }
  const { authorize } = options;
  if (typeof authorize !== 'function') {
    throw invalidOption(
      'createAdminEventsHandler needs an authorize(req) function: the event feed exposes the flag server audit log and has no open mode',
    );
  }
  if (typeof options.client !== 'object' || options.client === null) {
    throw invalidOption('createAdminEventsHandler needs client: an admin events client or its options');
  }
  const client = isClient(options.client) ? options.client : createAdminEventsClient(options.client);
  const basePath = normalizeBasePath(options.basePath);

  async function serve(req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void): Promise<void> {
    const target = routeOf(req.url ?? '/', basePath);
    if (target === undefined) {
      if (next !== undefined) next();
      else send(req, res, 404, { error: 'Not found' });
      return;
    }
    if (req.method !== 'GET') {
      res.setHeader('allow', 'GET');
      send(req, res, 405, { error: 'Method not allowed; the event feed is read-only (GET)' });
      return;
    }
    if (target === 'bad-path') {
      send(req, res, 400, { error: 'The toggle name in the path is not valid percent-encoding' });
      return;
    }
    const query = parseQuery(req.url ?? '/');
    if (typeof query === 'string') {
      send(req, res, 400, { error: query });
      return;
    }

    // Stop paging upstream when the caller goes away.
    const abort = new AbortController();
    const onClose = (): void => {
      if (!res.writableFinished) abort.abort();
    };
    res.once('close', onClose);
    try {
      if ((await authorize(req)) !== true) {
        send(req, res, 403, { error: 'Forbidden' });
        return;
      }
      const body =
        target.kind === 'list'
          ? await client.list({ project: query.project, all: query.all, signal: abort.signal })
          : await client.forToggle(target.name, { all: query.all, signal: abort.signal });
      send(req, res, 200, body);
    } catch (err) {
      if (abort.signal.aborted || res.headersSent) return;
      answerFailure(err, { req, res, next });
    } finally {
      res.removeListener('close', onClose);
    }
  }

  return function adminEventsHandler(req, res, next) {
    serve(req, res, next).catch((err: unknown) => {
      // Only a failure while writing the answer lands here; nothing more can be sent.
      if (next !== undefined) next(err);
      else res.destroy();
    });
  };
}

/** Which feed a URL asks for, under `basePath`; `undefined` for a path that is not the feed's. */
function routeOf(rawUrl: string, basePath: string): Route | 'bad-path' | undefined {
  const q = rawUrl.indexOf('?');
  let path = q === -1 ? rawUrl : rawUrl.slice(0, q);
  if (basePath !== '') {
    if (path.toLowerCase() === basePath.toLowerCase()) path = '/';
    else if (path.toLowerCase().startsWith(`${basePath.toLowerCase()}/`)) path = path.slice(basePath.length);
    else return undefined;
  }
  if (/^\/events\/?$/i.test(path)) return { kind: 'list' };
  const match = /^\/events\/([^/]+)\/?$/i.exec(path);
  if (match === null) return undefined;
  try {
    return { kind: 'toggle', name: decodeURIComponent(match[1]!) };
  } catch {
    return 'bad-path';
  }
}

/** Answers a failed read: 400 for a bad argument, 502/504 with a public message, else `next(err)` or 500. */
function answerFailure(
  err: unknown,
  { req, res, next }: { req: IncomingMessage; res: ServerResponse; next: ((err?: unknown) => void) | undefined },
): void {
  if (isFlagProxyError(err) && err.code === 'BAD_REQUEST') {
    send(req, res, 400, { error: err.message, code: err.code });
    return;
  }
  const publicMessage = isFlagProxyError(err) ? PUBLIC_UPSTREAM_MESSAGES[err.code] : undefined;
  if (isFlagProxyError(err) && publicMessage !== undefined) {
    send(req, res, err.code === 'TIMEOUT' ? 504 : 502, { error: publicMessage, code: err.code });
    return;
  }
  const internal = new FlagProxyError('INTERNAL', 'The admin events feed failed unexpectedly', {
    status: 500,
    expose: false,
    cause: err,
  });
  if (next !== undefined) next(internal);
  else send(req, res, 500, { error: 'Internal error' });
}

function parseQuery(rawUrl: string): { project?: string; all: boolean } | string {
  const q = rawUrl.indexOf('?');
  const params = new URLSearchParams(q === -1 ? '' : rawUrl.slice(q + 1));
  const projects = params.getAll('project').filter((p) => p !== '');
  if (projects.length > 1) return 'Give project at most once';
  const alls = params.getAll('all');
  if (alls.length > 1) return 'Give all at most once';
  const all = alls[0]?.toLowerCase();
  if (all !== undefined && !['', 'true', '1', 'false', '0'].includes(all)) return 'all must be true or false';
  return { project: projects[0], all: all === '' || all === 'true' || all === '1' };
}

function normalizeBasePath(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value !== 'string' || value.includes('?') || value.includes('#')) {
    throw invalidOption('basePath must be a path such as /audit');
  }
  const trimmed = value.replace(/\/+$/, '');
  if (trimmed === '') return '';
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

function isClient(value: AdminEventsClient | AdminEventsClientOptions): value is AdminEventsClient {
  return typeof (value as AdminEventsClient).list === 'function' && typeof (value as AdminEventsClient).forToggle === 'function';
}

/** The feed is an audit log: keep it out of shared caches. */
const FEED_HEADERS = { 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' };

function send(req: IncomingMessage, res: ServerResponse, status: number, body: unknown): void {
  writeResponse(req, res, json(status, body, FEED_HEADERS));
}
