/**
 * `flag-proxy/openfeature`: an OpenFeature provider for `@openfeature/server-sdk` that evaluates
 * in process against a proxy, with no HTTP in between, and with the mapping of the proxy's OFREP
 * routes (docs/openfeature.md), so the host's own code and the browsers it serves see the same
 * values. `@openfeature/server-sdk` is an optional peer dependency, loaded only by this entry.
 */
import {
  FlagNotFoundError,
  InvalidContextError,
  OpenFeatureEventEmitter,
  ParseError,
  ProviderEvents,
  TypeMismatchError,
  type EvaluationContext,
  type JsonValue,
  type Provider,
  type ResolutionDetails,
} from '@openfeature/server-sdk';
import type { FlagProxy } from '../index.js';
import { InvalidContext, isFailure, ofrepEvaluation, unleashContextOf } from '../surfaces/ofrep/mapping.js';

/** What the provider needs of a proxy: its in-process API (a `FlagProxy`, or one environment of a multi-environment proxy). */
export type OpenFeatureProviderTarget = Pick<FlagProxy, 'evaluate' | 'definition' | 'onChange'> & {
  /** Awaited by the provider's initialisation when present. */
  readonly ready?: Promise<void>;
};

/** Options of {@link createOpenFeatureProvider}. */
export interface OpenFeatureProviderOptions {
  /**
   * The context field `targetingKey` becomes; as the proxy's `ofrep.targetingKey`, so both answer
   * alike. @default 'userId'
   */
  targetingKey?: string;
}

/** The provider: an OpenFeature server `Provider` over a proxy. */
export interface FlagProxyOpenFeatureProvider extends Provider {
  readonly events: OpenFeatureEventEmitter;
}

type ValueKind = 'boolean' | 'string' | 'number' | 'object';

class InProcessProvider implements FlagProxyOpenFeatureProvider {
  readonly metadata = { name: 'flag-proxy' } as const;
  readonly runsOn = 'server' as const;
  readonly events = new OpenFeatureEventEmitter();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly proxy: OpenFeatureProviderTarget,
    private readonly targetingKey: string,
  ) {}

  async initialize(): Promise<void> {
    await this.proxy.ready;
    // The first load has happened by now: every later call is a change.
    this.unsubscribe ??= this.proxy.onChange(() => this.events.emit(ProviderEvents.ConfigurationChanged, {}));
  }

  async onClose(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  resolveBooleanEvaluation(flagKey: string, defaultValue: boolean, context: EvaluationContext): Promise<ResolutionDetails<boolean>> {
    return Promise.resolve(this.resolve('boolean', flagKey, defaultValue, context));
  }

  resolveStringEvaluation(flagKey: string, defaultValue: string, context: EvaluationContext): Promise<ResolutionDetails<string>> {
    return Promise.resolve(this.resolve('string', flagKey, defaultValue, context));
  }

  resolveNumberEvaluation(flagKey: string, defaultValue: number, context: EvaluationContext): Promise<ResolutionDetails<number>> {
    return Promise.resolve(this.resolve('number', flagKey, defaultValue, context));
  }

  resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T, context: EvaluationContext): Promise<ResolutionDetails<T>> {
    return Promise.resolve(this.resolve('object', flagKey, defaultValue, context));
  }

  /** As an OFREP client reads the proxy's single-flag answer: a value of another type is a mismatch, no value the default. */
  private resolve<T>(kind: ValueKind, flagKey: string, defaultValue: T, context: EvaluationContext): ResolutionDetails<T> {
    const definition = this.proxy.definition(flagKey);
    if (definition === undefined) throw new FlagNotFoundError(`No flag named "${flagKey}"`);
    let raw: Record<string, unknown>;
    try {
      raw = unleashContextOf(context, this.targetingKey);
    } catch (error) {
      if (error instanceof InvalidContext) throw new InvalidContextError(error.message);
      throw error;
    }
    const [toggle] = this.proxy.evaluate(raw, { toggles: [flagKey] });
    if (toggle === undefined) throw new FlagNotFoundError(`No flag named "${flagKey}"`);
    const evaluation = ofrepEvaluation(definition, toggle);
    if (isFailure(evaluation)) throw new ParseError(evaluation.errorDetails);
    const { value, reason, variant, metadata } = evaluation;
    const flagMetadata: Record<string, string | boolean> = { enabled: metadata.enabled };
    if (metadata.payloadType !== undefined) flagMetadata.payloadType = metadata.payloadType;
    if (value === undefined) return { value: defaultValue, reason, variant, flagMetadata };
    if (typeof value !== kind) throw new TypeMismatchError(`Flag "${flagKey}" is a ${typeof value}, not a ${kind}`);
    return { value: value as T, reason, variant, flagMetadata };
  }
}

/**
 * Creates an OpenFeature provider for `@openfeature/server-sdk` that evaluates in process against
 * a proxy. It is ready when the proxy is, and emits `PROVIDER_CONFIGURATION_CHANGED` on every
 * flag-set change. Values, variants, reasons and errors are those of the proxy's OFREP routes.
 *
 * @example
 * ```ts
 * import { OpenFeature } from '@openfeature/server-sdk';
 * import { createFlagProxy } from 'flag-proxy';
 * import { createOpenFeatureProvider } from 'flag-proxy/openfeature';
 *
 * const proxy = createFlagProxy({ flagUrl, flagApiToken, clientKeys: ['browser-key'] });
 * await OpenFeature.setProviderAndWait(createOpenFeatureProvider(proxy));
 * const flags = OpenFeature.getClient();
 * if (await flags.getBooleanValue('new-checkout', false, { targetingKey: user.id })) { ... }
 * ```
 */
export function createOpenFeatureProvider(proxy: OpenFeatureProviderTarget, options: OpenFeatureProviderOptions = {}): FlagProxyOpenFeatureProvider {
  return new InProcessProvider(proxy, options.targetingKey ?? 'userId');
}
