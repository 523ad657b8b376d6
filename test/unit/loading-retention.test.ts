/**
 * What a proxy keeps on V8's heap for a large flag set once it is ready: the definitions as
 * parsed, their digests, the compiled rules and the plan. Loading a set grows V8's young
 * generation to its largest (32 MB of RSS that saturating load then never lets V8 give back)
 * when more than about 15.5 MB outlive young collections while it loads, and V8 counts whatever
 * the set keeps about twice (copied once, promoted the next time): docs/performance.md, "What a
 * set keeps while it loads". This bounds the whole of it, end to end, for the 5000-flag set of
 * the benchmark, so that a change that makes loading keep more is seen here.
 */
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { describe, expect, it } from 'vitest';
import { generateFlags } from '../../bench/flags.js';
import { InMemStorageProvider } from '../../src/index.js';
import { dataBytes, settle } from '../support/heap.js';
import { testProxy } from '../support/served-proxy.js';

/** Heap bytes a proxy keeps once ready, from `upstream` (whose answer, made per request, is garbage by then). */
async function keptOnceReady(upstream: TestFlagServer): Promise<number> {
  await settle();
  const before = dataBytes();
  // No refresh while measuring (each would parse and build the whole set again), and a backup that
  // holds the set it is given: the test kit's memory backup keeps a copy of its own (about 6.7 MB
  // here), which is the backup's, not what loading keeps.
  const proxy = testProxy(upstream, { refreshInterval: 600_000, storageProvider: new InMemStorageProvider() });
  await proxy.ready;
  await settle();
  const kept = dataBytes() - before;
  await proxy.close();
  return kept;
}

describe('a proxy that loaded a large flag set', () => {
  // Measured (2026-11-28): 11.7–12.1 MB for the 5000-flag set (by step of the build: the definitions
  // as parsed about 4.8, the compiled rules 5.6, the plan 1.4, digests 0.5); 12.6–12.9 while each
  // plan entry had an end of its own and kept its whole entries. Before the compiled rules lost
  // their closures per rollout, hash and stickiness, and before the segment-filled copies were made
  // only of toggles that use a segment: 14.0–14.4 MB.
  it('keeps the 5000-flag benchmark set in under 12.8 MB of heap once ready', async () => {
    const { features, segments } = generateFlags(5000);
    const large = await createTestFlagServer({ features, segments });
    const small = await createTestFlagServer({ features: features.slice(0, 20), segments });
    try {
      // Once first with a few flags, so that what loading loads for good (modules, their shared
      // tables) is not counted.
      await keptOnceReady(small);
      const kept = await keptOnceReady(large);
      expect(kept).toBeGreaterThan(5e6);
      expect(kept).toBeLessThan(12.8e6);
    } finally {
      await Promise.all([large.close(), small.close()]);
    }
  });
});
