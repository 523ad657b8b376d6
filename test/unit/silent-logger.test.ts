/**
 * `silentLogger` from flag-proxy/testing: a proxy whose upstream keeps failing writes nothing with
 * it, where the built-in logger reports the failures.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createFlagProxy, type FlagProxyOptions, type Logger } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, silentLogger, type TestFlagServer } from 'flag-proxy/testing';

let upstream: TestFlagServer | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await upstream?.close();
});

/** Everything written to stdout, stderr or the console while a proxy polls a failing upstream. */
async function outputWith(logger: Logger | undefined): Promise<string[]> {
  upstream = await createTestFlagServer();
  upstream.setFault({ status: 500 });
  const written: string[] = [];
  const capture = (chunk: unknown): boolean => {
    written.push(String(chunk));
    return true;
  };
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) vi.spyOn(console, method).mockImplementation((...args) => void capture(args.join(' ')));
  const options: FlagProxyOptions = {
    flagUrl: upstream.url,
    flagApiToken: upstream.token,
    clientKeys: ['k'],
    refreshInterval: 50,
    metricsInterval: 0,
    storageProvider: createMemoryStorageProvider(),
    ...(logger ? { logger } : {}),
  };
  const proxy = createFlagProxy(options);
  await vi.waitFor(() => expect(upstream!.requests.filter((r) => r.status === 500).length).toBeGreaterThanOrEqual(2));
  await proxy.close();
  vi.restoreAllMocks();
  return written;
}

describe('silentLogger', () => {
  it('writes nothing while the upstream fails', async () => {
    expect(await outputWith(silentLogger)).toEqual([]);
  });

  it('is needed: the built-in logger reports the same failures', async () => {
    expect((await outputWith(undefined)).join('\n')).toMatch(/500/);
  });

  it('cannot be changed by a test that borrows it', () => {
    expect(Object.isFrozen(silentLogger)).toBe(true);
  });
});
