/**
 * Formats made of one fragment per toggle result (`formatAll`, as the OFREP bulk answer uses):
 * each fragment is made once per toggle and state of a flag set and then reused, so the answer
 * must equal the format applied afresh to `resultsAll`'s results, for every context.
 */
import { describe, expect, it } from 'vitest';
import { createToggleAnswers, type FragmentFormat, type ToggleResult } from '../../src/core/toggle-answers.js';
import { contextFor, generateFlags } from '../../bench/flags.js';
import { loadClientSpecs, specContexts } from '../support/client-spec.js';
import { engineFor, evaluatedContext, withSeededRandom } from '../support/engine.js';

/** A format whose fragment shows every field of a result, counting its calls. */
function countingFormat(): FragmentFormat & { calls: number } {
  const format = {
    calls: 0,
    open: '<',
    close: '>',
    fragment(result: ToggleResult): string | undefined {
      format.calls++;
      // Leaves some toggles out, as a format may.
      return result.name.endsWith('7') ? undefined : JSON.stringify(result);
    },
  };
  return format;
}

async function compare(features: unknown[], segments: unknown[], contexts: Array<Record<string, unknown>>): Promise<{ answers: number; calls: number }> {
  const engine = await engineFor(features, segments, 'fragments');
  try {
    const snapshot = engine.snapshot();
    const { plan } = snapshot;
    const answers = createToggleAnswers(engine);
    const format = countingFormat();
    const afresh = countingFormat();
    for (const [n, raw] of contexts.entries()) {
      const context = evaluatedContext(raw, n, 'fragments');
      // The same random draws for both.
      const kept = withSeededRandom(n + 1, () => answers.formatAll(snapshot, context, format));
      const results = withSeededRandom(n + 1, () => answers.resultsAll(plan, context, true));
      const expected = `<${results.map((r) => afresh.fragment(r)).filter((f) => f !== undefined).join(',')}>`;
      expect(kept).toBe(expected);
    }
    return { answers: contexts.length, calls: format.calls };
  } finally {
    engine.close();
  }
}

describe('fragment formats', () => {
  it('answer as the format applied afresh, over every state and context of the client specification', async () => {
    for (const spec of loadClientSpecs().filter((s) => !s.delta)) {
      const contexts = specContexts(spec);
      await compare(spec.features, spec.segments, contexts.length > 0 ? contexts : [{}]);
    }
  });

  it('make each fragment once per toggle and state, however many contexts ask', async () => {
    const { features, segments } = generateFlags(200);
    const contexts = Array.from({ length: 300 }, (_, i) => contextFor(i) as unknown as Record<string, unknown>);
    const { calls } = await compare(features, segments, contexts);
    // 200 toggles; a dynamic one has a few states (off, on, a variant or two): far fewer calls than
    // the 60,000 a fresh format per answer makes.
    expect(calls).toBeGreaterThanOrEqual(200);
    expect(calls).toBeLessThan(1000);
  });
});
