/**
 * `GET|POST /api/frontend/features/:name` (Edge's single-flag lookup): one toggle as an object,
 * `{ name, enabled, variant, impressionData }`, for the request's context. A flag that is off for
 * that context answers 200 with `enabled: false` and the disabled variant; a name the flag set
 * does not hold answers 404, as Edge does. Counts usage, as a lookup by name does on `/proxy`.
 */
import { CACHE_CONTROL, json, jsonError, type ProxyResponse } from '../../core/http.js';
import { presentedKey, unauthorized } from '../../core/parts.js';
import type { RouteRequest } from '../../core/route.js';
import type { EvaluationContext } from '../../core/context.js';
import type { EvaluationService } from '../../core/service.js';
import { parseFrontendLookup } from './lookup.js';

export function featureRoute(service: EvaluationService, request: RouteRequest): ProxyResponse | Promise<ProxyResponse> {
  const { req, params } = request;
  const { rawContext } = parseFrontendLookup(request);
  service.requireReady();
  if (!service.keys.isClientKey(presentedKey(req, service.config))) throw unauthorized();
  const name = params.name ?? '';
  if (service.definition(name) === undefined) return jsonError(404, `No flag named ${JSON.stringify(name)}`);
  const respond = (context: EvaluationContext): ProxyResponse => {
    const [toggle] = service.toggles(context, { toggles: [name] });
    return json(200, toggle, { 'Cache-control': CACHE_CONTROL });
  };
  const context = service.requestContext(req, rawContext);
  return context instanceof Promise ? context.then(respond) : respond(context);
}
