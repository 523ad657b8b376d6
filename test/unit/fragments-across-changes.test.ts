/**
 * The fragments of a format of fragments (OFREP's bulk answer) are made once per toggle and state,
 * and kept across changes of the flag set for every toggle the change left as it was: after a
 * change of one flag in 5000, the first OFREP answer made every fragment again (about 11 ms, while
 * the event loop waited). A changed toggle gets new fragments; nothing else does.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { createToggleAnswers, type FragmentFormat } from '../../src/core/toggle-answers.js';
import type { Engine } from '../../src/evaluation/engine.js';
import { engineSettings, evaluatedContext, startEngine } from '../support/engine.js';

const flag = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  enabled: true,
  strategies: [{ name: 'default', parameters: {}, constraints: [] }],
  variants: [],
  ...extra,
});
const withVariants = (name: string, payload: string) =>
  flag(name, { variants: [{ name: 'blue', weight: 1000, stickiness: 'default', payload: { type: 'string', value: payload } }] });

let upstream: TestFlagServer | undefined;
let engine: Engine | undefined;
afterEach(async () => {
  await engine?.close();
  engine = undefined;
  await upstream?.close();
  upstream = undefined;
});

describe('fragments across changes of the flag set', () => {
  it('are made again only for the toggles a change touched', async () => {
    upstream = await createTestFlagServer({ features: [flag('a'), flag('b', { enabled: false }), withVariants('c', 'one'), flag('d')] as never });
    // It fetches at start, and then only when asked.
    engine = await startEngine(engineSettings({ url: upstream.url, token: upstream.token, refreshInterval: 3_600_000 }));
    const made: string[] = [];
    const format: FragmentFormat = {
      open: '[',
      close: ']',
      fragment(result) {
        made.push(result.name);
        return JSON.stringify(result);
      },
    };
    const answers = createToggleAnswers(engine);
    const context = evaluatedContext({ userId: 'u1' }, 1);
    const first = answers.formatAll(engine.snapshot(), context, format);
    expect(made.sort()).toEqual(['a', 'b', 'c', 'd']);
    made.length = 0;
    expect(answers.formatAll(engine.snapshot(), context, format)).toBe(first);
    expect(made).toEqual([]);

    // One flag changes (its payload), one is added: only those get fragments made.
    upstream.upsertFeature(withVariants('c', 'two') as never);
    upstream.upsertFeature(flag('e') as never);
    await engine.refresh();
    const second = answers.formatAll(engine.snapshot(), context, format);
    expect(made.sort()).toEqual(['c', 'e']);
    expect(JSON.parse(second).map((r: { name: string }) => r.name)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(JSON.parse(second)[2].variant.payload.value).toBe('two');
  });

  it('do not keep a flag set alive once it is no longer served', async () => {
    upstream = await createTestFlagServer({ features: [flag('a'), withVariants('c', 'one')] as never });
    engine = await startEngine(engineSettings({ url: upstream.url, token: upstream.token, refreshInterval: 3_600_000 }));
    const answers = createToggleAnswers(engine);
    const format: FragmentFormat = { open: '[', close: ']', fragment: (result) => JSON.stringify(result) };
    const context = evaluatedContext({ userId: 'u1' }, 1);
    answers.formatAll(engine.snapshot(), context, format);
    const old = new WeakRef(engine.snapshot().plan);
    upstream.upsertFeature(withVariants('c', 'two') as never);
    await engine.refresh();
    // No OFREP request after the change: the format was laid out for the old plan only.
    v8.setFlagsFromString('--expose-gc');
    const collect = vm.runInNewContext('gc') as () => void;
    for (let i = 0; i < 3 && old.deref() !== undefined; i += 1) {
      await new Promise((resolve) => setImmediate(resolve));
      collect();
    }
    expect(old.deref()).toBeUndefined();
    // And the format still answers the new set.
    expect(JSON.parse(answers.formatAll(engine.snapshot(), context, format))[1].variant.payload.value).toBe('two');
  });

  it("carry a large answer's bytes over for the toggles a change left as they were", async () => {
    upstream = await createTestFlagServer({ features: [flag('a'), flag('b', { enabled: false }), withVariants('c', 'one'), flag('d')] as never });
    engine = await startEngine(engineSettings({ url: upstream.url, token: upstream.token, refreshInterval: 3_600_000 }));
    // Every answer counts as large: it is built from each entry's bytes.
    const answers = createToggleAnswers(engine, { bytesFrom: 0, recycledFrom: 0 });
    const context = evaluatedContext({ userId: 'u1' }, 1);
    const encoded = (): string[] => {
      const from = vi.spyOn(Buffer, 'from');
      try {
        answers.serializeAll(engine!.snapshot().plan, context, true);
        return from.mock.calls.map(([value]) => value).filter((value): value is string => typeof value === 'string');
      } finally {
        from.mockRestore();
      }
    };
    expect(encoded().length).toBeGreaterThanOrEqual(4);
    expect(encoded()).toEqual([]);

    upstream.setEnabled('d', false);
    await engine.refresh();
    const made = encoded();
    expect(made).toHaveLength(1);
    expect(made[0]).toContain('"name":"d"');
    const body = answers.serializeAll(engine.snapshot().plan, context, true);
    expect(JSON.parse(String(body)).toggles.map((t: { name: string; enabled: boolean }) => `${t.name}:${t.enabled}`)).toEqual(['a:true', 'b:false', 'c:true', 'd:false']);
  });
});
