/**
 * A typed client for the flag server's read-only admin events API, and a Connect-style handler
 * that serves the same feed to a host's own users while the admin token stays on the server.
 *
 * The legacy feeds cap their answers (100 events, or 50 for a project or a toggle), so full
 * history is read from `GET /api/admin/search/events`, page by page.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { inspect } from 'node:util';
import type { z } from 'zod';
import { json, writeResponse } from '../core/http.js';
import { FlagProxyError, isFlagProxyError, type FlagProxyErrorCode } from '../errors.js';
import { redactUrlCredentials } from '../logger.js';
import {
  adminEventListSchema,
  adminEventSearchPageSchema,
  toggleEventListSchema,
  type AdminEvent,
  type AdminEventList,
  type AdminEventSearchPage,
  type ToggleEventList,
} from './schemas.js';

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

/**
 * The `fetch` the client calls: the global one, undici's, or a test double. It is always called
 * with a string URL and a `GET` init.
 *
 * @example
 * ```ts
 * const logged: AdminEventsFetch = (url, init) => { console.log(url); return fetch(url, init); };
 * ```
 */
export type AdminEventsFetch = (url: string, init: RequestInit) => Promise<Response>;

/**
 * Options of {@link createAdminEventsClient}.
 *
 * @example
 * ```ts
 * const options: AdminEventsClientOptions = {
 *   flagUrl: process.env.FLAG_URL!,
 *   adminToken: process.env.FLAG_ADMIN_TOKEN!,
 *   timeoutMs: 5_000,
 * };
 * ```
 */
export interface AdminEventsClientOptions {
  /**
   * Where the flag server is: its API URL (the proxy's `FLAG_URL`, e.g.
   * `https://flags.example.com/api/`) or its bare root (`https://flags.example.com`). Both reach
   * `<root>/api/admin/events`.
   */
  flagUrl: string | URL;
  /** An ADMIN-type API token of the flag server. Sent as `Authorization`; never logged or echoed. */
  adminToken: string;
  /** The fetch implementation. @default globalThis.fetch */
  fetch?: AdminEventsFetch;
  /** Milliseconds one request may take, body included; `0` disables the limit. @default 10000 */
  timeoutMs?: number;
  /** Aborts every request of this client (e.g. at shutdown). Requests reject with its reason. */
  signal?: AbortSignal;
}

/**
 * Options of {@link AdminEventsClient.list}.
 *
 * @example
 * ```ts
 * await client.list({ project: 'default', all: true });
 * ```
 */
