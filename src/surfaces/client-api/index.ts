/**
 * The flag server's client API for server SDKs (`unleash-client` with `url: <proxy>/api/`, every
 * other language's SDK, `@unleash/nextjs`'s `getDefinitions`) and for other proxies, flag-proxy
 * among them (its `flagUrl` may be another flag-proxy's `<base>/api/`): the definitions
 * (`/api/client/features`, `/api/client/features/<name>`), and usage reports and registrations
 * (`/api/client/metrics`, `/api/client/register`, answered 202), whose counts join the proxy's
 * own report upstream. Server-side tokens only: with none configured, every route answers 401.
 */
import { json, jsonError, type ProxyResponse } from '../../core/http.js';
import { acceptsEncoding } from '../../http-headers.js';
import { presentedKey, unauthorized } from '../../core/parts.js';
import type { Route, RouteRequest, Surface } from '../../core/route.js';
import type { EvaluationService } from '../../core/service.js';
import { clientMetricsHandler, registerHandler } from '../common/sdk-reports.js';
import { createDefinitionsCache, DEFINITIONS_CACHE_CONTROL, parseFilter } from './features.js';

const ACCEPTED: ProxyResponse = Object.freeze({ status: 202, headers: Object.freeze({}), etag: false });
const reports = { senders: 'server-side-token', accepted: ACCEPTED } as const;

function requireToken(service: EvaluationService, { req }: RouteRequest): void {
  if (!service.keys.isServerSideToken(presentedKey(req, service.config))) throw unauthorized();
}

/** One flag's definition, or 404 when the flag set does not hold it. */
function featureRoute(service: EvaluationService, request: RouteRequest): ProxyResponse {
  service.requireReady();
  requireToken(service, request);
  const name = request.params.name ?? '';
  const definition = service.definition(name);
  if (definition === undefined) return jsonError(404, `No flag named ${JSON.stringify(name)}`);
  return json(200, definition, { 'Cache-Control': DEFINITIONS_CACHE_CONTROL });
}

/** The client API of one proxy (its answers are kept per proxy). */
export function createClientApiSurface(): Surface {
  const definitions = createDefinitionsCache();
  const routes: Route[] = [
    {
      path: '/api/client/features',
      methods: ['GET', 'HEAD'],
      handle(service, request) {
        service.requireReady();
        requireToken(service, request);
        const { req } = request;
        // HEAD is answered without a body, so without one to gzip.
        const acceptsGzip = req.method !== 'HEAD' && acceptsEncoding(req, 'gzip');
        return definitions.answer(service.snapshot(), parseFilter(request.search), req.headers['if-none-match'], acceptsGzip);
      },
    },
    { path: '/api/client/features/:name', methods: ['GET', 'HEAD'], handle: featureRoute },
    { path: '/api/client/metrics', methods: ['POST'], body: true, handle: clientMetricsHandler(reports) },
    { path: '/api/client/register', methods: ['POST'], body: true, handle: registerHandler(reports) },
  ];
  return { name: 'client-api', prefixes: ['/api/client'], routes };
}
