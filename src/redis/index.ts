/**
 * `flag-proxy/redis`: a storage provider that keeps the last good flag snapshot in Redis, so a
 * fleet of proxies shares it and a new instance whose upstream is unreachable starts from it.
 * `redis` (node-redis 4 or 5) is an optional peer dependency: it is loaded only when the provider
 * is given a `url` and has to create its own client.
 */
import { FlagProxyError } from '../errors.js';
import { randomUUID } from 'node:crypto';
import type { FeaturesResponse, StorageProvider, WatchableStorage } from '../evaluation/types.js';
import { createDefaultLogger, redactUrlCredentials, type Logger } from '../logger.js';
import type { RedisStorageClient, RedisStorageOptions } from './options.js';

export { redisStorageOptionsFromEnv, REDIS_ENV_NAMES } from './env.js';
export type { RedisStorageClient, RedisStorageOptions } from './options.js';

/** Version of the stored format; part of every key, so a new format never reads an old one. */
export const REDIS_SNAPSHOT_FORMAT = 1;

/** A storage provider backed by Redis. */
export interface RedisStorageProvider extends StorageProvider<FeaturesResponse>, WatchableStorage {
  /** The Redis key a storage key is kept under, e.g. `flag-proxy:my-app:v1`. */
  keyFor(key: string): string;
  /** Stops refreshing expiries and closes the client the provider created (not one passed in). Idempotent. */
  close(): Promise<void>;
}

/** The pub/sub side of a node-redis client, where it has one (a client passed in may not). */
interface PubSubClient {
  publish?(channel: string, message: string): Promise<unknown>;
  duplicate?(): PubSubClient;
  connect?(): Promise<unknown>;
  subscribe?(channel: string, listener: (message: string) => void): Promise<unknown>;
  unsubscribe?(channel: string): Promise<unknown>;
  close?(): Promise<unknown>;
  quit?(): Promise<unknown>;
  destroy?(): void;
  on?(event: 'error', listener: (error: unknown) => void): unknown;
}

/** What is stored: the snapshot and when it was written. */
interface StoredSnapshot {
  savedAt: string;
  snapshot: FeaturesResponse;
}

/** A client the provider created itself (node-redis). */
interface OwnedClient extends RedisStorageClient {
  connect(): Promise<unknown>;
  close?(): Promise<unknown>;
  quit?(): Promise<unknown>;
  destroy?(): void;
  disconnect?(): Promise<unknown>;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  readonly isReady: boolean;
}

/** Failures are logged at most once per this interval and operation, however many there are. */
const FAILURE_LOG_INTERVAL_MS = 30_000;

function invalid(option: string, message: string): never {
  throw new FlagProxyError('INVALID_OPTION', `Invalid option ${option}: ${message}`, { status: 500 });
}

function timeout<T>(operation: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis ${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([operation, expired]).finally(() => clearTimeout(timer));
}

function decode(raw: unknown): StoredSnapshot | undefined {
  const text = typeof raw === 'string' ? raw : Buffer.isBuffer(raw) ? raw.toString('utf8') : undefined;
  if (text === undefined) return undefined;
  const parsed = JSON.parse(text) as Partial<StoredSnapshot> | null;
  const snapshot = parsed?.snapshot;
  if (typeof parsed?.savedAt !== 'string' || typeof snapshot !== 'object' || snapshot === null || !Array.isArray(snapshot.features)) {
    throw new Error('not a flag snapshot');
  }
  return parsed as StoredSnapshot;
}

/** The password of a Redis URL (raw and decoded are the same for most), if it has one of 4+ characters. */
function passwordOf(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    const password = decodeURIComponent(new URL(url).password);
    // A very short password is a substring of too much ordinary text to be replaced in it.
    return password.length >= 4 ? password : undefined;
  } catch {
    return undefined;
  }
}

/** The provider's options, checked once, with their defaults. */
interface RedisSettings {
  given: RedisStorageClient | undefined;
  url: string | undefined;
  keyPrefix: string;
  ttlSeconds: number;
  timeoutMs: number;
  logger: Logger;
}

