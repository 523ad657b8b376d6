/**
 * Environment variables → {@link RedisStorageOptions}. Reads only the environment it is handed.
 */
import { FlagProxyError } from '../errors.js';
import type { RedisStorageOptions } from './options.js';

type Env = Readonly<Record<string, string | undefined>>;

/** The variables of the Redis storage provider. */
export const REDIS_ENV_NAMES = {
  url: 'FLAG_PROXY_REDIS_URL',
  keyPrefix: 'FLAG_PROXY_REDIS_KEY_PREFIX',
  ttlSeconds: 'FLAG_PROXY_REDIS_TTL',
} as const;

/**
 * Reads the Redis storage options from `env` (e.g. `process.env`), or returns `undefined` when
 * `FLAG_PROXY_REDIS_URL` is not set.
 *
 * @throws FlagProxyError `INVALID_OPTION` naming the variable, for a value that does not parse.
 * @example
 * ```ts
 * const redis = redisStorageOptionsFromEnv(process.env);
 * const storageProvider = redis && createRedisStorageProvider(redis);
 * ```
 */
export function redisStorageOptionsFromEnv(env: Env): RedisStorageOptions | undefined {
  const read = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const url = read(REDIS_ENV_NAMES.url);
  if (url === undefined) return undefined;
  const options: RedisStorageOptions = { url };
  const keyPrefix = read(REDIS_ENV_NAMES.keyPrefix);
  if (keyPrefix !== undefined) options.keyPrefix = keyPrefix;
  const ttl = read(REDIS_ENV_NAMES.ttlSeconds);
  if (ttl !== undefined) {
    if (!/^\d+$/.test(ttl) || !Number.isSafeInteger(Number(ttl))) {
      throw new FlagProxyError(
        'INVALID_OPTION',
        `Invalid option ttlSeconds (${REDIS_ENV_NAMES.ttlSeconds}): expected a non-negative integer, got "${ttl}"`,
        { status: 500 },
      );
    }
    options.ttlSeconds = Number(ttl);
  }
  return options;
}
