/**
 * Connect glue: match → CORS → body → route → write, over a route table of surfaces. Unknown
 * paths go to `next()` when mounted, else 404. Expected failures are answered in the
 * predecessor's wire format; unexpected ones are masked (standalone) or handed to `next(err)` with
 * `status` and `expose: false` (mounted). Routes declared without CORS (the docs) skip it. Every
 * answered request is recorded (route, method, status, duration) in the proxy's metrics.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FlagProxyError, isFlagProxyError } from '../errors.js';
import type { RouteRecorder } from '../metrics.js';
import { readJsonBody, requireJsonBodyType } from './body.js';
import { createCorsPolicy } from './cors.js';
import { constantText, hasHeaders, jsonError, setHeaderList, text, TEXT_PLAIN, writeResponse, type ConstantHeads, type HeaderList, type ProxyResponse } from './http.js';
import type { Pending, Route, Surface } from './route.js';
import type { EvaluationService } from './service.js';

/** Connect's `next`. */
export type NextFunction = (err?: unknown) => void;

/** Where a request path lands: outside the proxy, inside it (maybe no route), or a route. */
interface Match {
  inside: boolean;
  route: Route | undefined;
  params: Record<string, string>;
}

const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});

/** Case-insensitive, doubled slashes tolerated, one trailing slash accepted (as Express did). */
function normalize(pathname: string): string {
  let path = pathname.replace(/\/{2,}/g, '/').toLowerCase();
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  return path;
}

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** Builds the path matcher of a route table below `basePath`. */
function createMatcher(basePath: string, surfaces: readonly Surface[]): (pathname: string, method: string | undefined) => Match {
  const base = basePath.toLowerCase();
  const exact = new Map<string, Route>();
  // Routes ending in one `:param` segment, by the path before it (with its slash).
  const parametric: Array<{ prefix: string; name: string; route: Route }> = [];
  for (const surface of surfaces) {
    for (const route of surface.routes) {
      const colon = route.path.lastIndexOf('/:');
      if (colon === -1) exact.set(`${base}${route.path}`, route);
      else parametric.push({ prefix: `${base}${route.path.slice(0, colon + 1)}`, name: route.path.slice(colon + 2), route });
    }
  }
  const prefixes = surfaces.flatMap((surface) => surface.prefixes.map((prefix) => `${base}${prefix}`));
  const allows = (route: Route | undefined, method: string | undefined): Route | undefined =>
    route !== undefined && (method === undefined || route.methods.includes(method)) ? route : undefined;
  const within = (path: string): boolean => prefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
  return (pathname, method) => {
    // The paths as SDKs write them need no normalising: looked up as they come.
    const known = allows(exact.get(pathname), method);
    if (known !== undefined) return { inside: true, route: known, params: NO_PARAMS };
    const path = normalize(pathname);
    const inside = within(path);
    const route = allows(exact.get(path), method);
    if (route !== undefined) return { inside: true, route, params: NO_PARAMS };
    for (const candidate of parametric) {
      if (!path.startsWith(candidate.prefix)) continue;
      const rest = path.slice(candidate.prefix.length);
      if (rest === '' || rest.includes('/')) continue;
      // The parameter keeps its case: flag names are case-sensitive.
      const original = pathname.replace(/\/{2,}/g, '/').replace(/\/$/, '');
      const value = decodeSegment(original.slice(original.lastIndexOf('/') + 1));
      if (value === undefined) continue;
      const allowed = allows(candidate.route, method);
      if (allowed === undefined) continue;
      return { inside: true, route: allowed, params: { [candidate.name]: value } };
    }
    return { inside, route: undefined, params: NO_PARAMS };
  };
}

const UNAUTHORIZED = constantText(401, 'Unauthorized', TEXT_PLAIN);

