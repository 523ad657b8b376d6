/**
 * Compressed answers (src/core/http.ts) hold the memory their bytes need, not zlib's output chunk.
 * zlib's one-shot functions write into a 16 KiB chunk and hand back a view of it: a 1 kB gzip of a
 * typical answer then kept 16 KiB alive, in the answer cache for as long as the answer stayed, and
 * per uncached request until the next young collection (11 MB of glibc heap under the benchmark's
 * gzip scenario).
 */
import { gunzipSync, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { deflateAnswer, gzipAnswer } from '../../src/core/http.js';

/** A toggles answer of `count` entries, shaped like the proxy's, with names that do not repeat. */
function answerOf(count: number): string {
  let seed = 7;
  const next = (): string => ((seed = (seed * 48271) % 2147483647) >>> 0).toString(36);
  const toggles = Array.from({ length: count }, (_, i) => ({
    name: `team-${next()}.flag-${i}`,
    enabled: true,
    variant: i % 3 ? { name: 'disabled', enabled: false } : { name: `v-${next()}`, enabled: true, payload: { type: 'string', value: next() } },
    impressionData: false,
  }));
  return JSON.stringify({ toggles });
}

/** Bytes kept alive by a Buffer: its backing store, or Node's shared 8 KiB pool for small ones. */
const held = (buffer: Buffer): number => buffer.buffer.byteLength;

describe('compressed answers', () => {
  it.each([
    ['a typical answer (64 toggles)', 64],
    ['a 300-toggle answer', 300],
    ['a 1,500-toggle answer', 1500],
  ])('hold at most twice their bytes, or a share of the small-Buffer pool: %s', (_, count) => {
    const body = answerOf(count);
    for (const [compress, expand] of [
      [gzipAnswer, gunzipSync],
      [deflateAnswer, inflateSync],
    ] as const) {
      for (const input of [body, Buffer.from(body)]) {
        const packed = compress(input);
        expect(expand(packed).toString()).toBe(body);
        expect(held(packed)).toBeLessThanOrEqual(Math.max(2 * packed.length, Buffer.poolSize));
      }
    }
  });

  it('compresses what barely compresses, whole, past the first output chunk', () => {
    let seed = 11;
    const noise = Buffer.from(Array.from({ length: 40_000 }, () => (seed = (seed * 16807) % 2147483647) & 0xff));
    const body = JSON.stringify({ toggles: [{ name: 'noise', enabled: true, variant: { name: 'v', enabled: true, payload: { type: 'string', value: noise.toString('base64') } } }] });
    const packed = gzipAnswer(body);
    expect(packed.length).toBeGreaterThan(body.length / 4);
    expect(gunzipSync(packed).toString()).toBe(body);
    expect(inflateSync(deflateAnswer(body)).toString()).toBe(body);
  });
});
