import type { FeaturesResponse, StorageProvider } from '../evaluation/types.js';

/** A storage provider that keeps backups in memory, for tests; `saved` shows what was written. */
export interface MemoryStorageProvider extends StorageProvider<FeaturesResponse> {
  /** Everything written, by key. */
  readonly saved: Map<string, FeaturesResponse>;
}

/**
 * Creates an in-memory storage provider, optionally pre-filled (to test readiness from a backup).
 *
 * @example
 * ```ts
 * const storageProvider = createMemoryStorageProvider();
 * createFlagProxy({ ...options, storageProvider });
 * ```
 */
export function createMemoryStorageProvider(initial: Record<string, FeaturesResponse> = {}): MemoryStorageProvider {
  const saved = new Map(Object.entries(initial).map(([k, v]) => [k, structuredClone(v)]));
  return {
    saved,
    async get(key) {
      const value = saved.get(key);
      return value === undefined ? undefined : structuredClone(value);
    },
    async set(key, data) {
      saved.set(key, structuredClone(data));
    },
  };
}
