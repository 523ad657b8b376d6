/**
 * The raw definitions for server-side SDKs and other proxies (`/proxy/client/features`); usage
 * reports and registrations are the shared handlers of ../common/sdk-reports.ts.
 */
import { CACHE_CONTROL, json, type ProxyResponse } from '../../core/http.js';
import { presentedKey, unauthorized } from '../../core/parts.js';
import type { RouteRequest } from '../../core/route.js';
import type { EvaluationService } from '../../core/service.js';

/**
 * Raw definitions for server-side SDKs and other proxies (server-side tokens only). Unlike the
 * predecessor, the segments the definitions refer to are included when there are any: without
 * them an SDK cannot evaluate a strategy that names a segment. With none, the answer is the
 * predecessor's byte for byte.
 */
export function clientFeaturesRoute(service: EvaluationService, { req }: RouteRequest): ProxyResponse {
  service.requireReady();
  if (!service.keys.isServerSideToken(presentedKey(req, service.config))) throw unauthorized();
  const { features, segments } = service.snapshot();
  const body = segments.length > 0 ? { version: 2, features, segments } : { version: 2, features };
  return json(200, body, { 'Cache-control': CACHE_CONTROL });
}