function errorResponse(error: FlagProxyError): ProxyResponse {
  switch (error.code) {
    case 'NOT_READY':
    case 'NOT_ENABLED':
      return text(error.status, error.message);
    case 'UNAUTHORIZED':
      return UNAUTHORIZED;
    case 'VALIDATION_FAILED':
      return jsonError(400, error.message, { validation: error.details });
    case 'UNSUPPORTED_MEDIA_TYPE':
      // The predecessor answered a wrong content type with an empty 415.
      return error.message.startsWith('Unsupported content type') ? { status: 415, headers: {} } : jsonError(415, error.message);
    case 'PAYLOAD_TOO_LARGE': {
      // The rest of the body is not read; the connection cannot be reused.
      const response = jsonError(413, error.message);
      response.headers.Connection = 'close';
      return response;
    }
    default:
      return jsonError(error.status, error.message);
  }
}

function notFound(req: IncomingMessage, pathname: string): ProxyResponse {
  const escaped = pathname.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return {
    status: 404,
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': "default-src 'none'",
      'X-Content-Type-Options': 'nosniff',
    },
    etag: false,
    body: `<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Error</title>\n</head>\n<body>\n<pre>Cannot ${req.method} ${escaped}</pre>\n</body>\n</html>\n`,
  };
}

/** One request on its way through the handler: what every step needs, in one object. */
interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly next: NextFunction | undefined;
  readonly method: string;
  /** A `performance.now()` reading at arrival. */
  readonly started: number;
  readonly recorder: RouteRecorder;
  /** The path and the raw query string (without `?`) of `req.url`. */
  readonly pathname: string;
  readonly search: string;
  readonly params: Record<string, string>;
  /** CORS fields the writer puts first (empty when they are on `res` already, or not wanted). */
  leading: HeaderList;
}

/** Runs a route, after reading the body if it takes one. May throw (synchronously) what the route throws. */
function dispatch(service: EvaluationService, route: Route, req: IncomingMessage, search: string, params: Record<string, string>): Pending {
  if (route.body === true && req.method === 'POST') {
    return readJsonBody(req, service.config.maxBodyBytes).then((body) => route.handle(service, { req, search, body, params }));
  }
  requireJsonBodyType(req);
  return route.handle(service, { req, search, body: undefined, params });
}

const isPromise = (value: Pending): value is Promise<ProxyResponse> => typeof (value as { then?: unknown }).then === 'function';

/** The request handler of one proxy. */
export type FlagProxyHandler = (req: IncomingMessage, res: ServerResponse, next?: NextFunction) => void;

/** Seconds since `started` (a `performance.now()` reading). */
const since = (started: number): number => (performance.now() - started) / 1000;

const NO_HEADERS: HeaderList = Object.freeze([]);

/**
 * Builds the Connect-style handler over a proxy's evaluation service and its route table.
 * (Over ~80 lines: one closure over what is precomputed per proxy, the matcher, the recorders and
 * the CORS policy, so the request path itself touches no per-request setup; its steps, fail,
 * write, run, proceed and the handler, are each under 40 lines.)
 */
