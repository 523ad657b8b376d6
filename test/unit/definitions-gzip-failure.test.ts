/**
 * The client API gzips its answer on libuv's thread pool (src/surfaces/client-api/features.ts).
 * Should that ever fail, the answer is still given, gzipped on the spot, and a later poll tries
 * nothing that failed before: a failed gzip is never kept as the answer's.
 */
import { gunzipSync } from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';

vi.mock('node:zlib', async (original) => {
  const zlib = await original<typeof import('node:zlib')>();
  let failures = 0;
  return {
    ...zlib,
    failures: () => failures,
    gzip: (_body: Buffer, callback: (error: Error | null, result?: Buffer) => void) => {
      failures += 1;
      setImmediate(() => callback(new Error('no thread pool today')));
    },
  };
});

const { createDefinitionsCache, parseFilter } = await import('../../src/surfaces/client-api/features.js');

describe('client API gzip on the thread pool', () => {
  it('falls back to gzipping on the spot when it fails, and still answers', async () => {
    const features = Array.from({ length: 50 }, (_, i) => ({ name: `flag-${i}`, enabled: true, strategies: [] }));
    const snapshot = { revision: 1, features, segments: [] } as never;
    const cache = createDefinitionsCache();
    const answer = await cache.answer(snapshot, parseFilter(''), undefined, true);
    expect(answer.status).toBe(200);
    const bytes = answer.compress!();
    expect(JSON.parse(gunzipSync(bytes).toString())).toEqual({ version: 2, features, query: {}, segments: [] });
    // Kept once made, whichever way.
    const again = await cache.answer(snapshot, parseFilter(''), undefined, true);
    expect(again.compress!()).toBe(bytes);
  });
});
