/** Operational routes: readiness (`/proxy/health`) and Prometheus metrics. No key needed. */
import { PROMETHEUS_CONTENT_TYPE } from '../../metrics.js';
import { constantText, text, type ProxyResponse } from '../../core/http.js';
import type { EvaluationService } from '../../core/service.js';

const HEALTHY = constantText(200, 'ok');

export function healthRoute(service: EvaluationService): ProxyResponse {
  service.requireReady();
  return HEALTHY;
}

export async function prometheusRoute(service: EvaluationService): Promise<ProxyResponse> {
  service.requireReady();
  return text(200, await service.metrics.render(), PROMETHEUS_CONTENT_TYPE);
}
