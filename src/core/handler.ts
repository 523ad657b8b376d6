/**
 * Connect glue: match → CORS → body → route → write. Unknown paths go to `next()` when mounted,
 * else 404. Expected failures are answered in the predecessor's wire format; unexpected ones are
 * masked (standalone) or handed to `next(err)` with `status` and `expose: false` (mounted).
 * With `enableOAS`, the docs routes come first and get no CORS headers, as in the predecessor.
 * Every answered request is recorded (route, method, status, duration) in the proxy's metrics.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import cors from 'cors';
import { FlagProxyError, isFlagProxyError } from '../errors.js';
import type { RouteLabel, RouteRecorder } from '../metrics.js';
import { PAGE_ASSET_NAMES } from '../openapi/swagger-ui.js';
import { readJsonBody, requireJsonBodyType } from './body.js';
import { constantText, jsonError, text, TEXT_PLAIN, writeResponse, type ProxyResponse } from './http.js';
import type { ProxyParts } from './parts.js';
import { clientFeaturesRoute, clientMetricsRoute, registerRoute } from './routes/client.js';
import { createDocsRoutes, type DocsRoutes } from './routes/docs.js';
import { evaluateRoute } from './routes/evaluate.js';
import { healthRoute, prometheusRoute } from './routes/ops.js';

/** Connect's `next`. */
export type NextFunction = (err?: unknown) => void;

type RouteName = 'proxy' | 'all' | 'health' | 'prometheus' | 'metrics' | 'register' | 'features';

/** Routes below `<base>/proxy`, by normalized sub-path, with the methods each takes. */
const ROUTES: Record<string, { name: RouteName; methods: readonly string[] }> = {
  '': { name: 'proxy', methods: ['GET', 'HEAD', 'POST'] },
  '/all': { name: 'all', methods: ['GET', 'HEAD', 'POST'] },
  '/health': { name: 'health', methods: ['GET', 'HEAD'] },
  '/internal-backstage/prometheus': { name: 'prometheus', methods: ['GET', 'HEAD'] },
  '/client/metrics': { name: 'metrics', methods: ['POST'] },
  '/all/client/metrics': { name: 'metrics', methods: ['POST'] },
  '/client/register': { name: 'register', methods: ['POST'] },
  '/client/features': { name: 'features', methods: ['GET', 'HEAD'] },
};

const NEEDS_BODY: ReadonlySet<RouteName> = new Set(['proxy', 'all', 'metrics', 'register']);

/** The `route` label each route is recorded under. */
const ROUTE_LABELS: Record<RouteName, RouteLabel> = {
  proxy: '/proxy',
  all: '/proxy/all',
  health: '/proxy/health',
  prometheus: '/proxy/internal-backstage/prometheus',
  metrics: '/proxy/client/metrics',
  register: '/proxy/client/register',
  features: '/proxy/client/features',
};

/** A docs request: the document, the page (at `…/openapi` or `…/openapi/`), or one of its assets. */
type DocsMatch = { kind: 'document' } | { kind: 'page'; trailingSlash: boolean } | { kind: 'asset'; name: string };

function createDocsMatcher(basePath: string): (pathname: string) => DocsMatch | undefined {
  const prefix = `${basePath.toLowerCase()}/docs/openapi`;
  return (pathname) => {
    const path = pathname.replace(/\/{2,}/g, '/').toLowerCase();
    if (!path.startsWith(prefix)) return undefined;
    const rest = path.slice(prefix.length);
    if (rest === '.json' || rest === '.json/') return { kind: 'document' };
    // Both page paths answer (relative asset URLs are written for each), rather than redirect.
    if (rest === '' || rest === '/') return { kind: 'page', trailingSlash: rest === '/' };
    const name = rest.slice(1);
    return rest.startsWith('/') && PAGE_ASSET_NAMES.has(name) ? { kind: 'asset', name } : undefined;
  };
}

/** Where a request path lands: outside the proxy, inside it (maybe no route), or a route. */
interface Match {
  inside: boolean;
  route: RouteName | undefined;
}

