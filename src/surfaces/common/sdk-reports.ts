/**
 * What SDKs send besides their lookups, shared by every surface that takes it: usage reports
 * (`…/client/metrics`) and registrations (`…/client/register`). Usage counts join the proxy's own
 * next report upstream (bounded: counts are validated, distinct names are capped by the usage
 * reporter, and work is proportional to the number of toggles in a report, never to the counts).
 * Registrations are acknowledged and not forwarded: the proxy registers itself.
 */
import type { IncomingMessage } from 'node:http';
import type { ProxyResponse } from '../../core/http.js';
import { presentedKey, unauthorized } from '../../core/parts.js';
import type { RouteRequest } from '../../core/route.js';
import { isPlainRegistration, isPlainUsageReport, requestSchemas, validate, type UsageReport } from '../../core/schemas.js';
import type { EvaluationService } from '../../core/service.js';

/** Who may send a report: frontend clients too (client keys), or server-side SDKs only (server-side tokens). */
export type ReportSenders = 'client-key-or-token' | 'server-side-token';

/** How a report route answers and whom it accepts. */
export interface ReportRouteOptions {
  senders: ReportSenders;
  /** The answer to an accepted report (the predecessor's `200 OK`, or the flag server's `202`). */
  accepted: ProxyResponse;
}

function requireSender(service: EvaluationService, req: IncomingMessage, senders: ReportSenders): void {
  const key = presentedKey(req, service.config);
  const allowed = service.keys.isServerSideToken(key) || (senders === 'client-key-or-token' && service.keys.isClientKey(key));
  if (!allowed) throw unauthorized();
}

/**
 * A usage report route. Both report formats have the same shape where it matters (`appName`,
 * `instanceId`, `bucket.start/stop/toggles`): a frontend SDK's (`instanceId: "browser"`) and a
 * server SDK's (with `connectionId`, `platformName`, `impactMetrics`, … which are ignored).
 */
export function clientMetricsHandler({ senders, accepted }: ReportRouteOptions) {
  return function clientMetrics(service: EvaluationService, { req, body }: RouteRequest): ProxyResponse {
    // What SDKs send takes the hand-written check; the schema judges (and words the 400 for) the rest.
    const report: UsageReport = isPlainUsageReport(body) ? body : validate(requestSchemas().clientMetricsSchema, body ?? {}, '/body');
    requireSender(service, req, senders);
    service.requireOpen();
    const { toggles } = report.bucket;
    const names = Object.keys(toggles);
    for (const name of names) {
      const counts = toggles[name];
      if (counts) service.usage.add(name, counts.yes ?? 0, counts.no ?? 0, counts.variants, service.definition(name) !== undefined);
    }
    service.metrics.frontendReport(names.length);
    return accepted;
  };
}

/** A registration route: validated, acknowledged, not forwarded upstream. */
export function registerHandler({ senders, accepted }: ReportRouteOptions) {
  return function register(service: EvaluationService, { req, body }: RouteRequest): ProxyResponse {
    if (!isPlainRegistration(body)) validate(requestSchemas().registerSchema, body ?? {}, '/body');
    requireSender(service, req, senders);
    service.config.logger.debug('Client registration is accepted and not forwarded upstream.');
    return accepted;
  };
}