export function createHandler(service: EvaluationService, surfaces: readonly Surface[]): FlagProxyHandler {
  const { config, metrics } = service;
  const match = createMatcher(config.basePath, surfaces);
  // One recorder per route, created here, so a request only increments plain numbers.
  const recorders = new Map<Route, RouteRecorder>();
  for (const surface of surfaces) for (const route of surface.routes) recorders.set(route, metrics.route(route.label ?? route.path));
  const unmatched = metrics.route('unmatched');
  const recorderOf = (route: Route | undefined): RouteRecorder => (route === undefined ? unmatched : (recorders.get(route) ?? unmatched));
  const cors = createCorsPolicy(config.cors);
  const constants: ConstantHeads = new WeakMap();
  // Fixed CORS fields that can be set on a response a host already put headers on: those without
  // Vary (which the middleware merges with the host's).
  const settable = cors.fixed !== undefined && !cors.fixed.includes('Vary') ? cors.fixed : undefined;

  /** Answers (or hands on) an error; returns the status it answered, 500 when handed on or masked. */
  const fail = (x: Exchange, error: unknown): number => {
    const { req, res, next } = x;
    if (isFlagProxyError(error) && error.expose) {
      writeResponse(req, res, errorResponse(error), x.leading);
      return res.statusCode;
    }
    config.logger.error(`Unexpected error on ${req.method} ${(req.url ?? '').split('?')[0]}`, error);
    if (next) {
      setHeaderList(res, x.leading);
      next(new FlagProxyError('INTERNAL', 'Internal error', { status: 500, expose: false, cause: error }));
      return 500;
    }
    if (res.headersSent) {
      res.destroy();
      return 500;
    }
    writeResponse(req, res, jsonError(500, 'Internal error'), x.leading);
    return 500;
  };

  /** Writes a route's answer and records it; an error while writing is failed like a route's. */
  const write = (x: Exchange, response: ProxyResponse): void => {
    let status: number;
    try {
      writeResponse(x.req, x.res, response, x.leading, constants);
      status = x.res.statusCode;
    } catch (error) {
      status = fail(x, error);
    }
    x.recorder.record(x.method, status, since(x.started));
  };

  const run = (x: Exchange, route: Route): void => {
    let pending: Pending;
    try {
      pending = dispatch(service, route, x.req, x.search, x.params);
    } catch (error) {
      x.recorder.record(x.method, fail(x, error), since(x.started));
      return;
    }
    if (isPromise(pending)) {
      pending.then(
        (response) => write(x, response),
        (error: unknown) => x.recorder.record(x.method, fail(x, error), since(x.started)),
      );
    } else write(x, pending);
  };

  /** After CORS: the route, or the 404 (standalone) or `next()` (mounted) when there is none. */
  const proceed = (x: Exchange, route: Route | undefined): void => {
    if (route !== undefined) {
      run(x, route);
      return;
    }
    if (x.next) {
      setHeaderList(x.res, x.leading);
      x.next();
      return;
    }
    writeResponse(x.req, x.res, notFound(x.req, x.pathname), x.leading);
    unmatched.record(x.method, 404, since(x.started));
  };

  return function flagProxyHandler(req, res, next) {
    const started = performance.now();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q === -1 ? url : url.slice(0, q);
    const search = q === -1 ? '' : url.slice(q + 1);
    const method = req.method ?? 'GET';
    const { inside, route, params } = match(pathname, method);
    // Mounted in a host, only our own paths are ours; standalone, every path is.
    if (next && !inside) {
      next();
      return;
    }
    const recorder = recorderOf(route);
    const x: Exchange = { req, res, next, method, started, recorder, pathname, search, params, leading: NO_HEADERS };
    // The docs answer without CORS headers, as the predecessor's came before its CORS middleware.
    if (route !== undefined && route.cors === false) {
      run(x, route);
      return;
    }
    // A preflight is recorded on the route it asks about.
    const preflightRecorder = method === 'OPTIONS' ? recorderOf(match(pathname, 'GET').route ?? match(pathname, 'POST').route) : undefined;
    if (preflightRecorder !== undefined) {
      if (cors.answerPreflight(req, res)) {
        preflightRecorder.record(method, res.statusCode, since(started));
        return;
      }
    } else if (cors.fixed !== undefined && !hasHeaders(res)) {
      // The usual case: the CORS fields go on the wire with the answer's own, in one write.
      x.leading = cors.fixed;
      proceed(x, route);
      return;
    } else if (settable !== undefined) {
      setHeaderList(res, settable);
      proceed(x, route);
      return;
    }
    // The general path: the cors middleware. A preflight it answers itself never comes back here:
    // record it on finish.
    let preflight: (() => void) | undefined;
    if (preflightRecorder !== undefined) {
      preflight = () => preflightRecorder.record(method, res.statusCode, since(started));
      res.once('finish', preflight);
    }
    cors.middleware(req, res, (corsError?: unknown) => {
      if (preflight) res.off('finish', preflight);
      if (corsError) {
        recorder.record(method, fail(x, corsError), since(started));
        return;
      }
      proceed(x, route);
    });
  };
}
