/**
 * Types re-exported from unleash-client, so that nothing outside src/evaluation imports it.
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