function resolveSettings(options: RedisStorageOptions): RedisSettings {
  if (typeof options !== 'object' || options === null) invalid('options', 'must be an object');
  const { client: given, url } = options;
  if ((given === undefined) === (url === undefined)) invalid('client/url', 'give exactly one of client and url');
  if (given !== undefined && (typeof given.get !== 'function' || typeof given.set !== 'function' || typeof given.expire !== 'function')) {
    invalid('client', 'must be a node-redis client (with get, set and expire)');
  }
  if (url !== undefined) {
    let protocol: string | undefined;
    try {
      protocol = new URL(url).protocol;
    } catch {
      protocol = undefined;
    }
    // The URL may hold a password: it is never repeated in a message.
    if (protocol !== 'redis:' && protocol !== 'rediss:') invalid('url (FLAG_PROXY_REDIS_URL)', 'must be a redis:// or rediss:// URL');
  }
  const keyPrefix = options.keyPrefix ?? 'flag-proxy';
  if (typeof keyPrefix !== 'string' || keyPrefix === '' || /\s/.test(keyPrefix)) {
    invalid('keyPrefix (FLAG_PROXY_REDIS_KEY_PREFIX)', 'must be a non-empty string without spaces');
  }
  const ttlSeconds = options.ttlSeconds ?? 0;
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < 0) invalid('ttlSeconds (FLAG_PROXY_REDIS_TTL)', 'must be a non-negative integer');
  const timeoutMs = options.timeoutMs ?? 2000;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) invalid('timeoutMs', 'must be a positive integer');
  const logger = options.logger ?? createDefaultLogger();
  return { given, url, keyPrefix, ttlSeconds, timeoutMs, logger };
}

/** Logs a failed operation at most once per interval, with the URL's password redacted. */
function createFailureReporter({ logger, url }: RedisSettings): (operation: string, error: unknown) => void {
  const lastLogged = new Map<string, number>();
  const password = passwordOf(url);
  return (operation: string, error: unknown): void => {
    const now = Date.now();
    if (now - (lastLogged.get(operation) ?? 0) < FAILURE_LOG_INTERVAL_MS) return;
    lastLogged.set(operation, now);
    // The logger may be the caller's own: redact here, not only in the proxy's redacting logger.
    let reason = redactUrlCredentials(error instanceof Error ? error.message : String(error));
    if (password !== undefined) reason = reason.split(password).join('[redacted]');
    logger.warn(`Redis storage: ${operation} failed: ${reason}`);
  };
}

/** The client: the one given, or one created (and connected) on first use and closed by `shutdown`. */
interface Connection {
  client(): Promise<RedisStorageClient>;
  /** Refuses new connections and closes the created client, gracefully when it can. */
  shutdown(): Promise<void>;
}

function createConnection({ given, url, timeoutMs }: RedisSettings, report: (operation: string, error: unknown) => void): Connection {
  let owned: OwnedClient | undefined;
  let connecting: Promise<RedisStorageClient> | undefined;
  let closed = false;
  const client = (): Promise<RedisStorageClient> => {
    if (given !== undefined) return Promise.resolve(given);
    connecting ??= (async () => {
      // Loaded here, so that `redis` is needed only by those who let the provider create a client.
      const { createClient } = await import('redis').catch((error: unknown) => {
        throw new Error('the optional peer dependency `redis` is not installed (npm install redis), or failed to load', { cause: error });
      });
      const created = createClient({
        url,
        // Commands fail at once while disconnected instead of queueing stale snapshots.
        disableOfflineQueue: true,
        socket: { connectTimeout: timeoutMs, reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 5000) },
      }) as unknown as OwnedClient;
      // Without a listener, an 'error' event would end the process.
      created.on('error', (error) => report('connection', error));
      if (closed) throw new Error('the storage provider is closed');
      owned = created;
      await created.connect();
      if (closed) {
        created.destroy?.();
        throw new Error('the storage provider is closed');
      }
      return created;
    })();
    const pending = connecting;
    // A failed first connection is retried on the next command.
    pending.catch(() => {
      if (connecting === pending && !owned?.isReady) connecting = undefined;
    });
    return pending;
  };

  return {
    client,
    async shutdown() {
      closed = true;
      const own = owned;
      if (own === undefined) return;
      if (own.isReady) {
        try {
          await timeout(Promise.resolve(own.close?.() ?? own.quit?.()), timeoutMs, 'close');
          return;
        } catch {
          // Fall through to a hard stop.
        }
      }
      if (own.destroy) own.destroy();
      else await own.disconnect?.().catch(() => undefined);
    },
  };
}

/**
 * Creates a storage provider that keeps each snapshot in one Redis key, `<keyPrefix>:<key>:v1`
 * (the key unleash-client hands it is the app name; a multi-environment proxy adds the
 * environment: `<keyPrefix>:<environment>:<appName>:v1`). Each snapshot is written by a single
 * `SET` of the whole JSON document, so a reader sees the previous snapshot or the new one, never
 * part of one; the last writer wins. Reads and writes that fail or take longer than `timeoutMs`
 * are logged and treated as "no snapshot" / "not written": Redis being down never stops a proxy.
 *
 * Proxies serving different upstream environments must not share a key: give each its own
 * `keyPrefix` (or app name).
 *
 * @throws FlagProxyError `INVALID_OPTION` for options that do not validate.
 * @example
 * ```ts
 * import { createFlagProxy } from 'flag-proxy';
 * import { createRedisStorageProvider } from 'flag-proxy/redis';
 *
 * const storageProvider = createRedisStorageProvider({ url: process.env.REDIS_URL, keyPrefix: 'flag-proxy:production' });
 * const proxy = createFlagProxy({ ...options, storageProvider });
 * // on shutdown: await proxy.close(); await storageProvider.close();
 * ```
 */
