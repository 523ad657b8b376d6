/**
 * `POST /ofrep/v1/evaluate/flags/{key}` (one flag, for server providers) and
 * `POST /ofrep/v1/evaluate/flags` (every flag, for browser providers: cached per context and
 * revision, with an ETag checked before anything is evaluated, and the event stream that tells
 * the browser when to fetch again).
 */
import type { IncomingMessage } from 'node:http';
import { APPLICATION_JSON, etagMatches, sentWithTag, withMembers, type ProxyResponse } from '../../core/http.js';
import type { RouteRequest } from '../../core/route.js';
import type { DerivedTag, EvaluationService, ToggleResult } from '../../core/service.js';
import type { FragmentFormat } from '../../core/toggle-answers.js';
import type { FlagConfig } from './flag-config.js';
import { isFailure, ofrepEvaluation } from './mapping.js';
import type { StreamTokens } from './stream-token.js';
import { admit, answering, ofrepError, ofrepJson, requestedContext } from './wire.js';

/** What the OFREP routes of one proxy share. */
export interface OfrepState {
  tokens: StreamTokens;
  flagConfig(service: EvaluationService): FlagConfig;
  /** Resolves after the next flag-set change or date-constraint instant, or after `ms`. */
  nextChange(service: EvaluationService, ms: number): Promise<void>;
}

/** Longest wait for a flag set another proxy already serves (see `flagConfigLastModified`). */
const CATCH_UP_MS = 2000;
const NO_STORE = 'no-cache';
const BULK_PATH = '/ofrep/v1/evaluate/flags';

/** One flag. 404 `FLAG_NOT_FOUND` for a flag the proxy does not have; 400 `PARSE_ERROR` for a payload not of the flag's type. */
export function singleRoute(service: EvaluationService, { req, params }: RouteRequest): Promise<ProxyResponse> {
  const key = params.key ?? '';
  return answering(async () => {
    admit(service, req, key);
    const raw = await requestedContext(service, req, key);
    const context = await service.requestContext(req, raw);
    const definition = service.definition(key);
    if (definition === undefined) throw ofrepError(404, 'FLAG_NOT_FOUND', `No flag named "${key}"`, key);
    const [toggle] = service.toggles(context, { toggles: [key] }) as [ToggleResult];
    const evaluation = ofrepEvaluation(definition, toggle);
    return isFailure(evaluation) ? ofrepJson(400, evaluation) : ofrepJson(200, evaluation, { 'Cache-Control': NO_STORE });
  });
}

/**
 * The body of a bulk answer: every flag the proxy has, in the flag set's order, each entry made
 * once per flag and result while its flag set is served (a flag the proxy no longer knows is left out).
 */
function bulkFormat(service: EvaluationService): FragmentFormat {
  return {
    open: '{"flags":[',
    close: ']}',
    fragment(toggle) {
      const definition = service.definition(toggle.name);
      return definition === undefined ? undefined : JSON.stringify(ofrepEvaluation(definition, toggle));
    },
  };
}

/** The first header value (a client that sends one twice gets the first). */
function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Whether the hop that sent `req` may say which host and scheme the client used. */
function trustsForwarding(service: EvaluationService, req: IncomingMessage): boolean {
  const trust = service.config.trustProxy;
  return trust !== false && trust(req.socket.remoteAddress ?? '', 0);
}

/**
 * The absolute URL of the event stream beside this bulk route, as the client reached it: hosts
 * that mount the proxy below a path keep the whole path in `originalUrl` (Express does, and so do
 * flag-proxy's adapters).
 */