function createMatcher(basePath: string): (pathname: string, method: string) => Match {
  const prefix = `${basePath.toLowerCase()}/proxy`;
  // The paths as SDKs write them need no normalising: looked up as they come.
  const exact = new Map(Object.entries(ROUTES).map(([sub, route]) => [`${prefix}${sub}`, route]));
  return (pathname, method) => {
    const known = exact.get(pathname);
    if (known !== undefined) return { inside: true, route: known.methods.includes(method) ? known.name : undefined };
    // Case-insensitive, doubled slashes tolerated, one trailing slash accepted (as Express did).
    let path = pathname.replace(/\/{2,}/g, '/').toLowerCase();
    if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
    if (path !== prefix && !path.startsWith(`${prefix}/`)) return { inside: false, route: undefined };
    const route = ROUTES[path.slice(prefix.length)];
    return { inside: true, route: route && route.methods.includes(method) ? route.name : undefined };
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

/** A route's answer: immediate when the route needs no body and awaits nothing (a poll answered from the cache). */
type Pending = ProxyResponse | Promise<ProxyResponse>;

function runRoute(parts: ProxyParts, req: IncomingMessage, name: RouteName, search: string, body: unknown): Pending {
  switch (name) {
    case 'proxy':
      return evaluateRoute(parts, req, search, body, false);
    case 'all':
      return evaluateRoute(parts, req, search, body, true);
    case 'health':
      return healthRoute(parts);
    case 'prometheus':
      return prometheusRoute(parts);
    case 'metrics':
      return clientMetricsRoute(parts, req, body);
    case 'register':
      return registerRoute(parts, req, body);
    case 'features':
      return clientFeaturesRoute(parts, req);
  }
}

/** Runs a route, after reading the body if it takes one. May throw (synchronously) what the route throws. */
function dispatch(parts: ProxyParts, req: IncomingMessage, name: RouteName, search: string): Pending {
  if (NEEDS_BODY.has(name) && req.method === 'POST') {
    return readJsonBody(req, parts.config.maxBodyBytes).then((body) => runRoute(parts, req, name, search, body));
  }
  requireJsonBodyType(req);
  return runRoute(parts, req, name, search, undefined);
}

const isPromise = (value: Pending): value is Promise<ProxyResponse> => typeof (value as { then?: unknown }).then === 'function';

/** The request handler of one proxy. */
export type FlagProxyHandler = (req: IncomingMessage, res: ServerResponse, next?: NextFunction) => void;

/** Seconds since `started` (a `performance.now()` reading). */
const since = (started: number): number => (performance.now() - started) / 1000;

/** Builds the Connect-style handler over a proxy's parts. */
export function createHandler(parts: ProxyParts): FlagProxyHandler {
  const { config, metrics } = parts;
  const match = createMatcher(config.basePath);
  const matchDocs = config.enableOAS ? createDocsMatcher(config.basePath) : undefined;
  const docs: DocsRoutes | undefined = config.enableOAS ? createDocsRoutes(config) : undefined;
  // One recorder per route, created here, so a request only increments plain numbers.
  const recorders = Object.fromEntries(
    (Object.keys(ROUTE_LABELS) as RouteName[]).map((name) => [name, metrics.route(ROUTE_LABELS[name])]),
  ) as Record<RouteName, RouteRecorder>;
  const unmatched = metrics.route('unmatched');
  const docsDocument = metrics.route('/docs/openapi.json');
  const docsPage = metrics.route('/docs/openapi');
  const corsMiddleware = cors({ ...config.cors });
  // The common case (any origin, not a preflight) needs no per-request work: the same headers
  // the cors middleware would set, precomputed. Everything else goes through the middleware.
  const simpleCors: Array<[string, string]> | undefined =
    config.cors.origin === '*'
      ? [
          ['Access-Control-Allow-Origin', '*'],
          ...(config.cors.credentials ? [['Access-Control-Allow-Credentials', 'true'] as [string, string]] : []),
          ...(config.cors.exposedHeaders.length > 0
            ? [['Access-Control-Expose-Headers', String(config.cors.exposedHeaders)] as [string, string]]
            : []),
        ]
      : undefined;
  const applyCors = (req: IncomingMessage, res: ServerResponse, done: (err?: unknown) => void): void => {
    if (simpleCors && req.method !== 'OPTIONS') {
      for (const [name, value] of simpleCors) res.setHeader(name, value);
      done();
      return;
    }
    corsMiddleware(req, res, done);
  };

  /** Answers (or hands on) an error; returns the status it answered, 500 when handed on or masked. */
  const fail = (req: IncomingMessage, res: ServerResponse, error: unknown, next: NextFunction | undefined): number => {
    if (isFlagProxyError(error) && error.expose) {
      writeResponse(req, res, errorResponse(error));
      return res.statusCode;
    }
    config.logger.error(`Unexpected error on ${req.method} ${(req.url ?? '').split('?')[0]}`, error);
    if (next) {
      next(new FlagProxyError('INTERNAL', 'Internal error', { status: 500, expose: false, cause: error }));
      return 500;
    }
    if (res.headersSent) {
      res.destroy();
      return 500;
    }
    writeResponse(req, res, jsonError(500, 'Internal error'));
    return 500;
  };

  /** Writes a route's answer and records it; an error while writing is failed like a route's. */
  const answer = (
    req: IncomingMessage,
    res: ServerResponse,
    next: NextFunction | undefined,
    recorder: RouteRecorder,
    started: number,
    pending: Pending,
  ): void => {
    const method = req.method ?? 'GET';
    const write = (response: ProxyResponse): void => {
      let status: number;
      try {
        writeResponse(req, res, response);
        status = res.statusCode;
      } catch (error) {
        status = fail(req, res, error, next);
      }
      recorder.record(method, status, since(started));
    };
    if (isPromise(pending)) pending.then(write, (error: unknown) => recorder.record(method, fail(req, res, error, next), since(started)));
    else write(pending);
  };

  const serveDocs = (req: IncomingMessage, res: ServerResponse, next: NextFunction | undefined, found: DocsMatch, started: number): void => {
    const routes = docs as DocsRoutes;
    if (found.kind === 'asset') answer(req, res, next, docsPage, started, routes.asset(found.name));
    else if (found.kind === 'page') answer(req, res, next, docsPage, started, routes.page(found.trailingSlash));
    else answer(req, res, next, docsDocument, started, routes.document());
  };

  return function flagProxyHandler(req, res, next) {
    const started = performance.now();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q === -1 ? url : url.slice(0, q);
    const search = q === -1 ? '' : url.slice(q + 1);
    const method = req.method ?? 'GET';
    if (matchDocs && (method === 'GET' || method === 'HEAD')) {
      const found = matchDocs(pathname);
      if (found) {
        serveDocs(req, res, next, found, started);
        return;
      }
    }
    const { inside, route } = match(pathname, method);
    // Mounted in a host, only our own paths are ours; standalone, every path is.
    if (next && !inside) {
      next();
      return;
    }
    const recorder = route === undefined ? unmatched : recorders[route];
    // A preflight the cors middleware answers itself never comes back here: record it on finish.
    let preflight: (() => void) | undefined;
    if (method === 'OPTIONS') {
      const matched = match(pathname, 'GET').route ?? match(pathname, 'POST').route;
      const preflightRecorder = matched === undefined ? unmatched : recorders[matched];
      preflight = () => preflightRecorder.record(method, res.statusCode, since(started));
      res.once('finish', preflight);
    }
    applyCors(req, res, (corsError?: unknown) => {
      if (preflight) res.off('finish', preflight);
      if (corsError) {
        recorder.record(method, fail(req, res, corsError, next), since(started));
        return;
      }
      if (route === undefined) {
        if (next) {
          next();
          return;
        }
        writeResponse(req, res, notFound(req, pathname));
        unmatched.record(method, 404, since(started));
        return;
      }
      let pending: Pending;
      try {
        pending = dispatch(parts, req, route, search);
      } catch (error) {
        recorder.record(method, fail(req, res, error, next), since(started));
        return;
      }
      answer(req, res, next, recorder, started, pending);
    });
  };
}
