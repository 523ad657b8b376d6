/**
 * Connect glue: match → CORS → body → route → write. Unknown paths go to `next()` when mounted,
 * else 404. Expected failures are answered in the predecessor's wire format; unexpected ones are
 * masked (standalone) or handed to `next(err)` with `status` and `expose: false` (mounted).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import cors from 'cors';
import { FlagProxyError, isFlagProxyError } from '../errors.js';
import { readJsonBody } from './body.js';
import { constantText, jsonError, text, TEXT_PLAIN, writeResponse, type ProxyResponse } from './http.js';
import type { ProxyParts } from './parts.js';
import { clientFeaturesRoute, clientMetricsRoute, registerRoute } from './routes/client.js';
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

/** Where a request path lands: outside the proxy, inside it (maybe no route), or a route. */
interface Match {
  inside: boolean;
  route: RouteName | undefined;
}

function createMatcher(basePath: string): (pathname: string, method: string) => Match {
  const prefix = `${basePath.toLowerCase()}/proxy`;
  return (pathname, method) => {
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

async function dispatch(parts: ProxyParts, req: IncomingMessage, route: RouteName, search: string): Promise<ProxyResponse> {
  const body = NEEDS_BODY.has(route) && req.method === 'POST' ? await readJsonBody(req, parts.config.maxBodyBytes) : undefined;
  switch (route) {
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

/** The request handler of one proxy. */
export type FlagProxyHandler = (req: IncomingMessage, res: ServerResponse, next?: NextFunction) => void;

/** Builds the Connect-style handler over a proxy's parts. */
export function createHandler(parts: ProxyParts): FlagProxyHandler {
  const { config } = parts;
  const match = createMatcher(config.basePath);
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

  const fail = (req: IncomingMessage, res: ServerResponse, error: unknown, next: NextFunction | undefined): void => {
    if (isFlagProxyError(error) && error.expose) {
      writeResponse(req, res, errorResponse(error));
      return;
    }
    config.logger.error(`Unexpected error on ${req.method} ${(req.url ?? '').split('?')[0]}`, error);
    if (next) {
      next(new FlagProxyError('INTERNAL', 'Internal error', { status: 500, expose: false, cause: error }));
      return;
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    writeResponse(req, res, jsonError(500, 'Internal error'));
  };

  return function flagProxyHandler(req, res, next) {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q === -1 ? url : url.slice(0, q);
    const search = q === -1 ? '' : url.slice(q + 1);
    const method = req.method ?? 'GET';
    const { inside, route } = match(pathname, method);
    // Mounted in a host, only our own paths are ours; standalone, every path is.
    if (next && !inside) {
      next();
      return;
    }
    applyCors(req, res, (corsError?: unknown) => {
      if (corsError) {
        fail(req, res, corsError, next);
        return;
      }
      if (route === undefined) {
        if (next) next();
        else writeResponse(req, res, notFound(req, pathname));
        return;
      }
      dispatch(parts, req, route, search)
        .then((response) => writeResponse(req, res, response))
        .catch((error: unknown) => fail(req, res, error, next));
    });
  };
}
