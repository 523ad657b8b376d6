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
import type { FeatureDefinition } from './evaluation/types.js';
import { FlagProxyError } from './errors.js';

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
   * Calls `listener` after each flag-set change (and on the first load); returns the unsubscribe.
   * The listener runs synchronously in the proxy's update: keep it short.
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
  /** One variant: a built context as it is, any other input prepared in one pass. */
  const variantFor = (name: string, input: ContextInput | undefined): FlagVariant =>
    isBuilt(input) ? service.variant(name, input) : service.variantOf(name, service.prepare(asWireInput(input)));
  return {
    evaluate(context, selection) {
      ready();
      return service.toggles(contextOf(context), selection);
    },
    isEnabled(name, context) {
      ready();
      return variantFor(name, context).feature_enabled === true;
    },
    getVariant(name, context) {
      ready();
      return variantFor(name, context);
    },
    withContext(input) {
      ready();
      const context = contextOf(input);
      const variant = service.bind(context);
      return {
        context,
        isEnabled: (name) => variant(name).feature_enabled === true,
        getVariant: variant,
        evaluate: (selection) => service.toggles(context, selection),
      };
    },
    definition: (name) => service.definition(name),
    onChange: (listener) => service.onChange(() => listener()),
    async contextFromRequest(req, fields) {
      const context = await service.requestContext(req, fields ?? {});
      built.add(context);
      return context;
    },
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
