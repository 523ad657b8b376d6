/**
 * The evaluation service of one proxy: the one object every surface (the `@unleash/proxy` routes,
 * each further wire protocol, in-process evaluation, pushed updates) stands on. It owns context
 * building (request → context, and in-process input → context), the snapshot, evaluation, the
 * answer cache with its ETags, and usage counting. A surface parses its own wire format, asks the
 * service, and writes its own wire format; it never reaches past the service.
 */
import type { IncomingMessage } from 'node:http';
import type { FlagProxyConfig } from '../config/resolve.js';
import type { Engine, Snapshot, WireVariant } from '../evaluation/engine.js';
import { cacheableUntil, nextInstant } from '../evaluation/plan.js';
import type { FeatureDefinition, UnleashContext } from '../evaluation/types.js';
import type { UsageReporter } from '../evaluation/usage-reporter.js';
import { FlagProxyError } from '../errors.js';
import type { ProxyMetrics } from '../metrics.js';
import { contextKey, copyContext, type AnswerCache, type CachedAnswer, type RememberedContext } from './answer-cache.js';
import { buildContext, directContext, overlayContext, type EvaluationContext } from './context.js';
import { APPLICATION_JSON, CACHE_CONTROL, gzipAnswer, sentWithTag, weakEtag as answerEtag, withRequestTag, type ProxyResponse } from './http.js';
import { clientIp, NOT_READY_MESSAGE, type KeyChecker } from './parts.js';
import { createToggleAnswers, type FragmentFormat, type ToggleResult } from './toggle-answers.js';
import { createAnswerBuffers } from './answer-buffers.js';
import { createStreamRegistry, type EventStreamHub } from './event-streams.js';
import { createInstantClock } from './instant-clock.js';
import { createRequestIdentity } from './request-identity.js';

export type { ToggleResult } from './toggle-answers.js';

/** Which toggles an evaluation answers. */
export interface ToggleSelection {
  /** Every toggle, the disabled ones too (as `/proxy/all`). @default false */
  all?: boolean;
  /** Only these toggles, in this order, known or not (as a POST with `toggles`). */
  toggles?: readonly string[];
}

/** An evaluation answer in the Unleash frontend format (`{"toggles":[…]}`), ready to write. */
export interface EvaluatedAnswer {
  /** `true` when the caller's ETag matched: no body was built or read. */
  readonly notModified: boolean;
  readonly etag: string;
  /** The cached (or freshly built) answer; absent when `notModified`. */
  readonly answer: CachedAnswer | undefined;
  /**
   * For a body built for this request alone in the service's answer buffers (a large answer the
   * cache did not keep): gives that memory back. Only for a writer that knows nothing reads the
   * body any more; at most once. Absent otherwise.
   */
  readonly recycle?: () => void;
}

/** What {@link EvaluationService.answer} needs besides the context. */
export interface AnswerRequest {
  /** The resolved context. A remembered (frozen) one comes with `remembered`. */
  context: EvaluationContext;
  selection: { all: boolean; names: string[] | undefined };
  /** The caller's `If-None-Match` check, asked with a known ETag before anything is built. */
  fresh?: (etag: string) => boolean;
  /** Set when `context` came from the request memo. */
  remembered?: RememberedContext;
  /** Where to remember this request's context if its answer may be cached. */
  memoKey?: string;
  /**
   * The request's tag ({@link EvaluationService.requestTag}): appended to the ETag when the answer
   * is the same for as long as the flag set is, so the next poll is answered from the request alone.
   */
  tag?: string;
  /** For a request without a `tag`, whose context a `context` hook or enrichers built. */
  derived?: DerivedTag;
}

/**
 * How a request whose context a `context` hook or enrichers built tags a stable answer, from the
 * built context ({@link EvaluationService.contextTag}): a poll that sends the tag back is answered
 * `notModified` before anything is evaluated, with no answer cache.
 */
export interface DerivedTag {
  /** The tag of the answer with this cache key. */
  tag(answerKey: string): string;
  /** The ETag the request sent that carries `tag` (as an answer's ETag ends with it), if any. */
  sent(tag: string): string | undefined;
}

