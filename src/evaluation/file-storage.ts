/**
 * The default backup of a proxy: a JSON file in the OS temp directory, like unleash-client's own
 * default, but named by a scope too (unleash-client names it by app name alone, so proxies of
 * different upstreams with one app name would start from each other's flags). Written to a
 * temporary file first and renamed, so a reader never sees half a snapshot.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FeaturesResponse, StorageProvider } from './types.js';

const safe = (part: string): string => part.replace(/[^A-Za-z0-9_.-]/g, '_');

/**
 * A storage provider writing `flag-proxy-backup-<scope>-<key>.json` files in `directory` (the OS
 * temp directory by default), atomically.
 *
 * @example
 * ```ts
 * createFlagProxy({ ...options, storageProvider: createFileStorageProvider('eu-prod', '/var/lib/flag-proxy') });
 * ```
 */
export function createFileStorageProvider(scope: string, directory = tmpdir()): StorageProvider<FeaturesResponse> {
  const file = (key: string): string => path.join(directory, `flag-proxy-backup-${safe(scope)}-${safe(key)}.json`);
  return {
    async get(key) {
      try {
        const parsed = JSON.parse(await readFile(file(key), 'utf8')) as FeaturesResponse;
        return Array.isArray(parsed?.features) ? parsed : undefined;
      } catch {
        // Missing or unreadable: there is no backup to start from.
        return undefined;
      }
    },
    async set(key, data) {
      const target = file(key);
      const temporary = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      try {
        await writeFile(temporary, JSON.stringify(data));
        await rename(temporary, target);
      } catch (error) {
        await unlink(temporary).catch(() => undefined);
        throw error;
      }
    },
  };
}
