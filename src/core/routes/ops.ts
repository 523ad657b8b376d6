/** Operational routes: readiness (`/proxy/health`) and Prometheus metrics. No key needed. */
import { PROMETHEUS_CONTENT_TYPE } from '../../metrics.js';
import { constantText, text, type ProxyResponse } from '../http.js';
import { requireReady, type ProxyParts } from '../parts.js';

const HEALTHY = constantText(200, 'ok');

export function healthRoute(parts: ProxyParts): ProxyResponse {
  requireReady(parts);
  return HEALTHY;
}

export async function prometheusRoute(parts: ProxyParts): Promise<ProxyResponse> {
  requireReady(parts);
  return text(200, await parts.metrics.render(), PROMETHEUS_CONTENT_TYPE);
}
