/**
 * Flags inside the host server: the in-process API of a proxy, a thin surface over its
 * evaluation service. The same context rules, evaluation and usage counting as the HTTP routes,
 * synchronous once the proxy is ready, with no HTTP in between.
 */
import type { IncomingMessage } from 'node:http';
import type { EvaluationContext } from './core/context.js';
import type { EvaluationService, ToggleResult, ToggleSelection } from './core/service.js';
import { NOT_READY_MESSAGE } from './core/parts.js';
import type { WireVariant } from './evaluation/engine.js';
import type { UnleashContext } from './evaluation/types.js';
import type { FeatureDefinition } from './evaluation/types.js';
import { FlagProxyError } from './errors.js';
import { isPlainObject } from './plain-objects.js';

/**
 * A context given in process: the Unleash context fields, `properties`, and any other key (which
 * becomes a property, as on the wire). Values are taken as a query or POST body would give them.
 */
export interface InProcessContext {
  userId?: string | number;
  sessionId?: string | number;
  remoteAddress?: string;
  currentTime?: string | Date;
  properties?: Record<string, string | number | boolean | undefined>;
  [key: string]: unknown;
}

/** The variant of a toggle, as the Unleash SDKs give it. */
export type FlagVariant = WireVariant;

/**
 * What the in-process calls take: an {@link InProcessContext}, or any object of your own with
 * such fields (an interface of yours need not declare an index signature).
 */
export type ContextInput = InProcessContext | object;

/** The flags of one context ({@link InProcessApi.withContext}). */
export interface BoundFlags {
  /** The context, as the proxy built it. */
  readonly context: EvaluationContext;
  isEnabled(name: string): boolean;
  getVariant(name: string): FlagVariant;
  /** As {@link InProcessApi.evaluate} with this context. */
  evaluate(selection?: ToggleSelection): ToggleResult[];
}

/** The in-process API on every proxy (and on each environment of a multi-environment proxy). */
export interface InProcessApi {
  /**
   * The toggles `GET /proxy` answers for this context (the enabled ones), `/proxy/all` with
   * `{ all: true }`, or a POST with `toggles` with `{ toggles: [...] }` — the same objects its
   * JSON body parses to. Throws `NOT_READY` before the proxy is ready.
   *
   * @example
   * ```ts
   * const toggles = proxy.evaluate({ userId: 'alice' });
   * ```
   */
  evaluate(context?: ContextInput, selection?: ToggleSelection): ToggleResult[];
  /**
   * Whether a toggle is on for this context (`false` when unknown), as `unleash-client`'s
   * `isEnabled`. Counted in the usage reported upstream. Throws `NOT_READY` before ready.
   *
   * @example
   * ```ts
   * if (proxy.isEnabled('new-checkout', { userId: req.user.id })) { ... }
   * ```
   */
  isEnabled(name: string, context?: ContextInput): boolean;
  /**
   * The variant of a toggle for this context, as `unleash-client`'s `getVariant` (the disabled
   * variant when the toggle is off or unknown). Counted in the usage reported upstream.
   */
  getVariant(name: string, context?: ContextInput): FlagVariant;
  /**
   * The context the proxy would build for this request, so a page handler and the proxy agree on
   * who the user is: the caller's address (under `trustProxy`), the host's `context` hook, the
   * enrichers and the configured environment. `fields` are what the request itself would send
   * (its query or POST `context`); the hook's keys win over them.
   */
  contextFromRequest(req: IncomingMessage, fields?: InProcessContext): Promise<EvaluationContext>;
  /**
   * The flags of one context, with the context prepared once: for a request handler that asks
   * several flags for the same user, each `isEnabled`/`getVariant` then costs only the evaluation
   * (a fraction of a microsecond) instead of building the context again. The same answers and
   * usage counting as the proxy's own `isEnabled`/`getVariant`/`evaluate` with that context.
   *
   * @example
   * ```ts
   * const flags = proxy.withContext(await proxy.contextFromRequest(req));
   * if (flags.isEnabled('new-checkout')) { ... }
   * const banner = flags.getVariant('banner');
   * ```
   */
  withContext(context?: ContextInput): BoundFlags;
  /**
   * The definition of a toggle as the upstream serves it (its rules), or `undefined` when the
   * proxy does not have it. For integrations that need more than the evaluated answer, such as the
   * value type of `flag-proxy/openfeature`.
   */
  definition(name: string): FeatureDefinition | undefined;
  /**
   * Calls `listener` whenever answers may have changed: after each flag-set change (and on the
   * first load; a set fetched again with the same flags under a new ETag is no change), and just
   * after each instant of the flag set's date constraints (a scheduled launch changes answers with
   * the flag set unchanged; instants under a second apart make one call). Returns the
   * unsubscribe. The listener runs synchronously in the proxy's update: keep it short.
   *
   * @example
   * ```ts
   * const off = proxy.onChange(() => cache.clear());
   * ```
   */
  onChange(listener: () => void): () => void;
}

