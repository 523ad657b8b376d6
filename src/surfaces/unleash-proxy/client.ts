/**
 * Routes for SDKs that talk to the proxy like to a flag server: frontend usage reports
 * (`/proxy/client/metrics`, `/proxy/all/client/metrics`), registration, and the raw definitions
 * for server-side SDKs (`/proxy/client/features`).
 */
import type { IncomingMessage } from 'node:http';
import { CACHE_CONTROL, constantText, json, TEXT_PLAIN, type ProxyResponse } from '../../core/http.js';
import { presentedKey, unauthorized } from '../../core/parts.js';
import type { RouteRequest } from '../../core/route.js';
import { clientMetricsSchema, registerSchema, validate } from '../../core/schemas.js';
import type { EvaluationService } from '../../core/service.js';

const OK = constantText(200, 'OK', TEXT_PLAIN);

function requireKeyOrToken(service: EvaluationService, req: IncomingMessage): void {
  const key = presentedKey(req, service.config);
  if (!service.keys.isClientKey(key) && !service.keys.isServerSideToken(key)) throw unauthorized();
}

/** A frontend SDK's usage report: counts join the proxy's next report upstream. */
export function clientMetricsRoute(service: EvaluationService, { req, body }: RouteRequest): ProxyResponse {
  const report = validate(clientMetricsSchema, body ?? {}, '/body');
  requireKeyOrToken(service, req);
  service.requireOpen();
  const { toggles } = report.bucket;
  // Work is proportional to the number of toggles, never to the counts.
  const names = Object.keys(toggles);
  for (const name of names) {
    const counts = toggles[name];
    if (counts) service.usage.add(name, counts.yes ?? 0, counts.no ?? 0, counts.variants, service.definition(name) !== undefined);
  }
  service.metrics.frontendReport(names.length);
  return OK;
}

/** Accepted and acknowledged; the proxy registers itself upstream. */
export function registerRoute(service: EvaluationService, { req, body }: RouteRequest): ProxyResponse {
  validate(registerSchema, body ?? {}, '/body');
  requireKeyOrToken(service, req);
  service.config.logger.debug('Client registration is accepted and not forwarded upstream.');
  return OK;
}

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
