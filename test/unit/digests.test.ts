import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { digestBytes, digestText } from '../../src/digests.js';

// Inputs hashed as UTF-8, bytes of every value, and digests whose bytes reach past 0x7f.
const inputs: Array<string | Buffer> = ['', 'bench-client-key', 'clé-ünïcödé-🔑', 'x'.repeat(1000), Buffer.from([0, 0x80, 0xff, 0x7f, 10])];

describe('digests', () => {
  for (const algorithm of ['sha1', 'sha256'] as const) {
    it(`${algorithm}: digestBytes gives the bytes a Hash object gives, as a Buffer of the digest's length`, () => {
      for (const input of inputs) {
        const expected = createHash(algorithm).update(input).digest();
        const bytes = digestBytes(algorithm, input);
        expect(Buffer.isBuffer(bytes)).toBe(true);
        expect(bytes.length).toBe(algorithm === 'sha1' ? 20 : 32);
        expect(bytes.equals(expected)).toBe(true);
      }
    });

    it(`${algorithm}: digestText gives the text a Hash object gives`, () => {
      for (const input of inputs) {
        expect(digestText(algorithm, input, 'base64')).toBe(createHash(algorithm).update(input).digest('base64'));
        expect(digestText(algorithm, input, 'base64url')).toBe(createHash(algorithm).update(input).digest('base64url'));
      }
    });
  }

  it('gives each call its own bytes: one digest is not changed by the next', () => {
    const first = digestBytes('sha256', 'a');
    const copy = Buffer.from(first);
    digestBytes('sha256', 'b');
    expect(first.equals(copy)).toBe(true);
  });
});