/** Builds the in-process API over an evaluation service. */
export function createInProcessApi(service: EvaluationService): InProcessApi {
  const ready = (): void => {
    if (!service.isReady()) {
      throw new FlagProxyError('NOT_READY', `${NOT_READY_MESSAGE} Await \`proxy.ready\` before evaluating in process.`, {
        status: 503,
      });
    }
  };
  const contextOf = (input: ContextInput | undefined): EvaluationContext =>
    isBuilt(input) ? input : service.localContext(asWireInput(input));
  const memo = createPreparedMemo(service);
  /**
   * The context evaluation sees: a built context with the static fields merged; a plain one
   * around the caller's own `properties` (nothing copied, nothing remembered: it is read during
   * this call only); any other input prepared in one pass, remembered for its object.
   */
  const preparedOf = (input: ContextInput | undefined, name: string): UnleashContext =>
    isBuilt(input) ? service.prepareBuilt(input) : (service.prepareDirect(input, name) ?? memo(input));
  return {
    evaluate(context, selection) {
      ready();
      return service.toggles(contextOf(context), selection);
    },
    isEnabled(name, context) {
      ready();
      return service.isEnabledOf(name, preparedOf(context, name));
    },
    getVariant(name, context) {
      ready();
      return service.variantOf(name, preparedOf(context, name));
    },
    withContext(input) {
      ready();
      const context = contextOf(input);
      const prepared = service.prepareBuilt(context);
      return {
        context,
        isEnabled: (name) => service.isEnabledOf(name, prepared),
        getVariant: (name) => service.variantOf(name, prepared),
        evaluate: (selection) => service.toggles(context, selection),
      };
    },
    definition: (name) => service.definition(name),
    onChange: (listener) => service.onAnswersChange(listener),
    async contextFromRequest(req, fields) {
      const context = await service.requestContext(req, fields ?? {});
      built.add(context);
      return context;
    },
  };
}

/**
 * What a context was prepared from, and what it became, in one array read front to back (a host
 * that asks with many context objects finds each one's record cold in the CPU cache: one array is
 * a few adjacent cache lines where an object of arrays was a dozen scattered ones):
 * `[prepared, time, properties, ownCount, key, value, …, propertyKey, propertyValue, …]`:
 * the prepared context, `currentTime`'s epoch ms when it is a Date (a Date can change in place),
 * the plain `properties` object (or undefined), how many own keys the object had, then its own
 * keys and values in order, then those of its `properties`.
 */
type Prepared = unknown[];
const PREPARED = 0;
const TIME = 1;
const PROPERTIES = 2;
const OWN_COUNT = 3;
const ENTRIES = 4;

/**
 * Whether the keys of a plain object ({@link isPlain}) are the keys at `entries[from]`,
 * `entries[from + 2]`, … up to `to`, in order, each holding the value that follows it. `for…in`
 * allocates nothing; over a plain object it lists the own keys, plus any enumerable key someone
 * added to Object.prototype, which can only make it answer false (the context is then built again).
 */
function sameEntries(object: object, entries: Prepared, from: number, to: number): boolean {
  let i = from;
  for (const key in object) {
    if (i >= to || key !== entries[i] || (object as Record<string, unknown>)[key] !== entries[i + 1]) return false;
    i += 2;
  }
  return i === to;
}

/** Appends the own keys and values of a plain object to `entries`. */
function pushEntries(entries: Prepared, object: object): void {
  for (const key of Object.keys(object)) entries.push(key, (object as Record<string, unknown>)[key]);
}

