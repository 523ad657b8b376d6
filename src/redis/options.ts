/**
 * Options of the Redis storage provider, below both `createRedisStorageProvider` (index.ts) and
 * the environment reader (env.ts), so neither imports the other.
 */
import type { Logger } from '../logger.js';

/**
 * The commands the provider uses, as a node-redis client (v4 or v5) has them. Pass a connected
 * client; it stays yours to close.
 */
export interface RedisStorageClient {
  get(key: string): Promise<unknown>;
  set(key: string, value: string, options?: { EX?: number; expiration?: { type: 'EX'; value: number } }): Promise<unknown>;
  expire(key: string, seconds: number): Promise<unknown>;
}

/**
 * Options of {@link createRedisStorageProvider}. Give `client` or `url`.
 *
 * @example
 * ```ts
 * const options: RedisStorageOptions = { url: 'redis://redis.internal:6379', keyPrefix: 'flags:prod', ttlSeconds: 86_400 };
 * ```
 */
export interface RedisStorageOptions {
  /** A connected node-redis client, shared with your code; {@link RedisStorageProvider.close} leaves it open. */
  client?: RedisStorageClient;
  /** `redis://` or `rediss://` URL; the provider creates, connects and (on `close()`) closes its own client. */
  url?: string;
  /** First part of every key: `<keyPrefix>:<key>:v1`. Env `FLAG_PROXY_REDIS_KEY_PREFIX`. @default 'flag-proxy' */
  keyPrefix?: string;
  /**
   * Seconds a snapshot outlives the last proxy that writes it: every running provider refreshes
   * the expiry of what it wrote every `ttlSeconds / 3`. `0` keeps snapshots for ever.
   * Env `FLAG_PROXY_REDIS_TTL`. @default 0
   */
  ttlSeconds?: number;
  /** Milliseconds a Redis command may take before it counts as failed. @default 2000 */
  timeoutMs?: number;
  /** Where failures are reported (a Redis outage is logged, never thrown at the proxy). @default the built-in logger at `warn` */
  logger?: Logger;
}
