/**
 * How the frontend API reads a lookup. GET and HEAD as `/proxy` does (the context in the query).
 * A POST body is either the Unleash shape, `{ context, toggles? }` (what `unleash-proxy-client`
 * sends with `usePOSTrequests`), or Edge's: the context itself, `{ "userId": "7", … }`. A body
 * with neither `context` nor a `toggles` list is taken as a bare context.
 */
import type { RouteRequest } from '../../core/route.js';
import { isPlainContext, requestSchemas, validate } from '../../core/schemas.js';
import { parseLookup, type Lookup } from '../common/evaluate.js';

function isBareContext(body: unknown): body is Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  return !Object.hasOwn(body, 'context') && !Array.isArray((body as { toggles?: unknown }).toggles);
}

/** The lookup of a frontend API request, in either POST shape. */
export function parseFrontendLookup(request: RouteRequest): Lookup {
  if (request.req.method === 'POST' && isBareContext(request.body)) {
    const body = request.body;
    return { rawContext: isPlainContext(body) ? body : validate(requestSchemas().contextSchema, body, '/body'), names: undefined };
  }
  return parseLookup(request);
}
