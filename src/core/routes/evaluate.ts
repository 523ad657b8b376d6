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
import { gzipSync } from 'node:zlib';
import { cacheableUntil, DISABLED_IN_ALL, NO_VARIANT_ON, type SnapshotPlan } from '../../evaluation/plan.js';
import { contextKey, copyContext, freezeContext, type CachedAnswer } from '../answer-cache.js';
import { APPLICATION_JSON, CACHE_CONTROL, isFresh, weakEtag, type ProxyResponse } from '../http.js';
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

/**
 * The context of a request: built from what it sent, its address as `remoteAddress` unless it sent
 * one, then the host's `context` hook and the enrichers (the only steps that may be asynchronous).
 */
function resolveContext(parts: ProxyParts, req: IncomingMessage, raw: unknown): EvaluationContext | Promise<EvaluationContext> {
  const { config } = parts;
  const context = buildContext(raw);
  context.remoteAddress ??= clientIp(req, config);
  if (!config.contextHook && config.enrichers.length === 0) return fixEnvironment(config.environment, context);
  return (async () => {
    let hooked = context;
    if (config.contextHook) hooked = overlayContext(hooked, await config.contextHook(req));
    for (const enrich of config.enrichers) hooked = await enrich(hooked);
    return fixEnvironment(config.environment, hooked);
  })();
}

function fixEnvironment(environment: string | undefined, context: EvaluationContext): EvaluationContext {
  if (environment !== undefined) context.environment = environment;
  return context;
}

/** Serializes the answer for all toggles (enabled ones only unless `includeDisabled`). */
function answerAll(parts: ProxyParts, plan: SnapshotPlan, context: UnleashContext, includeDisabled: boolean): string {
  const { engine } = parts;
  const entries: string[] = [];
  for (const toggle of plan.toggles) {
    if (toggle.kind === 'on') {
      entries.push(toggle.entry);
    } else if (toggle.kind === 'off') {
      if (includeDisabled) entries.push(toggle.allEntry);
    } else if (!toggle.variants) {
      if (engine.isOn(toggle.feature, context)) entries.push(toggle.onPrefix + NO_VARIANT_ON + toggle.suffix);
      else if (includeDisabled) entries.push(toggle.offPrefix + DISABLED_IN_ALL + toggle.suffix);
    } else {
      const variant = engine.evaluate(toggle.name, context);
      if (variant.feature_enabled === true) {
        const plain = variant.name === 'disabled' && !variant.enabled && variant.payload === undefined;
        entries.push(toggle.onPrefix + (plain ? NO_VARIANT_ON : JSON.stringify(variant)) + toggle.suffix);
      } else if (includeDisabled) {
        entries.push(toggle.offPrefix + DISABLED_IN_ALL + toggle.suffix);
      }
    }
  }
  return `{"toggles":[${entries.join(',')}]}`;
}

/** Serializes the answer for the named toggles, in order; `enabled` records each outcome. */
function answerNamed(parts: ProxyParts, context: UnleashContext, names: string[], enabled: boolean[]): string {
  const { engine } = parts;
  const toggles = names.map((name): ToggleResult => {
    const variant = engine.evaluate(name, context);
    const on = variant.feature_enabled === true;
    enabled.push(on);
    return { name, enabled: on, variant, impressionData: engine.definition(name)?.impressionData ?? false };
  });
  return JSON.stringify({ toggles });
}

function countUsage(parts: ProxyParts, names: string[], enabled: boolean[]): void {
  for (let i = 0; i < names.length; i += 1) {
    const name = names[i] as string;
    parts.usage.count(name, enabled[i] === true, parts.engine.definition(name) !== undefined);
  }
}

/**
 * What identifies a GET's context before any parsing, or `undefined` when a request's context
 * cannot be remembered. Besides the raw query, only the caller's address enters the context (as
 * `remoteAddress`, unless the query sets one); `appName` and `environment` are fixed per proxy, and
 * the key's scope is the proxy itself (a multi-environment proxy runs one proxy, so one memo, per
 * environment). A `context` hook or enrichers may read anything in the request: no memo then.
 */
function requestKey(parts: ProxyParts, req: IncomingMessage, search: string, all: boolean): string | undefined {
  const { config } = parts;
  if (req.method !== 'GET' || parts.cache === undefined || config.contextHook !== undefined || config.enrichers.length > 0) return undefined;
  const ip = clientIp(req, config);
  // The route enters too, as the remembered answer key holds it. An address never holds a
  // space; `!` marks a caller without one (a closed socket).
  return `${all ? 'a' : 'e'}${ip ?? '!'} ${search}`;
}

/**
 * Handles the four evaluation routes; `all` selects `/proxy/all`. Answers at once (no promise)
 * unless a `context` hook or an enricher has to be awaited.
 */
