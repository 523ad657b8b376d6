/**
 * The `@unleash/proxy` dialect, exactly as the predecessor spoke it: everything below `/proxy`.
 */
import type { Route, Surface } from '../../core/route.js';
import { clientFeaturesRoute, clientMetricsRoute, registerRoute } from './client.js';
import { evaluateHandler } from './evaluate.js';
import { healthRoute, prometheusRoute } from './ops.js';

const ALL_DISABLED_MESSAGE =
  'The /proxy/all endpoint is disabled. Please check your server configuration. To enable it, set the `enableAllEndpoint` configuration option or `ENABLE_ALL_ENDPOINT` environment variable to `true`.';

const EVALUATE = ['GET', 'HEAD', 'POST'] as const;

const routes: Route[] = [
  { path: '/proxy', methods: EVALUATE, body: true, handle: evaluateHandler({ all: false, disabledMessage: ALL_DISABLED_MESSAGE }) },
  { path: '/proxy/all', methods: EVALUATE, body: true, handle: evaluateHandler({ all: true, disabledMessage: ALL_DISABLED_MESSAGE }) },
  { path: '/proxy/health', methods: ['GET', 'HEAD'], handle: healthRoute },
  { path: '/proxy/internal-backstage/prometheus', methods: ['GET', 'HEAD'], handle: prometheusRoute },
  { path: '/proxy/client/metrics', methods: ['POST'], body: true, handle: clientMetricsRoute },
  { path: '/proxy/all/client/metrics', methods: ['POST'], body: true, label: '/proxy/client/metrics', handle: clientMetricsRoute },
  { path: '/proxy/client/register', methods: ['POST'], body: true, handle: registerRoute },
  { path: '/proxy/client/features', methods: ['GET', 'HEAD'], handle: clientFeaturesRoute },
];

/** The `@unleash/proxy` routes. */
export const unleashProxySurface: Surface = { name: 'unleash-proxy', prefixes: ['/proxy'], routes };
