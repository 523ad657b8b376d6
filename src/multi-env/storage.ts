/**
 * Backups per environment. unleash-client names a backup by the app name alone, so two
 * environments with one app name would read each other's flags after a restart; every
 * environment's storage is therefore scoped by its name.
 */
import { isWatchable, type FeaturesResponse, type StorageProvider, type WatchableStorage } from '../evaluation/types.js';

/** A storage provider whose keys are `<scope>:<key>` in `inner`. */
export function scopeStorageProvider(
  inner: StorageProvider<FeaturesResponse>,
  scope: string,
): StorageProvider<FeaturesResponse> {
  const scoped: StorageProvider<FeaturesResponse> & Partial<WatchableStorage> = {
    get: (key) => inner.get(`${scope}:${key}`),
    set: (key, data) => inner.set(`${scope}:${key}`, data),
  };
  if (isWatchable(inner)) scoped.watch = (key, onChange) => inner.watch(`${scope}:${key}`, onChange);
  return scoped;
}

export { createFileStorageProvider } from '../evaluation/file-storage.js';