/** What {@link EvaluationService.formattedAnswer} needs: a context and a wire format over every toggle. */
export interface FormattedAnswerRequest {
  /** The resolved context. */
  context: EvaluationContext;
  /** The format's name: answers of different formats are cached apart. */
  format: string;
  /**
   * The body, from every toggle's result (the disabled ones too, as `/proxy/all` has them): one
   * fragment per result, each made once per toggle and state of a flag set.
   */
  fragments: FragmentFormat;
  /** The caller's `If-None-Match` check, asked with a known ETag before anything is built. */
  fresh?: (etag: string) => boolean;
  /** The request's tag, appended to the ETag of an answer that holds as long as the flag set (as in {@link AnswerRequest}). */
  tag?: string;
  /** For a request without a `tag`, whose context a `context` hook or enrichers built (as in {@link AnswerRequest}). */
  derived?: DerivedTag;
}

/** Keys that identify a request's context before parsing it: see {@link EvaluationService.requestMemo}. */
export interface RequestMemo {
  remembered: RememberedContext | undefined;
  memoKey: string | undefined;
}

/** The evaluation service of one proxy. */
export interface EvaluationService {
  readonly config: FlagProxyConfig;
  readonly keys: KeyChecker;
  readonly metrics: ProxyMetrics;
  readonly usage: UsageReporter;
  /** True once a flag set is loaded, until the proxy closes. */
  isReady(): boolean;
  isClosed(): boolean;
  /** Throws the 503 `NOT_READY` error until a flag set is loaded, and again once closing. */
  requireReady(): void;
  /** Throws the 503 `NOT_READY` error once closing (usage could no longer be reported). */
  requireOpen(): void;
  /** The current flag set. */
  snapshot(): Snapshot;
  definition(name: string): FeatureDefinition | undefined;
  /** The caller's address, honouring `trustProxy`, in IPv4 form for IPv4 callers. */
  clientIp(req: IncomingMessage): string | undefined;
  /**
   * The context of a request: what it sent (`raw`), its address as `remoteAddress` unless it sent
   * one, the host's `context` hook and the enrichers, then the configured environment. A promise
   * only when a hook or an enricher has to be awaited.
   */
  requestContext(req: IncomingMessage, raw: unknown): EvaluationContext | Promise<EvaluationContext>;
  /**
   * An in-process context, by the same rules as a request's (known fields, properties, enrichers,
   * the configured environment). Synchronous: an enricher that returns a promise is an error here.
   */
  localContext(input: unknown): EvaluationContext;
  /**
   * The remembered context of a GET request identified by its raw query, caller address and route
   * (`scope`), or the key under which to remember it. Never with a context hook or enrichers.
   */
  requestMemo(req: IncomingMessage, search: string, scope: string): RequestMemo;
  /**
   * A tag that names everything an answer depends on — the flag set's content, the route
   * (`scope`), the presented key, the caller's address and the request's own `input` (the raw
   * query of a GET, a canonical form of the context a POST sent) — keyed with a secret derived from
   * the proxy's upstream credentials and the keys it takes, so proxies of one fleet agree on it. Only
   * an admitted request is given one, so a poll that sends back its own stands in for the key check
   * (the tag is compared in constant time). The same tag means the
   * same context, so the same answer, whenever that answer depends on nothing else (no random
   * session); only such answers carry it, and one that holds only until a date constraint's
   * instant carries it with that instant (see {@link sentRequestTag}). `undefined` when a `context`
   * hook or enrichers may add anything.
   */
  requestTag(req: IncomingMessage, scope: string, input: string): string | undefined;
  /**
   * The ETag in a poll's `If-None-Match` that carries the request tag `tag`, followed by `after`
   * (what the surface writes after the tag; `"` when nothing): as the tag is, or in the form that
   * names the flag set's next date instant, while one is ahead (an answer that holds until then
   * was given that form; a context that sent its own `currentTime` holds for good, so the tag).
   * Compared in time that does not depend on where a guess differs.
   */
  sentRequestTag(ifNoneMatch: string, tag: string, after: string): string | undefined;
  /**
   * The tag of an answer by what it was built from — the flag set's content, the presented key and
   * the answer's cache key (route, names, the built context in normal form) — for requests whose
   * context a `context` hook or enrichers built (see {@link DerivedTag}).
   */
  contextTag(clientKey: string, answerKey: string): string;
  /** The answer in the Unleash frontend format: from the cache when it can, else evaluated (and cached). Counts usage. */
  answer(request: AnswerRequest): EvaluatedAnswer;
  /**
   * An answer over every toggle in a surface's own format, cached and ETagged like
   * {@link answer}: a repeated context is served from the cache, and a matching `fresh` check
   * answers `notModified` before anything is evaluated or built.
   */
  formattedAnswer(request: FormattedAnswerRequest): EvaluatedAnswer;
  /** The toggles an answer holds, as objects, for a resolved context. Counts usage for named toggles. */
  toggles(context: EvaluationContext, selection?: ToggleSelection): ToggleResult[];
  /**
   * An in-process context ({@link localContext}'s rules) already merged with the static fields,
   * ready for {@link variantOf}: one object built in one pass.
   */
  prepare(input: unknown): UnleashContext;
  /**
   * {@link prepare} without a copy of the caller's `properties` ({@link directContext}), for one
   * synchronous call; `undefined` when the input needs {@link prepare} (any key besides the plain
   * fields, values other than scalars), the proxy has enrichers or custom strategies (they may
   * keep or change the context they are given), or a rule reads a field named `properties`. For
   * toggle `name`, when compiled, only the properties its rules read are checked (its `reads`).
   */
  prepareDirect(input: unknown, name: string): UnleashContext | undefined;
  /** The variant of one toggle (the disabled variant when unknown or off) for a {@link prepare}d context. Counts usage. */
  variantOf(name: string, prepared: UnleashContext): WireVariant;
  /**
   * Whether one toggle is on for a {@link prepare}d context, as unleash-client's `isEnabled`
   * answers: its strategies (and their variants) only, no toggle-level variant. Counts usage.
   */
  isEnabledOf(name: string, prepared: UnleashContext): boolean;
  /**
   * A built context (the proxy's own, or a host's from `contextFromRequest`) prepared for
   * {@link variantOf} and {@link isEnabledOf}: the static fields merged once, so each call on it
   * then costs only the evaluation (for hosts that ask several flags for one request).
   */
  prepareBuilt(context: EvaluationContext): UnleashContext;
  /** Calls `listener` after each flag-set change (and the first load); returns the unsubscribe. */
  onChange(listener: (snapshot: Snapshot) => void): () => void;
  /**
   * Calls `listener` whenever answers may have changed: after each flag-set change (as
   * {@link onChange}), and just after each instant of the served flag set's date constraints,
   * when answers for contexts without `currentTime` change with the flag set unchanged (a
   * scheduled launch). Returns the unsubscribe. The instants' timer ends with `close()`.
   */
  onAnswersChange(listener: () => void): () => void;
  /**
   * The event-stream hub of one surface (created on first call): bounded by `maxEventStreams`
   * across all surfaces, heartbeats every `eventStreamHeartbeatInterval`, ended by `close()`.
   */
  eventStreams(surface: string): EventStreamHub;
}