export function createRedisStorageProvider(options: RedisStorageOptions): RedisStorageProvider {
  const settings = resolveSettings(options);
  const { keyPrefix, ttlSeconds, timeoutMs, logger } = settings;
  const report = createFailureReporter(settings);
  const connection = createConnection(settings, report);
  const client = connection.client;
  let closed = false;

  const keyFor = (key: string): string => `${keyPrefix}:${key}:v${REDIS_SNAPSHOT_FORMAT}`;
  /** Every write is announced on `<redis key>:changed` with this provider's id, so it can skip its own. */
  const writerId = randomUUID();
  const channelOf = (redisKey: string): string => `${redisKey}:changed`;
  const unwatchers = new Set<() => void>();
  const written = new Set<string>();
  let refresher: NodeJS.Timeout | undefined;
  const keepAlive = (): void => {
    if (ttlSeconds === 0 || refresher !== undefined || closed) return;
    refresher = setInterval(() => {
      for (const key of written) {
        void client()
          .then((c) => timeout(c.expire(key, ttlSeconds), timeoutMs, 'EXPIRE'))
          .catch((error: unknown) => report('refreshing the expiry', error));
      }
    }, Math.max(1000, Math.floor((ttlSeconds * 1000) / 3)));
    refresher.unref();
  };

  return {
    keyFor,
    async get(key) {
      if (closed) return undefined;
      const redisKey = keyFor(key);
      try {
        const raw = await timeout(
          client().then((c) => c.get(redisKey)),
          timeoutMs,
          'GET',
        );
        if (raw === null || raw === undefined) return undefined;
        const stored = decode(raw);
        logger.info(`Redis storage: read the flag snapshot saved at ${stored?.savedAt} from ${redisKey}`);
        return stored?.snapshot;
      } catch (error) {
        report(`reading ${redisKey}`, error);
        return undefined;
      }
    },
    async set(key, data) {
      if (closed) return;
      const redisKey = keyFor(key);
      const document: StoredSnapshot = { savedAt: new Date().toISOString(), snapshot: data };
      try {
        await timeout(
          client().then((c) =>
            c.set(
              redisKey,
              JSON.stringify(document),
              // node-redis 5 reads `expiration`, node-redis 4 `EX`; each ignores the other.
              ttlSeconds > 0 ? { expiration: { type: 'EX', value: ttlSeconds }, EX: ttlSeconds } : undefined,
            ),
          ),
          timeoutMs,
          'SET',
        );
        written.add(redisKey);
        keepAlive();
        const publisher = (await client()) as PubSubClient;
        if (typeof publisher.publish === 'function') await timeout(publisher.publish(channelOf(redisKey), writerId), timeoutMs, 'PUBLISH');
      } catch (error) {
        report(`writing ${redisKey}`, error);
      }
    },
    watch(key, onChange) {
      if (closed) return () => undefined;
      const channel = channelOf(keyFor(key));
      let subscriber: PubSubClient | undefined;
      let stopped = false;
      const stop = (): void => {
        if (stopped) return;
        stopped = true;
        unwatchers.delete(stop);
        const done = subscriber;
        subscriber = undefined;
        if (done) void Promise.resolve(done.unsubscribe?.(channel)).then(() => done.close?.() ?? done.quit?.()).catch(() => done.destroy?.());
      };
      unwatchers.add(stop);
      void (async () => {
        // Subscribing takes a connection of its own: a duplicate of the client (ours or the one given).
        const base = (await client()) as PubSubClient;
        const duplicate = base.duplicate?.();
        if (duplicate === undefined) return;
        duplicate.on?.('error', (error: unknown) => report(`watching ${channel}`, error));
        await duplicate.connect?.();
        if (stopped) {
          await (duplicate.close?.() ?? duplicate.quit?.());
          return;
        }
        subscriber = duplicate;
        await duplicate.subscribe?.(channel, (message: string) => {
          if (!stopped && message !== writerId) onChange();
        });
      })().catch((error: unknown) => report(`watching ${channel}`, error));
      return stop;
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const stop of [...unwatchers]) stop();
      clearInterval(refresher);
      await connection.shutdown();
    },
  };
}