/** Lookups over which the memo judges whether remembering new objects pays. */
const WINDOW = 1024;
/** While fewer than one lookup in this many finds its object remembered, new objects are remembered sparsely. */
const FEW_HITS = 64;
/** How sparsely: one new object in this many. */
const SPARSE = 16;

/**
 * Prepares the in-process contexts that {@link EvaluationService.prepareDirect} declines (a
 * `currentTime`, keys besides the fields, nested values), remembering the prepared
 * context of each plain object for as long as the object lives and holds exactly what it held:
 * a host that asks several flags with one context object builds it once, and one that changes the
 * object in place (or its `properties`) gets it built again. Never with enrichers (they may read
 * anything) or custom strategies (they may change the context they are given).
 *
 * Remembering an object costs more than building its context does (the record, the WeakMap
 * entry, and collecting both: a call with a new object took three times as long with it), which
 * a host that makes a new object for every call (`isEnabled(name, { userId, currentTime: new
 * Date() })`) pays for nothing. So while almost no lookup finds its object remembered (under 1 in
 * {@link FEW_HITS} over the last {@link WINDOW} lookups or so), only one new object in
 * {@link SPARSE} is; as soon as objects come back, every new one is again. Answers never depend
 * on it: an object not remembered is built afresh.
 */
function createPreparedMemo(service: EvaluationService): (input: ContextInput | undefined) => UnleashContext {
  const prepare = (input: ContextInput | undefined): UnleashContext => service.prepare(asWireInput(input));
  if (service.config.enrichers.length > 0 || service.config.customStrategies.length > 0) return prepare;
  const memo = new WeakMap<object, Prepared>();
  // Lookups and misses of the current window; only a miss settles it (a hit only counts).
  let lookups = 0;
  let misses = 0;
  let admitEvery = 1;
  let sinceAdmitted = 0;
  return (input) => {
    if (!isPlainObject(input)) return prepare(input);
    lookups += 1;
    const known = memo.get(input);
    if (known === undefined) {
      misses += 1;
      if (lookups >= WINDOW) {
        admitEvery = (lookups - misses) * FEW_HITS < lookups ? SPARSE : 1;
        lookups = 0;
        misses = 0;
      }
      // A new object: remembered, unless objects rarely come back (then one in SPARSE is).
      sinceAdmitted += 1;
      if (sinceAdmitted < admitEvery) return prepare(input);
      sinceAdmitted = 0;
    } else {
      const ownEnd = ENTRIES + 2 * (known[OWN_COUNT] as number);
      const properties = known[PROPERTIES] as object | undefined;
      const time = known[TIME] as number | undefined;
      if (
        sameEntries(input, known, ENTRIES, ownEnd) &&
        (properties === undefined || sameEntries(properties, known, ownEnd, known.length)) &&
        (time === undefined || ((input as Record<string, unknown>).currentTime as Date).getTime() === time)
      ) {
        return known[PREPARED] as UnleashContext;
      }
    }
    const context = prepare(input);
    const source = input as Record<string, unknown>;
    const nested = source.properties;
    const properties = isPlainObject(nested) ? nested : undefined;
    // Only plain `properties` are remembered; any other kind is read afresh (never memoized).
    if (nested !== undefined && properties === undefined) return context;
    const time = source.currentTime instanceof Date ? source.currentTime.getTime() : undefined;
    const entries: Prepared = [context, time, properties, 0];
    pushEntries(entries, input);
    entries[OWN_COUNT] = (entries.length - ENTRIES) / 2;
    if (properties !== undefined) pushEntries(entries, properties);
    memo.set(input, entries);
    return context;
  };
}

/** An in-process context as the wire would give it: a `Date` as its ISO string, nothing as `{}`. */
export function asWireInput(input: ContextInput | undefined): object {
  const given = input as InProcessContext | undefined;
  const time = given?.currentTime;
  return time instanceof Date ? { ...given, currentTime: time.toISOString() } : (given ?? {});
}

/** Contexts the proxy built (from {@link InProcessApi.contextFromRequest}) are used as they are. */
const built = new WeakSet<object>();
/** Whether `value` came from {@link InProcessApi.contextFromRequest} (and so is used as it is). */
export function isBuilt(value: unknown): value is EvaluationContext {
  return typeof value === 'object' && value !== null && built.has(value);
}
