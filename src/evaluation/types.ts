/**
 * Types re-exported from unleash-client, so that nothing outside src/evaluation imports it, and
 * the evaluation types shared by the engine and the compiled evaluator (kept below both). Nothing
 * here loads unleash-client at import: see {@link Strategy}.
 */
import type { ClientFeaturesResponse, Strategy as UnleashStrategy, UnleashConfig } from 'unleash-client';
import { loadOnDemand } from '../load-on-demand.js';

export type { ClientFeaturesResponse as FeaturesResponse, Context as UnleashContext, Variant } from 'unleash-client';
/** One feature definition as the upstream's client API serves it. */
export type FeatureDefinition = ClientFeaturesResponse['features'][number];
/** Where the last fetched flag set is backed up (unleash-client's storage provider interface). */
export type StorageProvider<T> = {
  set(key: string, data: T): Promise<void>;
  get(key: string): Promise<T | undefined>;
};
/** @internal check that our StorageProvider matches unleash-client's. */
export type _StorageProviderCheck = NonNullable<UnleashConfig['storageProvider']> extends StorageProvider<ClientFeaturesResponse>
  ? true
  : never;

/**
 * Keeps the flag set in memory: a backup that lasts as long as the process (a restart without the
 * upstream then starts empty). The same interface and behaviour as unleash-client's class of this
 * name, without loading unleash-client.
 *
 * @example
 * createFlagProxy({ flagUrl, flagApiToken, clientKeys, storageProvider: new InMemStorageProvider() });
 */
export class InMemStorageProvider<T> implements StorageProvider<T> {
  private readonly store = new Map<string, T>();

  async set(key: string, data: T): Promise<void> {
    this.store.set(key, data);
  }

  async get(key: string): Promise<T | undefined> {
    return this.store.get(key);
  }
}

/**
 * unleash-client's `Strategy` class, for custom activation strategies: subclass it and pass
 * instances as `customStrategies`. unleash-client (and its semver, regex and IP parsers) loads when
 * the class is first used (subclassed, constructed, or a static read), not when flag-proxy is
 * imported: a stand-in forwards every use to the real class. Subclasses and their instances are the
 * real class's (`instanceof` holds for both).
 *
 * @example
 * class BetaUsers extends Strategy {
 *   constructor() { super('betaUsers'); }
 *   isEnabled(parameters: Record<string, unknown>, context: { userId?: string }) { return context.userId?.startsWith('beta-') ?? false; }
 * }
 */
export const Strategy: typeof UnleashStrategy = lazyClass(() => (loadOnDemand('unleash-client') as typeof import('unleash-client')).Strategy);
export type Strategy = UnleashStrategy;

/**
 * A stand-in for a class loaded on first use: `extends`, `new`, `instanceof` and static members
 * reach the real class. (Calling it without `new` throws, as calling the class does.)
 */
function lazyClass<C extends abstract new (...args: never[]) => unknown>(load: () => C): C {
  let real: C | undefined;
  const target = (): C => (real ??= load());
  // Where the stand-in itself is the receiver or the new target, the real class takes its place.
  const own = (value: unknown): unknown => (value === standIn ? target() : value);
  // A plain function as the proxy target: constructible, with a writable `prototype` the traps may report differently.
  const standIn: C = new Proxy(function Strategy() {} as unknown as C, {
    get: (_stub, key, receiver) => Reflect.get(target(), key, own(receiver)),
    set: (_stub, key, value, receiver) => Reflect.set(target(), key, value, own(receiver)),
    has: (_stub, key) => Reflect.has(target(), key),
    apply: (_stub, self, args: unknown[]) => Reflect.apply(target() as unknown as (...a: unknown[]) => unknown, self, args),
    construct: (_stub, args: unknown[], newTarget) =>
      Reflect.construct(target() as unknown as new (...a: unknown[]) => object, args, own(newTarget) as new (...a: unknown[]) => object),
    getPrototypeOf: () => Reflect.getPrototypeOf(target()),
  });
  return standIn;
}

/** Property values: scalars only (nested objects and lists are dropped when a context is built). */
export type PropertyValue = string | number | boolean;

/** The evaluation context handed to the flag rules. */
export interface EvaluationContext {
  appName?: string;
  environment?: string;
  userId?: string;
  sessionId?: string;
  remoteAddress?: string;
  currentTime?: Date;
  properties: Record<string, PropertyValue>;
  [key: string]: unknown;
}

/** A variant as answered on the wire (unleash-client 6 shape). */
export interface WireVariant {
  name: string;
  enabled: boolean;
  payload?: { type: string; value: string };
  feature_enabled?: boolean;
  featureEnabled?: boolean;
}

/** A value a host's `context` hook may give a field or property (numbers and booleans become strings). */
export type HostContextValue = string | number | boolean | null | undefined;

/**
 * What a host's `context` hook returns. Every key given belongs to the host, even with the value
 * `undefined` or `null` (the caller's value for it is then dropped): see {@link overlayContext}.
 */
export interface HostContextFields {
  appName?: HostContextValue;
  environment?: HostContextValue;
  userId?: HostContextValue;
  sessionId?: HostContextValue;
  remoteAddress?: HostContextValue;
  /** A Date, an ISO string or epoch milliseconds. */
  currentTime?: Date | string | number | null;
  properties?: Record<string, HostContextValue> | null;
  [key: string]: unknown;
}

/**
 * A storage provider that can tell when another process replaced what is stored (as
 * `flag-proxy/redis` does over Redis pub/sub): the proxy then adopts the stored flag set at once, so
 * a change one proxy of a fleet sees reaches every proxy's clients, even one whose upstream is down.
 */
export interface WatchableStorage {
  /** Calls `onChange` when another writer replaced the value under `key`; returns the unsubscribe. */
  watch(key: string, onChange: () => void): () => void;
}

/** Whether a storage provider can {@link WatchableStorage.watch}. */
export function isWatchable(provider: unknown): provider is WatchableStorage {
  return typeof (provider as Partial<WatchableStorage> | undefined)?.watch === 'function';
}