/** What the service is built from: the running parts of one proxy. */
export interface ServiceParts {
  config: FlagProxyConfig;
  engine: Engine;
  usage: UsageReporter;
  metrics: ProxyMetrics;
  keys: KeyChecker;
  /** Absent when `answerCacheBytes` is 0. */
  cache: AnswerCache | undefined;
}

/** The service plus the hook its owner calls when the flag set changes. */
export interface ServiceHandle {
  service: EvaluationService;
  /** Tells change listeners; called by the proxy after each flag-set change. */
  changed(): void;
  /** Ends every event stream and refuses new ones, the rest left running: the proxy's `closeStreams()`. */
  closeStreams(): void;
  /** Ends every event stream and drops the listeners; called by the proxy's `close()`. */
  close(): void;
}

/** The answer cache key of an answer in the frontend format: route (`a`ll or `e`nabled), names, context. */
function answerKeyOf(all: boolean, names: string[] | undefined, context: EvaluationContext): string {
  return `${all ? 'a' : 'e'}${names ? JSON.stringify(names) : ''}${contextKey(context)}`;
}

/** The answer cache key of an answer in a surface's own format (`f` never starts a key of {@link answerKeyOf}). */
function formattedKeyOf(format: string, context: EvaluationContext): string {
  return `f${format}\0${contextKey(context)}`;
}

