/**
 * `flag-proxy/redis` against a real redis-server: what is stored where, expiry, atomic
 * replacement, Redis being down, and a proxy whose upstream is down starting from the snapshot.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMultiEnvironmentProxy, isFlagProxyError, type FeaturesResponse } from 'flag-proxy';
import { createRedisStorageProvider, redisStorageOptionsFromEnv, type RedisStorageProvider } from 'flag-proxy/redis';
import { createTestFlagServer, silentLogger as quiet } from 'flag-proxy/testing';
import { feature, startHarness, type Harness } from '../support/harness.js';
import { redisServerAvailable, SKIP_MESSAGE, startRedisServer, type RedisServer } from './redis-server.js';

if (!redisServerAvailable) console.warn(SKIP_MESSAGE);


function snapshot(names: string[], marker = ''): FeaturesResponse {
  return { version: 2, features: names.map((n) => feature(n, { description: marker })) } as FeaturesResponse;
}

describe('redisStorageOptionsFromEnv', () => {
  it('returns undefined without FLAG_PROXY_REDIS_URL', () => {
    expect(redisStorageOptionsFromEnv({ FLAG_PROXY_REDIS_KEY_PREFIX: 'x' })).toBeUndefined();
  });

  it('reads the URL, key prefix and TTL', () => {
    expect(
      redisStorageOptionsFromEnv({
        FLAG_PROXY_REDIS_URL: ' redis://cache:6379 ',
        FLAG_PROXY_REDIS_KEY_PREFIX: 'flags:prod',
        FLAG_PROXY_REDIS_TTL: '86400',
      }),
    ).toEqual({ url: 'redis://cache:6379', keyPrefix: 'flags:prod', ttlSeconds: 86_400 });
  });

  it('refuses a TTL that is not a non-negative integer, naming the variable', () => {
    expect(() => redisStorageOptionsFromEnv({ FLAG_PROXY_REDIS_URL: 'redis://x', FLAG_PROXY_REDIS_TTL: '1h' })).toThrow(
      'Invalid option ttlSeconds (FLAG_PROXY_REDIS_TTL): expected a non-negative integer, got "1h"',
    );
  });
});

const fakeClient = {
  get: async (): Promise<null> => null,
  set: async (): Promise<string> => 'OK',
  expire: async (): Promise<number> => 1,
};

describe('createRedisStorageProvider: options', () => {
  const code = (fn: () => unknown): string => {
    try {
      fn();
    } catch (error) {
      expect(isFlagProxyError(error)).toBe(true);
      return (error as Error).message;
    }
    throw new Error('expected a FlagProxyError');
  };

  it.each([
    ['neither client nor url', {}, 'give exactly one of client and url'],
    ['both client and url', { url: 'redis://x', client: fakeClient }, 'give exactly one'],
    ['a URL of another scheme', { url: 'http://user:hunter2@cache:6379' }, 'must be a redis:// or rediss:// URL'],
    ['an empty key prefix', { url: 'redis://x', keyPrefix: '' }, 'keyPrefix'],
    ['a negative TTL', { url: 'redis://x', ttlSeconds: -1 }, 'ttlSeconds'],
    ['a client without expire', { client: { get: fakeClient.get, set: fakeClient.set } }, 'must be a node-redis client'],
  ])('refuses %s', (_, options, message) => {
    const text = code(() => createRedisStorageProvider(options as never));
    expect(text).toContain(message);
    expect(text).not.toContain('hunter2');
  });
});

describe.skipIf(!redisServerAvailable)('createRedisStorageProvider with a real Redis', () => {
  let redis: RedisServer | undefined;
  let client: ReturnType<typeof createClient> | undefined;
  const providers: RedisStorageProvider[] = [];
  const harnesses: Harness[] = [];
  const make = (options: Parameters<typeof createRedisStorageProvider>[0]): RedisStorageProvider => {
    const provider = createRedisStorageProvider({ logger: quiet, ...options });
    providers.push(provider);
    return provider;
  };
  const prefix = (): string => `test-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    redis = await startRedisServer();
    client = createClient({ url: redis.url });
    await client.connect();
  }, 20_000);

  afterEach(async () => {
    for (const h of harnesses.splice(0)) await h.close();
    for (const p of providers.splice(0)) await p.close();
  });

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await redis?.stop();
  });

  it('writes the whole snapshot under <prefix>:<key>:v1 and reads it back', async () => {
    const keyPrefix = prefix();
    const provider = make({ client: client!, keyPrefix });
    const data = snapshot(['a', 'b']);
    await provider.set('my-app', data);
    expect(provider.keyFor('my-app')).toBe(`${keyPrefix}:my-app:v1`);
    expect(await client!.keys(`${keyPrefix}:*`)).toEqual([`${keyPrefix}:my-app:v1`]);
    const stored = JSON.parse((await client!.get(`${keyPrefix}:my-app:v1`))!) as { savedAt: string; snapshot: unknown };
    expect(stored.snapshot).toEqual(data);
    expect(Math.abs(Date.parse(stored.savedAt) - Date.now())).toBeLessThan(10_000);
    expect(await client!.ttl(`${keyPrefix}:my-app:v1`)).toBe(-1);
    expect(await provider.get('my-app')).toEqual(data);
    expect(await provider.get('other-app')).toBeUndefined();
  });

  it('sets the TTL, and keeps refreshing it while the provider runs', async () => {
    const keyPrefix = prefix();
    const provider = make({ client: client!, keyPrefix, ttlSeconds: 3 });
    await provider.set('app', snapshot(['a']));
    const key = provider.keyFor('app');
    expect(await client!.ttl(key)).toBeGreaterThanOrEqual(2);
    // Without the refresh (every second for a 3 s TTL) the key would be gone after 3.5 s.
    await new Promise((r) => setTimeout(r, 3500));
    expect(await client!.ttl(key)).toBeGreaterThanOrEqual(1);
    await provider.close();
    await new Promise((r) => setTimeout(r, 3500));
    expect(await client!.exists(key)).toBe(0);
  }, 15_000);

  it('treats a value that is not a snapshot as no snapshot, and says so', async () => {
    const keyPrefix = prefix();
    const warnings: string[] = [];
    const provider = make({ client: client!, keyPrefix, logger: { ...quiet, warn: (m: string) => warnings.push(m) } });
    await client!.set(`${keyPrefix}:broken:v1`, '{"savedAt":"x","snapsh');
    await client!.set(`${keyPrefix}:shape:v1`, JSON.stringify({ savedAt: 'x', snapshot: { features: 'no' } }));
    expect(await provider.get('broken')).toBeUndefined();
    expect(await provider.get('shape')).toBeUndefined();
    expect(warnings.join('\n')).toContain(`reading ${keyPrefix}:broken:v1 failed`);
  });

  it('never lets a reader see part of a snapshot while several writers replace it', async () => {
    const keyPrefix = prefix();
    const writers = [make({ url: redis!.url, keyPrefix }), make({ url: redis!.url, keyPrefix })];
    const reader = make({ url: redis!.url, keyPrefix });
    const names = Array.from({ length: 3000 }, (_, i) => `toggle-${i}`);
    const versions = ['one', 'two', 'three'].map((marker) => snapshot(names, marker));
    await writers[0]!.set('app', versions[0]!);
    let reads = 0;
    let writing = true;
    const readLoop = (async () => {
      while (writing) {
        const seen = await reader.get('app');
        expect(seen?.features).toHaveLength(names.length);
        // Every toggle carries the same version marker: the snapshot is one version, whole.
        expect(new Set(seen!.features.map((f) => f.description)).size).toBe(1);
        reads += 1;
      }
    })();
    for (let i = 0; i < 30; i++) {
      await Promise.all(writers.map((w, j) => w.set('app', versions[(i + j) % versions.length]!)));
    }
    writing = false;
    await readLoop;
    expect(reads).toBeGreaterThan(5);
  }, 30_000);

  it('creates, connects and closes its own client from a URL', async () => {
    const keyPrefix = prefix();
    const before = (await client!.clientList()).length;
    const provider = make({ url: redis!.url, keyPrefix });
    await provider.set('app', snapshot(['a']));
    expect(await provider.get('app')).toEqual(snapshot(['a']));
    expect((await client!.clientList()).length).toBe(before + 1);
    await provider.close();
    await expect.poll(async () => (await client!.clientList()).length).toBe(before);
    // Closed: no command reaches Redis any more.
    await provider.set('app', snapshot(['b']));
    expect(await provider.get('app')).toBeUndefined();
    expect(JSON.parse((await client!.get(`${keyPrefix}:app:v1`))!).snapshot).toEqual(snapshot(['a']));
  });

  it('answers "no snapshot" quickly and never throws while Redis is unreachable', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    const warnings: string[] = [];
    const provider = make({ url: `redis://127.0.0.1:${port}`, timeoutMs: 300, logger: { ...quiet, warn: (m: string) => warnings.push(m) } });
    const started = Date.now();
    expect(await provider.get('app')).toBeUndefined();
    await expect(provider.set('app', snapshot(['a']))).resolves.toBeUndefined();
    expect(Date.now() - started).toBeLessThan(3000);
    expect(warnings.length).toBeGreaterThan(0);
    await provider.close();
  });

  it('lets a proxy whose upstream is down start from the snapshot another proxy wrote', async () => {
    const keyPrefix = prefix();
    const upstream = await createTestFlagServer({
      features: [feature('on'), feature('rollout', { strategies: [{ name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'userId', groupId: 'r' }, constraints: [] }] })],
    });
    try {
      const first = await startHarness({ upstream, options: { storageProvider: make({ url: redis!.url, keyPrefix }) } });
      harnesses.push(first);
      await expect.poll(() => client!.exists(`${keyPrefix}:flag-proxy:v1`)).toBe(1);

      // Not a 5xx: the client retries those for seconds, past the end of this test's upstream.
      upstream.setFault({ status: 404 });
      const second = await startHarness({ upstream, noWait: true, options: { storageProvider: make({ url: redis!.url, keyPrefix }) } });
      harnesses.push(second);
      await second.proxy.ready;
      for (const userId of ['1', '2', '3', '4', '5']) {
        const [a, b] = await Promise.all([first, second].map((h) => h.request(`/proxy?userId=${userId}`).then((r) => r.text())));
        expect(b).toBe(a);
      }
      expect(upstream.requests.filter((r) => r.path === '/api/client/features').length).toBeGreaterThanOrEqual(2);
    } finally {
      for (const h of harnesses.splice(0)) await h.close();
      await upstream.close();
    }
  });

  it('tells a proxy whose upstream is down of a change another proxy saw, within a second, and its change listeners', async () => {
    const keyPrefix = prefix();
    const upstream = await createTestFlagServer({ features: [feature('on')] });
    const dead = await createTestFlagServer({ features: [] });
    dead.setFault({ status: 404 });
    try {
      // The first polls the upstream; the second's upstream never answers, so it lives on the snapshot.
      const first = await startHarness({ upstream, options: { refreshInterval: 100, storageProvider: make({ url: redis!.url, keyPrefix }) } });
      harnesses.push(first);
      await expect.poll(() => client!.exists(`${keyPrefix}:flag-proxy:v1`)).toBe(1);
      const second = await startHarness({ upstream: dead, noWait: true, options: { refreshInterval: 60_000, storageProvider: make({ url: redis!.url, keyPrefix }) } });
      harnesses.push(second);
      await second.proxy.ready;
      const names = async (h: Harness) => ((await (await h.request('/proxy')).json()) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name);
      expect(await names(second)).toEqual(['on']);
      let told = 0;
      second.proxy.onChange(() => void (told += 1));
      // Let the second's subscription connect before the change.
      await new Promise((r) => setTimeout(r, 300));

      upstream.upsertFeature(feature('new-one'));
      const changedAt = Date.now();
      await expect.poll(() => names(second), { timeout: 3000, interval: 50 }).toEqual(['on', 'new-one']);
      expect(Date.now() - changedAt).toBeLessThan(1000 + 100 + 500);
      expect(told).toBeGreaterThanOrEqual(1);
      expect(await names(first)).toEqual(['on', 'new-one']);
    } finally {
      for (const h of harnesses.splice(0)) await h.close();
      await upstream.close();
      await dead.close();
    }
  });

  it('keeps each environment of a multi-environment proxy under its own key', async () => {
    const keyPrefix = prefix();
    const a = await createTestFlagServer({ clientTokens: ['token-a'], features: [feature('a-flag')] });
    const b = await createTestFlagServer({ clientTokens: ['token-b'], features: [feature('b-flag')] });
    const proxy = createMultiEnvironmentProxy({
      flagUrl: a.url,
      metricsInterval: 0,
      logger: quiet,
      storageProvider: make({ client: client!, keyPrefix }),
      environments: [
        { name: 'production', flagApiToken: 'token-a', clientKeys: ['ka'] },
        { name: 'staging', flagUrl: b.url, flagApiToken: 'token-b', clientKeys: ['kb'] },
      ],
    });
    try {
      await proxy.ready;
      await expect.poll(async () => (await client!.keys(`${keyPrefix}:*`)).sort()).toEqual([
        `${keyPrefix}:production:flag-proxy:v1`,
        `${keyPrefix}:staging:flag-proxy:v1`,
      ]);
      const staging = JSON.parse((await client!.get(`${keyPrefix}:staging:flag-proxy:v1`))!) as { snapshot: FeaturesResponse };
      expect(staging.snapshot.features.map((f) => f.name)).toEqual(['b-flag']);
    } finally {
      await proxy.close();
      await a.close();
      await b.close();
    }
  });
});
