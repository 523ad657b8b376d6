/**
 * The Unleash frontend API, as Unleash Edge and the flag server serve it: `/api/frontend…`, and
 * the same routes under Edge's legacy alias `/api/proxy…`. Evaluation answers are those of
 * `/proxy` byte for byte, from the same answer cache (a `/proxy` poll and an `/api/frontend` poll
 * with the same context share one entry), with the same ETag/304, CORS and client keys; unlike
 * `/proxy`, and as Edge does, a POST poll with a matching `If-None-Match` is answered 304 too. Usage
 * reports and registrations are answered `202` with no body, as Edge does.
 */
import type { ProxyResponse } from '../../core/http.js';
import type { Route, Surface } from '../../core/route.js';
import { evaluateHandler } from '../common/evaluate.js';
import { clientMetricsHandler, registerHandler } from '../common/sdk-reports.js';
import { featureRoute } from './feature.js';
import { parseFrontendLookup } from './lookup.js';

const EVALUATE = ['GET', 'HEAD', 'POST'] as const;
const ACCEPTED: ProxyResponse = Object.freeze({ status: 202, headers: Object.freeze({}), etag: false });
const reports = { senders: 'client-key-or-token', accepted: ACCEPTED } as const;
const clientMetrics = clientMetricsHandler(reports);
const register = registerHandler(reports);

const allDisabled = (path: string): string =>
  `The ${path} endpoint is disabled. Please check your server configuration. To enable it, set the \`enableAllEndpoint\` configuration option or \`ENABLE_ALL_ENDPOINT\` environment variable to \`true\`.`;

/** The routes below one prefix (`/api/frontend` or `/api/proxy`). */
function routesUnder(prefix: string): Route[] {
  const evaluate = (all: boolean) => evaluateHandler({ all, disabledMessage: allDisabled(`${prefix}/all`), parse: parseFrontendLookup, postPolls: true });
  return [
    { path: prefix, methods: EVALUATE, body: true, handle: evaluate(false) },
    { path: `${prefix}/all`, methods: EVALUATE, body: true, handle: evaluate(true) },
    { path: `${prefix}/features/:name`, methods: EVALUATE, body: true, handle: featureRoute },
    { path: `${prefix}/client/metrics`, methods: ['POST'], body: true, handle: clientMetrics },
    // SDKs configured with the `/all` URL append their report paths to it.
    { path: `${prefix}/all/client/metrics`, methods: ['POST'], body: true, label: `${prefix}/client/metrics`, handle: clientMetrics },
    { path: `${prefix}/client/register`, methods: ['POST'], body: true, handle: register },
    { path: `${prefix}/all/client/register`, methods: ['POST'], body: true, label: `${prefix}/client/register`, handle: register },
  ];
}

/** The frontend API routes. */
export const frontendSurface: Surface = {
  name: 'frontend',
  prefixes: ['/api/frontend', '/api/proxy'],
  routes: [...routesUnder('/api/frontend'), ...routesUnder('/api/proxy')],
};