function streamUrl(service: EvaluationService, req: IncomingMessage, query: string): string {
  const path = ((req as { originalUrl?: string }).originalUrl ?? req.url ?? '/').split('?')[0] as string;
  const at = path.toLowerCase().lastIndexOf(BULK_PATH);
  const prefix = at === -1 ? service.config.basePath : path.slice(0, at).replace(/\/{2,}/g, '/');
  const forwarded = trustsForwarding(service, req);
  const proto =
    (forwarded ? header(req, 'x-forwarded-proto')?.split(',')[0]?.trim() : undefined) ??
    ((req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http');
  const host = (forwarded ? header(req, 'x-forwarded-host')?.split(',')[0]?.trim() : undefined) ?? header(req, 'host') ?? 'localhost';
  return `${proto}://${host}${prefix}/ofrep/v1/sse?${query}`;
}

/**
 * The bulk ETag: the answer's own (with the request's tag when it carries one), plus the token
 * window, `W/"<len>-<hash>[.<tag>].<window>"`: a new window brings a new stream URL.
 */
function bulkEtag(inner: string, window: string): string {
  return `${inner.slice(0, -1)}.${window}"`;
}

/**
 * Whether `If-None-Match` names this answer (`inner`, request tags ignored) in this token window:
 * an ETag from an earlier window is never fresh, so its client gets a URL that is still valid.
 * Unlike a frontend poll (see untaggedEtagMatches), a refetch whose tag went stale with the same
 * body is a 304: the web provider refetches when its stream tells it to, evaluated either way, and
 * a 200 would make it announce a change of no flag; a polling one gets a new tag at the window's turn.
 */
function bulkFresh(ifNoneMatch: string, inner: string, window: string): boolean {
  const suffix = `.${window}"`;
  for (const part of ifNoneMatch.split(',')) {
    const sent = part.trim();
    if (sent === '*' || (sent.endsWith(suffix) && etagMatches(`${sent.slice(0, -suffix.length)}"`, inner))) return true;
  }
  return false;
}

/** Every flag for one context. */
export function bulkRoute(state: OfrepState) {
  // One format per service (a multi-environment proxy has several), so fragments are kept per flag set of each.
  const formats = new WeakMap<EvaluationService, FragmentFormat>();
  const formatOf = (service: EvaluationService): FragmentFormat => {
    let format = formats.get(service);
    if (format === undefined) {
      format = bulkFormat(service);
      formats.set(service, format);
    }
    return format;
  };
  return function ofrepBulk(service: EvaluationService, { req, search }: RouteRequest): Promise<ProxyResponse> {
    return answering(async () => {
      const clientKey = admit(service, req);
      const raw = await requestedContext(service, req);
      // A refetch told by another proxy's stream may be ahead of this proxy's flag set: wait for it, briefly.
      const theirs = Number(new URLSearchParams(search).get('flagConfigLastModified') ?? '');
      if (Number.isFinite(theirs) && theirs > state.flagConfig(service).lastModified) await state.nextChange(service, CATCH_UP_MS);

      const now = Date.now();
      const window = state.tokens.windowAt(now).toString(36);
      const ifNoneMatch = header(req, 'if-none-match');
      // A poll that sends back the tag this very request was given, in this window, is answered
      // from the request alone: no state, no evaluation (see `requestTag` in service.ts).
      const tag = service.requestTag(req, 'o', `${clientKey}\0${JSON.stringify(raw)}`);
      if (tag !== undefined && ifNoneMatch !== undefined) {
        const sent = service.sentRequestTag(ifNoneMatch, tag, `.${window}"`);
        if (sent !== undefined) {
          service.metrics.answerCache('hit');
          return { status: 304, headers: { 'Cache-Control': NO_STORE, ETag: sent }, etag: false };
        }
      }
      const context = await service.requestContext(req, raw);
      const fresh = ifNoneMatch ? (inner: string) => bulkFresh(ifNoneMatch, inner, window) : undefined;
      // A context a hook or enrichers built has no request tag: its answer is tagged by the built
      // context, and a poll that sends that tag back in this window is answered before evaluating.
      const derived: DerivedTag | undefined =
        tag === undefined
          ? {
              tag: (answerKey) => service.contextTag(clientKey, answerKey),
              sent: (derivedTag) => {
                const sent = ifNoneMatch === undefined ? undefined : sentWithTag(ifNoneMatch, derivedTag, `.${window}"`);
                // The answer's own ETag, without the window that the headers below add back.
                return sent === undefined ? undefined : `${sent.slice(0, -(window.length + 2))}"`;
              },
            }
          : undefined;
      const answer = service.formattedAnswer({ context, format: 'ofrep', fragments: formatOf(service), fresh, tag, derived });
      const headers = { 'Cache-Control': NO_STORE, ETag: bulkEtag(answer.etag, window) };
      if (answer.notModified || answer.answer === undefined || fresh?.(answer.etag)) return { status: 304, headers, etag: false };

      const config = state.flagConfig(service);
      const token = state.tokens.mint(state.tokens.scopeOf(clientKey), now);
      const url = streamUrl(service, req, `t=${encodeURIComponent(token)}&rev=${encodeURIComponent(config.id)}`);
      const streams = JSON.stringify([{ type: 'sse', url, inactivityDelaySec: 120 }]);
      const body = withMembers(answer.answer.body, `,"eventStreams":${streams}`);
      return { status: 200, headers: { 'Content-Type': APPLICATION_JSON, ...headers }, body, etag: false };
    });
  };
}
