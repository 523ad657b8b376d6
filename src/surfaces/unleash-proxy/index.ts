/**
 * The `@unleash/proxy` dialect, exactly as the predecessor spoke it: everything below `/proxy`.
 */
import { constantText, TEXT_PLAIN } from '../../core/http.js';
import type { Route, Surface } from '../../core/route.js';
import { evaluateHandler } from '../common/evaluate.js';
import { clientMetricsHandler, registerHandler } from '../common/sdk-reports.js';
import { clientFeaturesRoute } from './client.js';
import { healthRoute, prometheusRoute } from './ops.js';

const ALL_DISABLED_MESSAGE =
  'The /proxy/all endpoint is disabled. Please check your server configuration. To enable it, set the `enableAllEndpoint` configuration option or `ENABLE_ALL_ENDPOINT` environment variable to `true`.';

const EVALUATE = ['GET', 'HEAD', 'POST'] as const;

/** Reports are answered `200 OK` (text), as the predecessor did, from client keys and server-side tokens. */
const reports = { senders: 'client-key-or-token', accepted: constantText(200, 'OK', TEXT_PLAIN) } as const;
const clientMetricsRoute = clientMetricsHandler(reports);

const routes: Route[] = [
  { path: '/proxy', methods: EVALUATE, body: true, handle: evaluateHandler({ all: false, disabledMessage: ALL_DISABLED_MESSAGE }) },
  { path: '/proxy/all', methods: EVALUATE, body: true, handle: evaluateHandler({ all: true, disabledMessage: ALL_DISABLED_MESSAGE }) },
  { path: '/proxy/health', methods: ['GET', 'HEAD'], handle: healthRoute },
  { path: '/proxy/internal-backstage/prometheus', methods: ['GET', 'HEAD'], handle: prometheusRoute },
  { path: '/proxy/client/metrics', methods: ['POST'], body: true, handle: clientMetricsRoute },
  { path: '/proxy/all/client/metrics', methods: ['POST'], body: true, label: '/proxy/client/metrics', handle: clientMetricsRoute },
  { path: '/proxy/client/register', methods: ['POST'], body: true, handle: registerHandler(reports) },
  { path: '/proxy/client/features', methods: ['GET', 'HEAD'], handle: clientFeaturesRoute },
];

/** The `@unleash/proxy` routes. */
export const unleashProxySurface: Surface = { name: 'unleash-proxy', prefixes: ['/proxy'], routes };