export interface AdminEventsListOptions {
  /** Only events of this project (id). */
  project?: string;
  /** Page through the search endpoint and return every matching event, not just the capped feed. @default false */
  all?: boolean;
  /** Aborts this call; it rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Options of {@link AdminEventsClient.forToggle}.
 *
 * @example
 * ```ts
 * await client.forToggle('checkout', { all: true });
 * ```
 */
export interface AdminEventsToggleOptions {
  /** Page through the search endpoint and return every event of the toggle. @default false */
  all?: boolean;
  /** Aborts this call; it rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Filters shared by {@link AdminEventsClient.search} and {@link AdminEventsClient.iterate}.
 *
 * @example
 * ```ts
 * const filter: AdminEventsFilter = { project: 'default', type: ['feature-created', 'feature-archived'] };
 * ```
 */
export interface AdminEventsFilter {
  /** Only events of this project (sent as `project=IS:<project>`). */
  project?: string;
  /** Only events of this toggle (sent as `feature=IS:<name>`). */
  feature?: string;
  /** Only events of this type, or of any of these types (`type=IS:a` / `type=IS_ANY_OF:a,b`). */
  type?: string | readonly string[];
  /** Aborts the call; it rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Options of {@link AdminEventsClient.search}: the filters plus one page window.
 *
 * @example
 * ```ts
 * await client.search({ feature: 'checkout', limit: 10, offset: 0 });
 * ```
 */
export interface AdminEventsSearchOptions extends AdminEventsFilter {
  /** Page size, 1 to 1000 (the server's own maximum). @default 50 */
  limit?: number;
  /** Events to skip, newest first. @default 0 */
  offset?: number;
}

/**
 * Options of {@link AdminEventsClient.iterate}: the filters plus the page size used underneath.
 *
 * @example
 * ```ts
 * for await (const event of client.iterate({ project: 'default', pageSize: 500 })) console.log(event.id);
 * ```
 */
export interface AdminEventsIterateOptions extends AdminEventsFilter {
  /** Events fetched per request, 1 to 1000. @default 100 */
  pageSize?: number;
}

/**
 * The client {@link createAdminEventsClient} returns. Every method rejects with a
 * {@link FlagProxyError} whose `code` is one of `UNAUTHORIZED`, `FORBIDDEN`, `NOT_FOUND`,
 * `UPSTREAM`, `TIMEOUT`, `NETWORK`, `INVALID_RESPONSE` (or `BAD_REQUEST` for a bad argument).
 *
 * @example
 * ```ts
 * const client: AdminEventsClient = createAdminEventsClient({ flagUrl, adminToken });
 * const { events } = await client.forToggle('checkout');
 * ```
 */
export interface AdminEventsClient {
  /**
   * `GET /api/admin/events[?project=P]`: the newest 100 events (50 with a project), newest first,
   * and `totalEvents`, the full count. With `all: true` every matching event is returned.
   */
  list(options?: AdminEventsListOptions): Promise<AdminEventList>;
  /**
   * `GET /api/admin/events/<name>`: the newest 50 events of one toggle. An unknown toggle gives an
   * empty list. With `all: true` every event of the toggle is returned.
   */
  forToggle(name: string, options?: AdminEventsToggleOptions): Promise<ToggleEventList>;
  /** One page of `GET /api/admin/search/events`, newest first, with `total`, the full count. */
  search(options?: AdminEventsSearchOptions): Promise<AdminEventSearchPage>;
  /**
   * Every matching event, newest first, fetched page by page from the search endpoint until
   * `total` is reached or a page comes back empty. `break` stops it without another request.
   * An event recorded while iterating never appears twice (it may be missed). A bad `pageSize`
   * or filter throws `BAD_REQUEST` at the call itself, before any request.
   */
  iterate(options?: AdminEventsIterateOptions): AsyncGenerator<AdminEvent, void, undefined>;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_TIMER_MS = 2_147_483_647;
const SEARCH_DEFAULT_LIMIT = 50;
const SEARCH_MAX_LIMIT = 1000;
const DEFAULT_PAGE_SIZE = 100;
const REDACTED = '[redacted]';

/**
 * Creates a client for the flag server's admin events API. Options are validated here, so a bad
 * URL or a missing token fails at once with code `INVALID_OPTION`. Nothing runs until a method is
 * called.
 *
 * @example
 * ```ts
 * import { createAdminEventsClient } from 'flag-proxy/admin-events';
 *
 * const client = createAdminEventsClient({
 *   flagUrl: 'https://flags.example.com/api/',
 *   adminToken: process.env.FLAG_ADMIN_TOKEN!,
 * });
 * const recent = await client.list({ project: 'default' });          // at most 50
 * const everything = await client.list({ project: 'default', all: true });
 * for await (const event of client.iterate({ feature: 'checkout' })) {
 *   if (event.type === 'feature-created') break;
 * }
 * ```
 */
export function createAdminEventsClient(options: AdminEventsClientOptions): AdminEventsClient {
  if (typeof options !== 'object' || options === null) {
    throw invalidOption('createAdminEventsClient needs an options object with flagUrl and adminToken');
  }
  const root = resolveRoot(options.flagUrl);
  const token = checkToken(options.adminToken);
  const maybeFetch: unknown = options.fetch ?? globalThis.fetch;
  if (typeof maybeFetch !== 'function') {
    throw invalidOption('fetch must be a function (no global fetch is available in this runtime)');
  }
  const fetchImpl = maybeFetch as AdminEventsFetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > MAX_TIMER_MS) {
    throw invalidOption(`timeoutMs must be an integer from 0 to ${MAX_TIMER_MS} (0: no limit)`);
  }
  const clientSignal = options.signal;
  if (clientSignal !== undefined && !isAbortSignal(clientSignal)) {
    throw invalidOption('signal must be an AbortSignal');
  }

