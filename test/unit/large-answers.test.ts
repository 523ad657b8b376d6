/**
 * Answers of all but the smallest flag sets are built as bytes (`BYTES_ANSWER_CHARS`), large ones
 * in recycled memory (`LARGE_ANSWER_BYTES`): the same entries copied into one Buffer instead of
 * joined into one string. Whatever the flag set and context, the bytes must be exactly the UTF-8
 * of the string the string path builds.
 */
import { describe, expect, it } from 'vitest';
import type { Engine } from '../../src/evaluation/engine.js';
import { engineFor as startEngine, evaluatedContext, withSeededRandom } from '../support/engine.js';
import { BYTES_ANSWER_CHARS, createToggleAnswers, LARGE_ANSWER_BYTES } from '../../src/core/toggle-answers.js';
import { contextFor, generateFlags } from '../../bench/flags.js';
import { createAnswerBuffers } from '../../src/core/answer-buffers.js';
import { loadClientSpecs, specContexts } from '../support/client-spec.js';

const engineFor = (features: unknown[], segments: unknown[]): Promise<Engine> => startEngine(features, segments, 'large-answers');

async function compare(features: unknown[], segments: unknown[], contexts: Array<Record<string, unknown>>): Promise<number> {
  const engine = await engineFor(features, segments);
  try {
    const { plan } = engine.snapshot();
    const asBytes = createToggleAnswers(engine, { bytesFrom: 0, recycledFrom: 0 });
    const asString = createToggleAnswers(engine, { bytesFrom: Number.POSITIVE_INFINITY });
    let compared = 0;
    for (const [n, raw] of contexts.entries()) {
      for (const all of [false, true]) {
        const context = evaluatedContext(raw, n, 'large-answers');
        // The same random draws for both.
        const bytes = withSeededRandom(n + 1, () => asBytes.serializeAll(plan, context, all));
        const text = withSeededRandom(n + 1, () => asString.serializeAll(plan, context, all));
        expect(Buffer.isBuffer(bytes)).toBe(true);
        expect(typeof text).toBe('string');
        expect((bytes as Buffer).toString()).toBe(text);
        compared++;
      }
    }
    return compared;
  } finally {
    engine.close();
  }
}

describe('large answers', () => {
  it('are the bytes of the string answer, over every state and context of the client specification', async () => {
    for (const spec of loadClientSpecs().filter((s) => !s.delta)) {
      const contexts = specContexts(spec);
      expect(await compare(spec.features, spec.segments, contexts.length > 0 ? contexts : [{}])).toBeGreaterThan(0);
    }
  });

  it('are the bytes of the string answer for a flag set above the threshold, with variants, payloads and non-ASCII', async () => {
    const { features, segments } = generateFlags(800);
    // Non-ASCII in names and payloads: the bytes are UTF-8, never one byte per character.
    const first = features[0] as { name: string; variants?: Array<{ payload?: { value: string } }> };
    first.name = `caf\u00e9-\u6f22\u5b57-\u{1f600}`;
    const withPayload = features.find((f) => (f as { variants?: unknown[] }).variants?.length) as { variants: Array<{ payload?: { type: string; value: string } }> };
    for (const variant of withPayload.variants) variant.payload = { type: 'string', value: 'gr\u00fc\u00df \u{1f680}' };
    const contexts = Array.from({ length: 60 }, (_, i) => contextFor(i) as unknown as Record<string, unknown>);
    expect(await compare(features, segments, contexts)).toBe(120);
    // By default, such a flag set (its /proxy/all answer is above the threshold) takes the byte path.
    const engine = await engineFor(features, segments);
    try {
      const body = createToggleAnswers(engine).serializeAll(engine.snapshot().plan, evaluatedContext({}, 0, 'large-answers'), true);
      expect(body.length).toBeGreaterThan(LARGE_ANSWER_BYTES);
      expect(Buffer.isBuffer(body)).toBe(true);
    } finally {
      engine.close();
    }
  });

  it('are bytes of their own for a flag set of a few kB, recycled memory only above the large threshold, and a string below', async () => {
    const buffers = createAnswerBuffers();
    const built = async (flags: number): Promise<string | Buffer> => {
      const { features, segments } = generateFlags(flags);
      const engine = await engineFor(features, segments);
      try {
        return createToggleAnswers(engine, {}, buffers).serializeAll(engine.snapshot().plan, evaluatedContext(contextFor(1) as never, 1, 'large-answers'), true);
      } finally {
        engine.close();
      }
    };
    // 200 flags: about 11 kB for a typical context, as the benchmark's.
    const typical = await built(200);
    expect(Buffer.isBuffer(typical)).toBe(true);
    expect(typical.length).toBeGreaterThan(BYTES_ANSWER_CHARS);
    expect(typical.length).toBeLessThan(LARGE_ANSWER_BYTES);
    // Left to the collector: no writer gives it back, so it is not the answer buffers'.
    expect(buffers.owns(typical as Buffer)).toBe(false);
    const large = await built(1500);
    expect(Buffer.isBuffer(large)).toBe(true);
    expect(buffers.owns(large as Buffer)).toBe(true);
    const few = await built(3);
    expect(typeof few).toBe('string');
    // Just past the threshold, under node's pool size: still memory of its own, not a pool slice.
    const small = await built(20);
    expect(Buffer.isBuffer(small)).toBe(true);
    expect(small.length).toBeLessThan(4096);
    expect((small as Buffer).buffer.byteLength).toBe(small.length);
  });
});
