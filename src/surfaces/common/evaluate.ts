/**
 * Evaluation in the Unleash frontend format, shared by every surface that answers it (`/proxy`,
 * `/api/frontend`, `/api/proxy`): evaluate toggles for one context and answer only the results
 * (name, enabled, variant, impressionData), never the rules. All of them go through the service's
 * answer cache, so the same context polled on any of these paths is evaluated once per flag set.
 */
import { FlagProxyError } from '../../errors.js';
import type { EvaluationContext } from '../../core/context.js';
import { CACHE_CONTROL, mayBeFresh, sentWithTag, untaggedEtagMatches, type ProxyResponse } from '../../core/http.js';
import { presentedKey, unauthorized } from '../../core/parts.js';
import type { RouteRequest } from '../../core/route.js';
import { isPlainLookup, requestSchemas, validate } from '../../core/schemas.js';
import { answerResponse, type DerivedTag, type EvaluationService } from '../../core/service.js';
import { parseCommonQuery, parseWithQs } from './query.js';

/** What the request asks for, after validation. */
export interface Lookup {
  rawContext: unknown;
  names: string[] | undefined;
}

/** Parses a GET query or a POST body (`{ context, toggles }`) into a raw context and toggle names. */
export function parseLookup(request: RouteRequest): Lookup {
  const { req, search, body } = request;
  if (req.method === 'POST') {
    const parsed = isPlainLookup(body) ? body : validate(requestSchemas().lookupSchema, body ?? {}, '/body');
    const names = parsed.toggles && parsed.toggles.length > 0 ? parsed.toggles : undefined;
    return { rawContext: parsed.context ?? {}, names };
  }
  if (req.method === 'HEAD') return { rawContext: {}, names: undefined };
  // A query in the SDKs' shape holds strings, and `properties` as an object of strings: all the
  // query schema asks (test/unit/query.test.ts checks it), so it is not checked again.
  const common = parseCommonQuery(search);
  if (common !== undefined) return { rawContext: common, names: undefined };
  return { rawContext: validate(requestSchemas().querySchema, parseWithQs(search), '/query'), names: undefined };
}

/** How an evaluating route is set up. */
export interface EvaluateRouteOptions {
  /** Answers every toggle, the disabled ones too; gated by `enableAllEndpoint`. */
  all: boolean;
  /** The 501 message when `all` is asked and the all endpoint is off. */
  disabledMessage: string;
  /** Reads a request's lookup; defaults to {@link parseLookup}. */
  parse?: (request: RouteRequest) => Lookup;
  /**
   * Answers a POST whose `If-None-Match` matches with 304, as Unleash Edge does on its frontend
   * API: `unleash-proxy-client` with `usePOSTrequests` sends its ETag back on every poll. A POST
   * for the whole set is tagged by its built context, so its poll is answered before evaluating.
   * Off for `/proxy`, whose predecessor never answers a POST 304. @default false
   */
  postPolls?: boolean;
}

/**
 * An evaluating route. Answers at once (no promise) unless a `context` hook or an enricher has to
 * be awaited. Gates run in COMPATIBILITY.md §1's order: input, readiness, key, `all` switch.
 */
export function evaluateHandler(options: EvaluateRouteOptions) {
  const { all, disabledMessage, postPolls = false } = options;
  const parse = options.parse ?? parseLookup;
  const scope = all ? 'a' : 'e';
  const allowed = (service: EvaluationService): void => {
    if (all && !service.config.enableAllEndpoint) {
      throw new FlagProxyError('NOT_ENABLED', disabledMessage, { status: 501, expose: true });
    }
  };
  const gates = (service: EvaluationService, request: RouteRequest): void => {
    service.requireReady();
    if (!service.keys.isClientKey(presentedKey(request.req, service.config))) throw unauthorized();
    allowed(service);
  };
  return function evaluate(service: EvaluationService, request: RouteRequest): ProxyResponse | Promise<ProxyResponse> {
    const { req, search } = request;
    const ifNoneMatch = req.headers['if-none-match'];
    const tag = req.method === 'GET' ? service.requestTag(req, scope, search) : undefined;
    // A poll that sends back the tag this very request was given is answered from the request
    // alone: no state, no parsing, no evaluation. The tag names the flag set's content, so any
    // change to the flags makes it miss; an answer that holds until a date's instant was given the
    // tag naming it, which misses from then on. Its query parsed and validated when it was given.
    if (tag !== undefined && ifNoneMatch !== undefined && mayBeFresh(req)) {
      const sent = service.sentRequestTag(ifNoneMatch, tag, '"');
      if (sent !== undefined) {
        // The tag names the key this request presents, and a proxy taking these keys gave it to an
        // admitted request only: the match is the key check (a SHA-256 less on every poll).
        service.requireReady();
        allowed(service);
        service.metrics.answerCache('hit');
        return { status: 304, headers: { 'Cache-control': CACHE_CONTROL }, etag: sent };
      }
    }
    const { remembered, memoKey } = service.requestMemo(req, search, scope);
    // Only contexts that parsed and validated are remembered: a remembered one skips straight to
    // the gates, which run on every request in the same order as without the memo.
    const lookup = remembered ? undefined : parse(request);
    gates(service, request);
    const revalidating = ifNoneMatch !== undefined && mayBeFresh(req, postPolls) ? ifNoneMatch : undefined;
    // A tagged ETag whose tag missed above gets the body and a new tag (see untaggedEtagMatches).
    const fresh = revalidating !== undefined ? (etag: string) => untaggedEtagMatches(revalidating, etag) : undefined;
    if (remembered) {
      return answerResponse(service.answer({ context: remembered.context, selection: { all, names: undefined }, fresh, remembered, tag }));
    }
    const { rawContext, names } = lookup as Lookup;
    const selection = { all, names };
    // A GET whose context a hook or enrichers build has no request tag: its answer is tagged by the
    // built context. So is a POST poll's, where POST polls are answered; one that names toggles is
    // not (its 304 comes from the answer cache, which counts the named toggles' usage).
    const tagsContext = req.method === 'GET' || (postPolls && req.method === 'POST' && names === undefined);
    const derived = tag === undefined && tagsContext ? derivedTag(service, request, revalidating) : undefined;
    const respond = (context: EvaluationContext, memo: string | undefined): ProxyResponse =>
      answerResponse(service.answer({ context, selection, fresh, memoKey: memo, tag, derived }));
    const context = service.requestContext(req, rawContext);
    // What a hook or an enricher gave is never remembered: it may depend on anything in the request.
    if (context instanceof Promise) return context.then((resolved) => respond(resolved, undefined));
    return respond(context, memoKey);
  };
}

/**
 * Tags an answer by its built context, and finds that tag in what the poll sent (see
 * {@link DerivedTag}); `revalidating` is the request's `If-None-Match` where it may earn a 304.
 */
function derivedTag(service: EvaluationService, { req }: RouteRequest, revalidating: string | undefined): DerivedTag {
  const clientKey = presentedKey(req, service.config) ?? '';
  return {
    tag: (answerKey) => service.contextTag(clientKey, answerKey),
    sent: (tag) => (revalidating !== undefined ? sentWithTag(revalidating, tag, '"') : undefined),
  };
}
