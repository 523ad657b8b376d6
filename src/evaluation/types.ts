/**
 * Types re-exported from unleash-client, so that nothing outside src/evaluation imports it, and
 * the evaluation types shared by the engine and the compiled evaluator (kept below both).
 */
import type { ClientFeaturesResponse, UnleashConfig } from 'unleash-client';

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
export { Strategy, InMemStorageProvider } from 'unleash-client';

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
