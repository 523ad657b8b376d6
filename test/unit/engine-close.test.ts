/**
 * Closing while the upstream fails must not leave anything behind that can crash the process:
 * unleash-client retries a request in flight after 5xx, and its failure after close() once
 * surfaced as an 'error' event with no listener (an unhandled rejection).
 */
import { describe, expect, it } from 'vitest';
import { createFlagProxy } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer } from 'flag-proxy/testing';

describe('close() while the upstream fails', () => {
  it('leaves no unhandled error behind when the upstream goes away after a 5xx', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const upstream = await createTestFlagServer();
      upstream.setFault({ status: 503 });
      const proxy = createFlagProxy({
        flagUrl: upstream.url,
        flagApiToken: upstream.token,
        clientKeys: ['k'],
        refreshInterval: 50,
        storageProvider: createMemoryStorageProvider(),
        logger: { debug() {}, info() {}, warn() {}, error() {}, fatal() {} },
      });
      // Let a fetch hit the fault, so a retry is in flight when we close.
      await new Promise((r) => setTimeout(r, 150));
      await proxy.close();
      await upstream.close();
      // The retries come about 1 s and 2 s later.
      await new Promise((r) => setTimeout(r, 3500));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  }, 15_000);
});