  const redact = (text: string): string => redactUrlCredentials(text.split(token).join(REDACTED));

  function upstreamError(
    code: FlagProxyErrorCode,
    message: string,
    details: Record<string, unknown>,
    cause?: unknown,
  ): FlagProxyError {
    return new FlagProxyError(code, message, {
      status: code === 'TIMEOUT' ? 504 : 502,
      details,
      ...(cause === undefined ? {} : { cause: safeCause(cause, token, redact) }),
    });
  }

  async function getJson<S extends z.ZodType>(
    path: string,
    query: URLSearchParams | undefined,
    schema: S,
    callSignal: AbortSignal | undefined,
  ): Promise<z.infer<S>> {
    const url = new URL(path, root);
    if (query !== undefined) url.search = query.toString();
    const where = `GET ${url.origin}${url.pathname}${url.search}`;

    const timeout = timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined;
    const sources = [timeout, clientSignal, callSignal].filter((s): s is AbortSignal => s !== undefined);
    const signal = sources.length > 0 ? AbortSignal.any(sources) : undefined;
    // A caller's abort is theirs to handle: reject with their reason, as fetch itself does.
    const interrupted = (err: unknown): unknown => {
      if (signal?.aborted !== true) return undefined;
      if (timeout !== undefined && signal.reason === timeout.reason) {
        return upstreamError('TIMEOUT', `No answer from the flag server within ${timeoutMs} ms (${where})`, {
          url: where,
          timeoutMs,
        }, err);
      }
      return signal.reason;
    };

    let res: Response;
    let text: string;
    try {
      res = await fetchImpl(url.href, {
        method: 'GET',
        headers: { authorization: token, accept: 'application/json' },
        ...(signal === undefined ? {} : { signal }),
      });
      text = await res.text();
    } catch (err) {
      const stop = interrupted(err);
      if (stop !== undefined) throw stop;
      throw upstreamError('NETWORK', `Could not reach the flag server (${where}): ${networkReason(err, redact)}`, {
        url: where,
      }, err);
    }

    if (!res.ok) throw statusError(res, text, where, redact);

    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (err) {
      const type = res.headers.get('content-type') ?? 'no content type';
      throw upstreamError('INVALID_RESPONSE', `The flag server's answer is not JSON (${where}, ${type})`, {
        url: where,
        status: res.status,
        contentType: type,
      }, err);
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((issue) => ({
        path: formatPath(issue.path),
        code: issue.code,
        message: redact(issue.message),
      }));
      const first = issues[0]!;
      const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
      throw upstreamError(
        'INVALID_RESPONSE',
        `The flag server's answer has an unexpected shape at ${first.path}: ${first.message}${more} (${where})`,
        { url: where, status: res.status, issues },
      );
    }
    return parsed.data;
  }

  async function search(opts: AdminEventsSearchOptions = {}): Promise<AdminEventSearchPage> {
    const limit = opts.limit ?? SEARCH_DEFAULT_LIMIT;
    const offset = opts.offset ?? 0;
    checkInteger('limit', limit, 1, SEARCH_MAX_LIMIT);
    checkInteger('offset', offset, 0, Number.MAX_SAFE_INTEGER);
    const query = filterQuery(opts);
    query.set('limit', String(limit));
    query.set('offset', String(offset));
    return getJson('api/admin/search/events', query, adminEventSearchPageSchema, opts.signal);
  }

  function iterate(opts: AdminEventsIterateOptions = {}): AsyncGenerator<AdminEvent, void, undefined> {
    const pageSize = opts.pageSize ?? DEFAULT_PAGE_SIZE;
    checkInteger('pageSize', pageSize, 1, SEARCH_MAX_LIMIT);
    filterQuery(opts); // validate now, not on the first next()
    return pages({ ...opts, pageSize });
  }

  async function* pages(opts: AdminEventsIterateOptions & { pageSize: number }): AsyncGenerator<AdminEvent, void, undefined> {
    // Offsets count from the newest event, so one recorded mid-way shifts the next page by one;
    // remembering ids keeps such an event from being yielded twice.
    const seen = new Set<number>();
    let offset = 0;
    for (;;) {
      const page = await search({ ...opts, limit: opts.pageSize, offset });
      for (const event of page.events) {
        if (seen.has(event.id)) continue;
        seen.add(event.id);
        yield event;
      }
      offset += page.events.length;
      if (page.events.length === 0 || offset >= page.total) return;
    }
  }

