/**
 * Routes for SDKs that talk to the proxy like to a flag server: frontend usage reports
 * (`/proxy/client/metrics`, `/proxy/all/client/metrics`), registration, and the raw definitions
 * for server-side SDKs (`/proxy/client/features`).
 */
import type { IncomingMessage } from 'node:http';
import { CACHE_CONTROL, constantText, json, TEXT_PLAIN, type ProxyResponse } from '../http.js';
import { presentedKey, requireOpen, requireReady, unauthorized, type ProxyParts } from '../parts.js';
import { clientMetricsSchema, registerSchema, validate } from '../schemas.js';

const OK = constantText(200, 'OK', TEXT_PLAIN);

function requireKeyOrToken(parts: ProxyParts, req: IncomingMessage): void {
  const key = presentedKey(req, parts.config);
  if (!parts.keys.isClientKey(key) && !parts.keys.isServerSideToken(key)) throw unauthorized();
}

/** A frontend SDK's usage report: counts join the proxy's next report upstream. */
export function clientMetricsRoute(parts: ProxyParts, req: IncomingMessage, body: unknown): ProxyResponse {
  const report = validate(clientMetricsSchema, body ?? {}, '/body');
  requireKeyOrToken(parts, req);
  requireOpen(parts);
  const { toggles } = report.bucket;
  // Work is proportional to the number of toggles, never to the counts.
  const names = Object.keys(toggles);
  for (const name of names) {
    const counts = toggles[name];
    if (counts) parts.usage.add(name, counts.yes ?? 0, counts.no ?? 0, counts.variants, parts.engine.definition(name) !== undefined);
  }
  parts.metrics.frontendReport(names.length);
  return OK;
}

/** Accepted and acknowledged; the proxy registers itself upstream. */
export function registerRoute(parts: ProxyParts, req: IncomingMessage, body: unknown): ProxyResponse {
  validate(registerSchema, body ?? {}, '/body');
  requireKeyOrToken(parts, req);
  parts.config.logger.debug('Client registration is accepted and not forwarded upstream.');
  return OK;
}

/**
 * Raw definitions for server-side SDKs and other proxies (server-side tokens only). Unlike the
 * predecessor, the segments the definitions refer to are included when there are any: without
 * them an SDK cannot evaluate a strategy that names a segment. With none, the answer is the
 * predecessor's byte for byte.
 */
export function clientFeaturesRoute(parts: ProxyParts, req: IncomingMessage): ProxyResponse {
  requireReady(parts);
  if (!parts.keys.isServerSideToken(presentedKey(req, parts.config))) throw unauthorized();
  const { features, segments } = parts.engine.snapshot();
  const body = segments.length > 0 ? { version: 2, features, segments } : { version: 2, features };
  return json(200, body, { 'Cache-control': CACHE_CONTROL });
}
