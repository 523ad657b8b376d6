/**
 * Issue 20, item 6: secrets are never shown, wherever they go. Credentials in a URL are redacted
 * in log lines, error messages and causes; `util.inspect` of a proxy, a multi-environment proxy,
 * an admin events client and a storage provider, and `JSON.stringify` of a proxy's config, show
 * `[redacted]` where tokens, keys and passwords are.
 */
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createFlagProxy, createMultiEnvironmentProxy, type FlagProxy, type Logger, type MultiEnvironmentProxy } from 'flag-proxy';
import { createAdminEventsClient } from 'flag-proxy/admin-events';
import { createRedisStorageProvider } from 'flag-proxy/redis';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { redactUrl } from '../../src/logger.js';

const TOKEN = 'upstream-SECRET-token-71';
const KEY = 'client-SECRET-key-82';
const SERVER_TOKEN = 'server-SECRET-token-93';
const PASSWORD = 'hunter2pass';
const BOOT_AUTH = 'Bearer boot-SECRET-94';
const SECRETS = [TOKEN, KEY, SERVER_TOKEN, PASSWORD, 'boot-SECRET-94'];

function capture(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const log =
    (level: string) =>
    (message: string, ...args: unknown[]) =>
      void lines.push([level, message, ...args.map((a) => inspect(a, { depth: 8 }))].join(' '));
  return { lines, logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error'), fatal: log('fatal') } };
}

function expectNoSecret(text: string): void {
  for (const secret of SECRETS) expect(text).not.toContain(secret);
}

/** The whole `cause` chain of an error, as inspect shows it at every level. */
function causeChain(error: unknown): string {
  const parts: string[] = [];
  for (let e = error, i = 0; e !== undefined && i < 10; e = (e as { cause?: unknown }).cause, i++) parts.push(inspect(e, { depth: 8 }));
  return parts.join('\n');
}

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function upstream(): Promise<TestFlagServer> {
  const server = await createTestFlagServer({ features: [] });
  closers.push(() => server.close());
  return server;
}

describe('redactUrl', () => {
  it('replaces user and password, keeping scheme, host, path and query', () => {
    expect(redactUrl('http://bob:hunter2pass@host:8080/api/?x=1')).toBe('http://[redacted]@host:8080/api/?x=1');
    expect(redactUrl(new URL('redis://:hunter2pass@redis.internal:6379/0'))).toBe('redis://[redacted]@redis.internal:6379/0');
    expect(redactUrl('https://flags.example.com/api/')).toBe('https://flags.example.com/api/');
  });

  it('redacts credentials of a text that is not a valid URL without echoing them', () => {
    expect(redactUrl('http://bob:hunter2pass@[bad')).not.toContain(PASSWORD);
  });
});

describe('credentials in the flag URL', () => {
  it('never appear in the log lines of a refused token, nor in the error logged', async () => {
    const server = await upstream();
    server.setFault({ status: 401 });
    const { logger, lines } = capture();
    const url = server.url.replace('http://', `http://bob:${PASSWORD}@`);
    const proxy = createFlagProxy({ flagUrl: url, flagApiToken: TOKEN, clientKeys: [KEY], logger, storageProvider: createMemoryStorageProvider(), metricsInterval: 0, logLevel: 'debug' });
    closers.push(() => proxy.close());
    await expect.poll(() => lines.some((l) => l.includes('401')), { timeout: 5000 }).toBe(true);
    const text = lines.join('\n');
    expect(text).toContain('[redacted]@127.0.0.1');
    expectNoSecret(text);
  });
});

describe('inspect and JSON of what the package returns', () => {
  let proxy: FlagProxy | MultiEnvironmentProxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  it('a proxy: util.inspect and JSON.stringify(proxy.config) show [redacted], and the config stays readable by code', async () => {
    const server = await upstream();
    const created = createFlagProxy({
      flagUrl: server.url.replace('http://', `http://bob:${PASSWORD}@`),
      flagApiToken: TOKEN,
      clientKeys: [KEY],
      expServerSideSdkConfig: { tokens: [SERVER_TOKEN] },
      expBootstrap: { url: `http://boot:${PASSWORD}@127.0.0.1:1/flags.json`, urlHeaders: { Authorization: BOOT_AUTH } },
      storageProvider: createMemoryStorageProvider(),
      metricsInterval: 0,
      logger: capture().logger,
    });
    proxy = created;
    const shown = [inspect(created, { depth: 5 }), inspect(created, { depth: 5, showHidden: true }), JSON.stringify(created.config), String(created.config)].join('\n');
    expectNoSecret(shown);
    expect(shown).toContain('[redacted]');
    expect(created.config.flagApiToken).toBe(TOKEN);
    expect(created.config.clientKeys).toEqual([KEY]);
    expect(created.config.flagUrl).toContain(PASSWORD);
    expect({ ...created.config }.flagApiToken).toBe(TOKEN);
  });

  it('a multi-environment proxy', async () => {
    const server = await upstream();
    proxy = createMultiEnvironmentProxy({
      flagUrl: server.url,
      metricsInterval: 0,
      logger: capture().logger,
      storageProvider: createMemoryStorageProvider(),
      environments: [{ name: 'production', flagApiToken: TOKEN, clientKeys: [KEY] }],
    });
    expectNoSecret(inspect(proxy, { depth: 8 }));
    expectNoSecret(JSON.stringify([...proxy.environments.values()].map((p) => p.config)));
  });

  it('an admin events client, and the errors it throws (cause chain included)', async () => {
    const client = createAdminEventsClient({
      flagUrl: 'http://127.0.0.1:1/api/',
      adminToken: TOKEN,
      fetch: async () => {
        throw new Error(`connect failed for http://admin:${PASSWORD}@127.0.0.1:1 with ${TOKEN}`, { cause: new Error(`inner ${TOKEN} via http://admin:${PASSWORD}@proxy.internal:3128`) });
      },
    });
    expectNoSecret(inspect(client, { depth: 8, showHidden: true }));
    const error = await client.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expectNoSecret(causeChain(error));
  });

  it('a Redis storage provider given a URL with a password, and what it logs when Redis is unreachable', async () => {
    const { logger, lines } = capture();
    const provider = createRedisStorageProvider({ url: `redis://:${PASSWORD}@127.0.0.1:1/0`, logger, timeoutMs: 300 });
    closers.push(() => provider.close());
    expectNoSecret(inspect(provider, { depth: 8, showHidden: true }));
    expectNoSecret(JSON.stringify(provider) ?? '');
    expect(await provider.get('x')).toBeUndefined();
    expect(lines.join('\n')).toContain('Redis storage');
    expectNoSecret(lines.join('\n'));
  });
});
