/**
 * Closing while the upstream fails or hangs must not leave anything behind: no unhandled error
 * (unleash-client's retried requests once surfaced after close() as an 'error' event with no
 * listener), no fetch left open, no further fetch.
 */
import { describe, expect, it } from 'vitest';
import { createFlagProxy } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer, silentLogger as silent } from 'flag-proxy/testing';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function proxyOf(upstream: TestFlagServer) {
  return createFlagProxy({
    flagUrl: upstream.url,
    flagApiToken: upstream.token,
    clientKeys: ['k'],
    refreshInterval: 50,
    storageProvider: createMemoryStorageProvider(),
    logger: silent,
  });
}

describe('close() while the upstream fails', () => {
  it('leaves no unhandled error behind when the upstream goes away after a 5xx', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const upstream = await createTestFlagServer();
      upstream.setFault({ status: 503 });
      const proxy = proxyOf(upstream);
      // Let fetches hit the fault, so one may be in flight when we close.
      await sleep(150);
      await proxy.close();
      await upstream.close();
      await sleep(500);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('aborts a fetch the upstream holds, and fetches nothing more', async () => {
    const upstream = await createTestFlagServer();
    try {
      upstream.setFault({ hang: true, routes: 'features' });
      const proxy = proxyOf(upstream);
      const deadline = Date.now() + 3000;
      while (upstream.fetchConcurrency().current === 0 && Date.now() < deadline) await sleep(10);
      expect(upstream.fetchConcurrency().current).toBe(1);
      const fetches = upstream.requests.length;
      await proxy.close();
      // The held request is dropped by the proxy, long before its 10 s timeout.
      await sleep(200);
      expect(upstream.fetchConcurrency().current).toBe(0);
      await sleep(300);
      expect(upstream.requests.length).toBe(fetches);
    } finally {
      await upstream.close();
    }
  });

  it('fetches nothing when closed in the same tick it was created', async () => {
    const upstream = await createTestFlagServer();
    try {
      const proxy = proxyOf(upstream);
      await proxy.close();
      await sleep(300);
      expect(upstream.requests.filter((r) => r.path.includes('/client/features'))).toEqual([]);
    } finally {
      await upstream.close();
    }
  });
});