function fixEnvironment(environment: string | undefined, context: EvaluationContext): EvaluationContext {
  if (environment !== undefined) context.environment = environment;
  return context;
}

/** A compiled toggle as in-process calls use it: its questions, and its usage counter. */
interface ToggleSlot {
  readonly handle: NonNullable<ReturnType<Engine['compiledHandle']>>;
  readonly count: (enabled: boolean) => void;
}

/**
 * The {@link ToggleSlot} of each compiled toggle of the current flag set, made on first use: an
 * in-process call names its toggle every time, and finds both its compiled handle and its usage
 * counts with one lookup by name. `undefined` for a toggle that is not compiled (or unknown), so
 * only names of the flag set are ever kept; all are dropped when the flag set changes.
 */
function createToggleSlots(engine: Engine, usage: UsageReporter): (name: string) => ToggleSlot | undefined {
  let of: Snapshot | undefined;
  let slots = new Map<string, ToggleSlot>();
  // The last slot found: an in-process call looks its toggle up twice (its reads, then its answer).
  let lastName = '';
  let lastSlot: ToggleSlot | undefined;
  return (name) => {
    const snapshot = engine.snapshot();
    if (snapshot !== of) {
      of = snapshot;
      slots = new Map();
      lastName = '';
      lastSlot = undefined;
    }
    if (name === lastName && lastSlot !== undefined) return lastSlot;
    let slot = slots.get(name);
    if (slot === undefined) {
      const handle = engine.compiledHandle(name);
      if (handle === undefined) return undefined;
      slot = { handle, count: usage.counter(name, true) };
      slots.set(name, slot);
    }
    lastName = name;
    lastSlot = slot;
    return slot;
  };
}

const notReady = (): FlagProxyError => new FlagProxyError('NOT_READY', NOT_READY_MESSAGE, { status: 503, expose: true });

/**
 * Builds the evaluation service over a proxy's parts.
 *
 * Longer than the house's ~80 lines on purpose: it is the one object literal of the service's
 * interface, each method a few lines over the shared state (cache, engine, usage) and the pieces
 * kept apart (toggle-answers.ts, request-identity.ts, event-streams.ts); splitting the literal
 * would scatter one interface over files without making any method shorter.
 */