  async function collect(filter: AdminEventsFilter): Promise<AdminEvent[]> {
    const events: AdminEvent[] = [];
    for await (const event of iterate(filter)) events.push(event);
    return events;
  }

  return {
    async list(opts: AdminEventsListOptions = {}): Promise<AdminEventList> {
      const project = optionalName('project', opts.project);
      if (opts.all === true) {
        const events = await collect({ project, signal: opts.signal });
        return { version: 1, events, totalEvents: events.length };
      }
      const query = project === undefined ? undefined : new URLSearchParams({ project });
      return getJson('api/admin/events', query, adminEventListSchema, opts.signal);
    },

    async forToggle(name: string, opts: AdminEventsToggleOptions = {}): Promise<ToggleEventList> {
      const segment = toggleSegment(name);
      if (opts.all === true) {
        const events = await collect({ feature: name, signal: opts.signal });
        return { version: 1, toggleName: name, events, totalEvents: events.length };
      }
      return getJson(`api/admin/events/${segment}`, undefined, toggleEventListSchema, opts.signal);
    },

    search,
    iterate,
  };
}

/**
 * Accepts the API URL (`…/api`, `…/api/`) or the server root (with or without a path prefix) and
 * returns the root with a trailing slash, so relative paths resolve under it.
 */
function resolveRoot(flagUrl: unknown): URL {
  if (typeof flagUrl !== 'string' && !(flagUrl instanceof URL)) {
    throw invalidOption('flagUrl is required (env FLAG_URL): the flag server URL, e.g. https://flags.example.com/api/');
  }
  let url: URL;
  try {
    url = new URL(String(flagUrl));
  } catch {
    throw invalidOption('flagUrl (env FLAG_URL) is not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalidOption(`flagUrl (env FLAG_URL) must use http or https, not ${url.protocol}`);
  }
  if (url.username !== '' || url.password !== '') {
    throw invalidOption('flagUrl (env FLAG_URL) must not contain credentials; pass the token as adminToken');
  }
  const path = url.pathname.replace(/\/+$/, '').replace(/\/api$/i, '');
  const root = new URL(url.origin);
  root.pathname = `${path}/`;
  return root;
}

function checkToken(token: unknown): string {
  if (typeof token !== 'string' || token.trim() === '') {
    throw invalidOption('adminToken is required (env FLAG_ADMIN_TOKEN): an ADMIN API token of the flag server');
  }
  // fetch would reject such a header with a message that quotes the value, i.e. the token.
  if (!/^[\t\x20-\x7e\x80-\xff]+$/.test(token) || token !== token.trim()) {
    throw invalidOption('adminToken (env FLAG_ADMIN_TOKEN) contains characters not allowed in an HTTP header');
  }
  return token;
}

function filterQuery(opts: AdminEventsFilter): URLSearchParams {
  const query = new URLSearchParams();
  const project = optionalName('project', opts.project);
  const feature = optionalName('feature', opts.feature);
  if (project !== undefined) query.set('project', `IS:${project}`);
  if (feature !== undefined) query.set('feature', `IS:${feature}`);
  if (opts.type !== undefined) {
    const types = typeof opts.type === 'string' ? [opts.type] : [...opts.type];
    if (types.length === 0 || types.some((t) => typeof t !== 'string' || t === '' || t.includes(','))) {
      throw badRequest('type must be a non-empty event type or a non-empty list of them (without commas)');
    }
    query.set('type', types.length === 1 ? `IS:${types[0]}` : `IS_ANY_OF:${types.join(',')}`);
  }
  return query;
}

function optionalName(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw badRequest(`${name} must be a non-empty string`);
  return value;
}

function toggleSegment(name: unknown): string {
  if (typeof name !== 'string' || name === '') throw badRequest('the toggle name must be a non-empty string');
  // URL parsers treat "." and ".." (even percent-encoded) as path navigation, so they cannot be sent.
  if (name === '.' || name === '..') throw badRequest(`"${name}" cannot be used as a toggle name in a URL`);
  return encodeURIComponent(name);
}

function checkInteger(name: string, value: unknown, min: number, max: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw badRequest(`${name} must be an integer from ${min} to ${max}`);
  }
}

function statusError(res: Response, text: string, where: string, redact: (s: string) => string): FlagProxyError {
  const status = res.status;
  const details: Record<string, unknown> = { status, url: where };
  const upstreamMessage = messageOf(text);
  if (upstreamMessage !== undefined) details.upstreamMessage = redact(upstreamMessage);
  const options = { status: 502, details };
  switch (status) {
    case 401:
      return new FlagProxyError(
        'UNAUTHORIZED',
        `The flag server rejected the admin token (401 Unauthorized, ${where}); check adminToken / FLAG_ADMIN_TOKEN`,
        options,
      );
    case 403:
      return new FlagProxyError(
        'FORBIDDEN',
        `The flag server refused access (403 Forbidden, ${where}): the admin events API needs an ADMIN token; ` +
          'client and frontend tokens are refused',
        options,
      );
    case 404:
      return new FlagProxyError(
        'NOT_FOUND',
        `The flag server has no such endpoint (404 Not Found, ${where}); flagUrl should be the server root or its ` +
          '/api/ URL, and paging needs a server with /api/admin/search/events',
        options,
      );
    default:
      return new FlagProxyError(
        'UPSTREAM',
        `The flag server answered ${status}${res.statusText === '' ? '' : ` ${res.statusText}`} (${where})`,
        options,
      );
  }
}

/** The `message` of a JSON error body, or the start of a text one; nothing from an HTML page. */
function messageOf(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  try {
    const body: unknown = JSON.parse(trimmed);
    if (typeof body === 'object' && body !== null && typeof (body as { message?: unknown }).message === 'string') {
      return (body as { message: string }).message.slice(0, 500);
    }
    return undefined;
  } catch {
    return trimmed.startsWith('<') ? undefined : trimmed.slice(0, 200);
  }
}

/** `ECONNREFUSED 127.0.0.1:9` rather than undici's bare "fetch failed". */
function networkReason(err: unknown, redact: (s: string) => string): string {
  let current: unknown = err;
  let reason = 'network error';
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const e = current as { message?: unknown; code?: unknown; cause?: unknown };
    if (typeof e.code === 'string') {
      const text = typeof e.message === 'string' ? e.message : '';
      return redact(text.includes(e.code) ? text : `${e.code}${text === '' ? '' : `: ${text}`}`);
    }
    if (typeof e.message === 'string' && e.message !== '') reason = e.message;
    current = e.cause;
  }
  return redact(reason);
}

/**
 * Keeps the original cause for debugging unless anything reachable from it mentions the token or
 * a URL with credentials; then a copy of its message alone, redacted.
 */
function safeCause(cause: unknown, token: string, redact: (s: string) => string): unknown {
  const seen = inspect(cause, { depth: 6, showHidden: false, breakLength: Infinity });
  if (!seen.includes(token) && redactUrlCredentials(seen) === seen) return cause;
  const message = cause instanceof Error ? cause.message : String(cause);
  const clean = new Error(redact(message));
  clean.name = cause instanceof Error ? cause.name : 'Error';
  return clean;
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out === '' ? '(root)' : out;
}

function isAbortSignal(value: unknown): value is AbortSignal {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as AbortSignal).aborted === 'boolean' &&
    typeof (value as AbortSignal).addEventListener === 'function'
  );
}

function invalidOption(message: string): FlagProxyError {
  return new FlagProxyError('INVALID_OPTION', message, { status: 500, expose: false });
}

function badRequest(message: string): FlagProxyError {
  return new FlagProxyError('BAD_REQUEST', message, { status: 400 });
}

// ---------------------------------------------------------------------------------------------
// Mountable read-only feed
// ---------------------------------------------------------------------------------------------

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

  function route(rawUrl: string): Route | 'bad-path' | undefined {
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

  async function serve(req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void): Promise<void> {
    const target = route(req.url ?? '/');
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
