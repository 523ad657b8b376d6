/**
 * `GET|POST /proxy` and `GET|POST /proxy/all`: evaluate toggles for one context and answer only
 * the results (name, enabled, variant, impressionData), never the rules.
 */
import type { IncomingMessage } from 'node:http';
import qs from 'qs';
import type { UnleashContext } from '../../evaluation/types.js';
import type { WireVariant } from '../../evaluation/engine.js';
import { FlagProxyError } from '../../errors.js';
import { buildContext, overlayContext, type EvaluationContext } from '../context.js';
import { CACHE_CONTROL, json, type ProxyResponse } from '../http.js';
import { clientIp, presentedKey, requireReady, unauthorized, type ProxyParts } from '../parts.js';
import { lookupSchema, querySchema, validate } from '../schemas.js';

/** One toggle in an answer. Key order is the wire order. */
export interface ToggleResult {
  name: string;
  enabled: boolean;
  variant: WireVariant;
  impressionData?: boolean;
}

const QUERY_OPTIONS = { plainObjects: true, depth: 5, parameterLimit: 1000, arrayLimit: 100 } as const;

const ALL_DISABLED_MESSAGE =
  'The /proxy/all endpoint is disabled. Please check your server configuration. To enable it, set the `enableAllEndpoint` configuration option or `ENABLE_ALL_ENDPOINT` environment variable to `true`.';

/** What the request asks for, after validation. */
interface Lookup {
  rawContext: unknown;
  names: string[] | undefined;
}

function parseLookup(req: IncomingMessage, search: string, body: unknown): Lookup {
  if (req.method === 'POST') {
    const parsed = validate(lookupSchema, body ?? {}, '/body');
    const names = parsed.toggles && parsed.toggles.length > 0 ? parsed.toggles : undefined;
    return { rawContext: parsed.context ?? {}, names };
  }
  if (req.method === 'HEAD') return { rawContext: {}, names: undefined };
  const query = qs.parse(search, QUERY_OPTIONS);
  return { rawContext: validate(querySchema, query, '/query'), names: undefined };
}

async function resolveContext(parts: ProxyParts, req: IncomingMessage, raw: unknown): Promise<EvaluationContext> {
  const { config } = parts;
  let context = buildContext(raw);
  context.remoteAddress ??= clientIp(req, config);
  if (config.contextHook) context = overlayContext(context, await config.contextHook(req));
  for (const enrich of config.enrichers) context = await enrich(context);
  if (config.environment !== undefined) context.environment = config.environment;
  return context;
}

function evaluateAll(parts: ProxyParts, context: UnleashContext, includeDisabled: boolean): ToggleResult[] {
  const { engine } = parts;
  const out: ToggleResult[] = [];
  for (const feature of engine.snapshot().features) {
    const variant = engine.evaluate(feature.name, context);
    const enabled = variant.feature_enabled === true;
    if (!enabled && !includeDisabled) continue;
    const result: ToggleResult = { name: feature.name, enabled, variant: enabled ? variant : engine.disabledVariant };
    if (feature.impressionData !== undefined) result.impressionData = feature.impressionData;
    out.push(result);
  }
  return out;
}

function evaluateNamed(parts: ProxyParts, context: UnleashContext, names: string[]): ToggleResult[] {
  const { engine, usage } = parts;
  return names.map((name) => {
    const variant = engine.evaluate(name, context);
    const enabled = variant.feature_enabled === true;
    usage.count(name, enabled);
    return { name, enabled, variant, impressionData: engine.definition(name)?.impressionData ?? false };
  });
}

/** Handles the four evaluation routes; `all` selects `/proxy/all`. */
export async function evaluateRoute(
  parts: ProxyParts,
  req: IncomingMessage,
  search: string,
  body: unknown,
  all: boolean,
): Promise<ProxyResponse> {
  const lookup = parseLookup(req, search, body);
  requireReady(parts);
  if (!parts.keys.isClientKey(presentedKey(req, parts.config))) throw unauthorized();
  if (all && !parts.config.enableAllEndpoint) {
    throw new FlagProxyError('NOT_ENABLED', ALL_DISABLED_MESSAGE, { status: 501, expose: true });
  }
  const context = await resolveContext(parts, req, lookup.rawContext);
  const toggles = lookup.names
    ? evaluateNamed(parts, parts.engine.withStaticContext(context as UnleashContext), lookup.names)
    : evaluateAll(
        parts,
        // One random session per answer keeps gradual rollouts consistent within it.
        parts.engine.withStaticContext({ sessionId: String(Math.random()), ...(context as UnleashContext) }),
        all,
      );
  return json(200, { toggles }, { 'Cache-control': CACHE_CONTROL });
}