export function createEvaluationService(parts: ServiceParts): ServiceHandle {
  const { config, engine, usage, metrics, keys, cache } = parts;
  const listeners = new Set<(snapshot: Snapshot) => void>();
  const { callerAddress, hostAddress, requestTag, contextTag, timedTag } = createRequestIdentity(config, engine);
  /**
   * The tag an answer that holds until `until` (from `now` on) is given: `tag` itself when it holds
   * as long as the flag set, that instant's form of it when a date constraint ends it sooner.
   */
  const tagFor = (tag: string, until: number): string => (until === Number.POSITIVE_INFINITY ? tag : timedTag(tag, until));
  /** Only an answer that holds for a while (an instant ahead, or as long as the flag set) carries a tag. */
  const carriesTag = (until: number, tag: string | undefined, now: number): tag is string => tag !== undefined && until > now;
  const tagged = (etag: string, until: number, tag: string | undefined, now: number): string =>
    carriesTag(until, tag, now) ? withRequestTag(etag, tagFor(tag, until)) : etag;
  /**
   * The tag a request's derived context gives the answer with this cache key; or, when its poll
   * sent that tag back, the 304 it has earned (see {@link DerivedTag}).
   */
  const checkDerived = (derived: DerivedTag, answerKey: string, until: number): string | EvaluatedAnswer => {
    const tag = derived.tag(answerKey);
    const sent = derived.sent(tagFor(tag, until));
    if (sent === undefined) return tag;
    metrics.answerCache('hit');
    return { notModified: true, etag: sent, answer: undefined };
  };
  const streams = createStreamRegistry(config, metrics);
  const instants = createInstantClock(
    (now) => (engine.isReady() ? nextInstant(engine.snapshot().plan.sensitivity, now) : Number.POSITIVE_INFINITY),
    (error) => config.logger.error('A date-constraint instant listener threw', error),
  );
  const countUsage = (names: readonly string[], enabled: readonly boolean[]): void => {
    for (let i = 0; i < names.length; i += 1) {
      const name = names[i] as string;
      usage.count(name, enabled[i] === true, engine.definition(name) !== undefined);
    }
  };

  const buffers = createAnswerBuffers();
  const { serializeAll, formatAll, resultsAll, resultsNamed } = createToggleAnswers(engine, {}, buffers);
  const slotOf = createToggleSlots(engine, usage);

  /** The context evaluation sees: static fields merged, and a random session when none is given. */
  // The static fields (appName, environment) every evaluation context starts from.
  const staticContext = engine.withStaticContext({});
  const direct = config.enrichers.length === 0 && config.customStrategies.length === 0;
  const evaluationContext = (context: EvaluationContext, shared: boolean, named: boolean): UnleashContext => {
    // A shared (remembered, frozen) context gets its own copy: custom strategies may change it.
    const own = (shared ? copyContext(context) : context) as UnleashContext;
    // One pass instead of the engine's two copies: in-process calls pay this on every call.
    // Object.assign, not a spread then extended: such clones are slow to extend, and V8 kept them
    // alive across young collections, so every request's context was promoted to the old
    // generation (test/unit/young-garbage.test.ts).
    const merged = Object.assign({}, staticContext) as UnleashContext;
    for (const key in own) {
      const value = own[key];
      if (value !== undefined) merged[key] = value;
    }
    // One random session per answer keeps gradual rollouts consistent within it.
    if (!named && merged.sessionId === undefined) merged.sessionId = String(Math.random());
    return merged;
  };

  const service: EvaluationService = {
    config,
    keys,
    metrics,
    usage,
    isReady: () => engine.isReady(),
    isClosed: () => engine.isClosed(),
    requireReady() {
      if (!engine.isReady()) throw notReady();
    },
    requireOpen() {
      if (engine.isClosed()) throw notReady();
    },
    snapshot: () => engine.snapshot(),
    definition: (name) => engine.definition(name),
    clientIp: callerAddress,

    requestContext(req, raw) {
      const context = buildContext(raw);
      // A trusted hop's address (from the host's reader) wins over what the caller sent.
      const trusted = hostAddress(req);
      if (trusted !== undefined) context.remoteAddress = trusted;
      else context.remoteAddress ??= clientIp(req, config);
      if (!config.contextHook && config.enrichers.length === 0) return fixEnvironment(config.environment, context);
      return (async () => {
        let hooked = context;
        if (config.contextHook) hooked = overlayContext(hooked, await config.contextHook(req));
        for (const enrich of config.enrichers) hooked = await enrich(hooked);
        return fixEnvironment(config.environment, hooked);
      })();
    },

    localContext(input) {
      let context = buildContext(input);
      for (const enrich of config.enrichers) {
        const enriched = enrich(context);
        if (enriched instanceof Promise) {
          enriched.catch(() => undefined);
          throw new FlagProxyError(
            'INVALID_OPTION',
            'A context enricher returned a promise: in-process evaluation is synchronous, so enrichers used with it must be too',
          );
        }
        context = enriched;
      }
      return fixEnvironment(config.environment, context);
    },

    requestMemo(req, search, scope) {
      // Besides the raw query, only the caller's address enters the context (as `remoteAddress`,
      // unless the query sets one); `appName` and `environment` are fixed per proxy, and the key's
      // scope is the proxy itself. A hook or an enricher may read anything in the request: no memo.
      if (req.method !== 'GET' || cache === undefined || config.contextHook !== undefined || config.enrichers.length > 0) {
        return { remembered: undefined, memoKey: undefined };
      }
      const ip = callerAddress(req);
      // An address never holds a space; `!` marks a caller without one (a closed socket).
      const memoKey = `${scope}${ip ?? '!'} ${search}`;
      return { remembered: cache.context(memoKey), memoKey };
    },

    requestTag,
    contextTag,

    sentRequestTag(ifNoneMatch, tag, after) {
      const sent = sentWithTag(ifNoneMatch, tag, after);
      if (sent !== undefined) return sent;
      const now = Date.now();
      const until = nextInstant(engine.snapshot().plan.sensitivity, now);
      return until > now && until !== Number.POSITIVE_INFINITY ? sentWithTag(ifNoneMatch, timedTag(tag, until), after) : undefined;
    },

    answer({ context, selection, fresh, remembered, memoKey, tag, derived }) {
      const { all, names } = selection;
      // Read after any await: evaluation below is synchronous, so it sees exactly this snapshot.
      const { revision, plan } = engine.snapshot();
      const now = Date.now();
      const stableUntil = cacheableUntil(plan.sensitivity, context, now);
      const expiresAt = cache ? stableUntil : 0;
      let key: string | undefined;
      if (expiresAt > now) {
        key = remembered?.answerKey ?? answerKeyOf(all, names, context);
        if (memoKey !== undefined) cache?.rememberContext(memoKey, { context, answerKey: key });
      }
      if (derived !== undefined && tag === undefined && stableUntil > now) {
        const checked = checkDerived(derived, key ?? remembered?.answerKey ?? answerKeyOf(all, names, context), stableUntil);
        if (typeof checked !== 'string') return checked;
        tag = checked;
      }
      if (key !== undefined && cache) {
        // A poll whose answer is unchanged needs no body: 304 from the ETag alone.
        if (fresh) {
          const known = cache.etag(revision, key);
          if (known && fresh(known.etag)) {
            metrics.answerCache('hit');
            if (names && known.enabled) countUsage(names, known.enabled);
            return { notModified: true, etag: tagged(known.etag, known.expiresAt, tag, now), answer: undefined };
          }
        }
        const cached = cache.get(revision, key);
        if (cached) {
          metrics.answerCache('hit');
          if (names && cached.enabled) countUsage(names, cached.enabled);
          return { notModified: false, etag: tagged(cached.etag, cached.expiresAt, tag, now), answer: cached };
        }
      }
      metrics.answerCache(key === undefined ? 'uncacheable' : 'miss');
      const evaluated = evaluationContext(context, remembered !== undefined, names !== undefined);
      let serialized: string | Buffer;
      let enabled: boolean[] | undefined;
      if (names) {
        enabled = [];
        serialized = JSON.stringify({ toggles: resultsNamed(evaluated, names, enabled) });
        countUsage(names, enabled);
        metrics.evaluated(names.length);
      } else {
        serialized = serializeAll(plan, evaluated, all);
        metrics.evaluated(plan.toggles.length);
      }
      const fresh_: CachedAnswer = { body: serialized, etag: answerEtag(serialized), enabled, expiresAt };
      // A tagged answer's polls are answered from their tag, before the cache: its ETag alone
      // would never be read. Its body is written as it is: kept as bytes.
      const kept = key !== undefined && cache !== undefined && cache.set(revision, key, fresh_, { withEtag: !carriesTag(stableUntil, tag, now), asBytes: true });
      const etag = tagged(fresh_.etag, stableUntil, tag, now);
      // Only a large answer's bytes are the answer buffers', and this one is nobody else's; the
      // others are left to the collector.
      if (kept || typeof serialized === 'string' || !buffers.owns(serialized)) return { notModified: false, etag, answer: fresh_ };
      // Written out, not spread from the answer above: made as `{ ...answer, recycle }`, the
      // responses of large answers left about 50 kB promoted to the old generation per young
      // collection at 1000 flags, against 8 kB (docs/performance.md, "Memory").
      return { notModified: false, etag, answer: fresh_, recycle: () => buffers.give(serialized) };
    },

    formattedAnswer({ context, format, fragments, fresh, tag, derived }) {
      const snapshot = engine.snapshot();
      const { revision, plan } = snapshot;
      const now = Date.now();
      const stableUntil = cacheableUntil(plan.sensitivity, context, now);
      const expiresAt = cache ? stableUntil : 0;
      const key = cache && expiresAt > now ? formattedKeyOf(format, context) : undefined;
      if (derived !== undefined && tag === undefined && stableUntil > now) {
        const checked = checkDerived(derived, key ?? formattedKeyOf(format, context), stableUntil);
        if (typeof checked !== 'string') return checked;
        tag = checked;
      }
      if (key !== undefined && cache) {
        const known = fresh ? cache.etag(revision, key) : undefined;
        if (known && fresh?.(known.etag)) {
          metrics.answerCache('hit');
          return { notModified: true, etag: tagged(known.etag, known.expiresAt, tag, now), answer: undefined };
        }
        const cached = cache.get(revision, key);
        if (cached) {
          metrics.answerCache('hit');
          return { notModified: false, etag: tagged(cached.etag, cached.expiresAt, tag, now), answer: cached };
        }
      }
      metrics.answerCache(key === undefined ? 'uncacheable' : 'miss');
      const body = formatAll(snapshot, evaluationContext(context, Object.isFrozen(context), false), fragments);
      metrics.evaluated(plan.toggles.length);
      const built: CachedAnswer = { body, etag: answerEtag(body), enabled: undefined, expiresAt };
      if (key !== undefined) cache?.set(revision, key, built);
      return { notModified: false, etag: tagged(built.etag, stableUntil, tag, now), answer: built };
    },

    toggles(context, selection = {}) {
      const names = selection.toggles && selection.toggles.length > 0 ? selection.toggles : undefined;
      const evaluated = evaluationContext(context, Object.isFrozen(context), names !== undefined);
      if (names) {
        const enabled: boolean[] = [];
        const results = resultsNamed(evaluated, names, enabled);
        countUsage(names, enabled);
        metrics.evaluated(names.length);
        return results;
      }
      const { plan } = engine.snapshot();
      metrics.evaluated(plan.toggles.length);
      return resultsAll(plan, evaluated, selection.all === true);
    },

    prepare(input) {
      if (config.enrichers.length > 0) return evaluationContext(service.localContext(input), false, true);
      // The static fields first, the caller's over them, the configured environment over all: what
      // localContext and the merge give, in one object.
      return fixEnvironment(config.environment, buildContext(input, staticContext)) as UnleashContext;
    },

    prepareDirect(input, name) {
      if (!direct || engine.snapshot().plan.sensitivity.propertiesField) return undefined;
      return directContext(input, staticContext, config.environment, slotOf(name)?.handle.reads) as UnleashContext | undefined;
    },

    variantOf(name, prepared) {
      const slot = slotOf(name);
      if (slot !== undefined) {
        const variant = slot.handle.variant(prepared);
        slot.count(variant.feature_enabled === true);
        return variant;
      }
      const variant = engine.evaluate(name, prepared);
      usage.count(name, variant.feature_enabled === true, engine.definition(name) !== undefined);
      return variant;
    },

    isEnabledOf(name, prepared) {
      const slot = slotOf(name);
      if (slot !== undefined) {
        // As unleash-client's isEnabled: the strategies only, no toggle-level variant is picked.
        const enabled = slot.handle.isOn(prepared);
        slot.count(enabled);
        return enabled;
      }
      const enabled = engine.evaluate(name, prepared).feature_enabled === true;
      usage.count(name, enabled, engine.definition(name) !== undefined);
      return enabled;
    },

    prepareBuilt: (context) => evaluationContext(context, Object.isFrozen(context), true),

    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    onAnswersChange(listener) {
      const offChange = service.onChange(() => listener());
      const offInstant = instants.on(() => listener());
      return () => {
        offChange();
        offInstant();
      };
    },

    eventStreams: (surface) => streams.hub(surface),
  };

  return {
    service,
    changed() {
      instants.rearm();
      const snapshot = engine.snapshot();
      for (const listener of [...listeners]) {
        try {
          listener(snapshot);
        } catch (error) {
          config.logger.error('A flag-set change listener threw', error);
        }
      }
    },
    closeStreams: () => streams.close(),
    close() {
      listeners.clear();
      instants.close();
      streams.close();
    },
  };
}

/** An evaluated answer as an HTTP response: 304 without a body when fresh, else 200 JSON (gzip once). */
export function answerResponse(evaluated: EvaluatedAnswer): ProxyResponse {
  if (evaluated.notModified || evaluated.answer === undefined) {
    return { status: 304, headers: { 'Cache-control': CACHE_CONTROL }, etag: evaluated.etag };
  }
  const cached = evaluated.answer;
  return {
    status: 200,
    headers: { 'Content-Type': APPLICATION_JSON, 'Cache-control': CACHE_CONTROL },
    body: cached.body,
    etag: evaluated.etag,
    // Compress once per cached answer, on first need.
    compress: () => (cached.gzipped ??= gzipAnswer(cached.body)),
    recycle: evaluated.recycle,
  };
}
