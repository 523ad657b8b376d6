/**
 * A host's own tests often fake the timers (`vi.useFakeTimers()`, `jest.useFakeTimers()`, both of
 * which replace the global `setImmediate` with one that runs only when the test advances the
 * clock). A proxy must still become ready and adopt a changed flag set under them: the slices a
 * flag set is built in (src/evaluation/steps.ts) wait for a turn of the real event loop, not for
 * the global `setImmediate`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createFlagProxy } from 'flag-proxy';
import { createTestFlagServer, silentLogger, type TestFlagServer } from 'flag-proxy/testing';

let upstream: TestFlagServer | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await upstream?.close();
  upstream = undefined;
});

describe('under fake timers', () => {
  it('becomes ready and adopts a changed flag set', async () => {
    upstream = await createTestFlagServer({ features: [{ name: 'checkout', enabled: true, strategies: [{ name: 'default', parameters: {} }] }] });
    vi.useFakeTimers();
    const proxy = createFlagProxy({ flagUrl: upstream.url, flagApiToken: upstream.token, clientKeys: ['a-client-key'], logger: silentLogger });
    try {
      await proxy.ready;
      expect(proxy.isEnabled('checkout', {})).toBe(true);
      upstream.setEnabled('checkout', false);
      await proxy.refresh();
      expect(proxy.isEnabled('checkout', {})).toBe(false);
    } finally {
      await proxy.close();
    }
  });
});