export function evaluateRoute(
  parts: ProxyParts,
  req: IncomingMessage,
  search: string,
  body: unknown,
  all: boolean,
): ProxyResponse | Promise<ProxyResponse> {
  const memoKey = requestKey(parts, req, search, all);
  // Only contexts that parsed and validated are remembered: a remembered one skips straight to the
  // gates, which run on every request in the same order as without the memo.
  const remembered = memoKey === undefined ? undefined : parts.cache?.context(memoKey);
  const lookup = remembered ? undefined : parseLookup(req, search, body);
  requireReady(parts);
  if (!parts.keys.isClientKey(presentedKey(req, parts.config))) throw unauthorized();
  if (all && !parts.config.enableAllEndpoint) {
    throw new FlagProxyError('NOT_ENABLED', ALL_DISABLED_MESSAGE, { status: 501, expose: true });
  }
  if (remembered) return respond(parts, req, remembered.context, undefined, all, remembered.answerKey, undefined);
  const { rawContext, names } = lookup as Lookup;
  const context = resolveContext(parts, req, rawContext);
  // What a hook or an enricher gave is never remembered: it may depend on anything in the request.
  if (context instanceof Promise) return context.then((resolved) => respond(parts, req, resolved, names, all, undefined, undefined));
  return respond(parts, req, context, names, all, undefined, memoKey);
}

/**
 * Answers for a resolved context: from the cache when it can, else by evaluating (and caching).
 * `rememberedKey` is the answer key of a remembered (frozen) context; `memoKey`, when given, is
 * where to remember this context if its answer may be cached.
 */
function respond(
  parts: ProxyParts,
  req: IncomingMessage,
  context: EvaluationContext,
  names: string[] | undefined,
  all: boolean,
  rememberedKey: string | undefined,
  memoKey: string | undefined,
): ProxyResponse {
  // Read after any await: evaluation below is synchronous, so it sees exactly this snapshot.
  const { revision, plan } = parts.engine.snapshot();
  const now = Date.now();
  const expiresAt = parts.cache ? cacheableUntil(plan.sensitivity, context, now) : 0;
  let key: string | undefined;
  if (expiresAt > now) {
    key = rememberedKey ?? `${all ? 'a' : 'e'}${names ? JSON.stringify(names) : ''}${contextKey(context)}`;
    if (memoKey !== undefined) parts.cache?.rememberContext(memoKey, { context: freezeContext(context), answerKey: key });
  }
  if (key !== undefined && parts.cache) {
    // A poll whose answer is unchanged needs no body: 304 from the ETag alone.
    if (req.headers['if-none-match']) {
      const known = parts.cache.etag(revision, key);
      if (known && isFresh(req, 200, known.etag)) {
        parts.metrics.answerCache('hit');
        if (names && known.enabled) countUsage(parts, names, known.enabled);
        return { status: 304, headers: { 'Cache-control': CACHE_CONTROL }, etag: known.etag };
      }
    }
    const cached = parts.cache.get(revision, key);
    if (cached) {
      parts.metrics.answerCache('hit');
      if (names && cached.enabled) countUsage(parts, names, cached.enabled);
      return answer(cached);
    }
  }
  parts.metrics.answerCache(key === undefined ? 'uncacheable' : 'miss');

  // A context from the memo is shared: evaluation, which may run custom strategies by now, gets its
  // own copy. One remembered just now is frozen too, but only when its answer is cacheable, so no
  // custom strategy is in this flag set and the built-in ones change no context.
  const evaluated = (rememberedKey === undefined ? context : copyContext(context)) as UnleashContext;
  let serialized: string;
  let enabled: boolean[] | undefined;
  if (names) {
    enabled = [];
    serialized = answerNamed(parts, parts.engine.withStaticContext(evaluated), names, enabled);
    countUsage(parts, names, enabled);
    parts.metrics.evaluated(names.length);
  } else {
    // One random session per answer keeps gradual rollouts consistent within it.
    const withSession = parts.engine.withStaticContext({ sessionId: String(Math.random()), ...evaluated });
    serialized = answerAll(parts, plan, withSession, all);
    parts.metrics.evaluated(plan.toggles.length);
  }
  const utf8 = Buffer.from(serialized);
  const fresh: CachedAnswer = { body: utf8, etag: weakEtag(utf8), enabled, expiresAt };
  if (key !== undefined) parts.cache?.set(revision, key, fresh);
  return answer(fresh);
}

function answer(cached: CachedAnswer): ProxyResponse {
  const response: ProxyResponse = {
    status: 200,
    headers: { 'Content-Type': APPLICATION_JSON, 'Cache-control': CACHE_CONTROL },
    body: cached.body,
    etag: cached.etag,
  };
  // Compress once per cached answer, on first need.
  response.compress = () => (cached.gzipped ??= gzipSync(cached.body));
  return response;
}
