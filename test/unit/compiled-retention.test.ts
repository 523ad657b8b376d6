/**
 * What a compiled flag set keeps alive, and how much. The engine compiles copies of the
 * definitions with their segments filled in (one object per toggle and per strategy); once
 * compiled, those copies are garbage. At 5,000 flags they were 2.3 of the 14.8 MB a proxy's heap
 * grew by when it loaded the flag set, kept by the toggles with dependencies, whose checks closed
 * over the whole table of definitions.
 */
import { describe, expect, it } from 'vitest';
import { compileFlagSet, type CompiledFlagSet } from '../../src/evaluation/compiled.js';
import type { FeatureDefinition } from '../../src/evaluation/types.js';
import { withSegmentData } from '../../src/evaluation/repository.js';
import { generateFlags } from '../../bench/flags.js';
import { collect, dataBytes, settle } from '../support/heap.js';

const rollout = (groupId: string) => ({ name: 'flexibleRollout', parameters: { rollout: '100', stickiness: 'default', groupId }, constraints: [] });

/** Compiles a parent, a child of each dependency kind and a plain toggle; hands back the set and weak references to each definition. */
function compileWithDependencies(): { compiled: CompiledFlagSet; definitions: WeakRef<object>[] } {
  const features: FeatureDefinition[] = [
    { name: 'parent', enabled: true, strategies: [rollout('parent')], variants: [{ name: 'red', weight: 1000, stickiness: 'default' }] },
    { name: 'child', enabled: true, strategies: [rollout('child')], dependencies: [{ feature: 'parent' }] },
    { name: 'child-not', enabled: true, strategies: [rollout('child-not')], dependencies: [{ feature: 'parent', enabled: false }] },
    { name: 'child-red', enabled: true, strategies: [rollout('child-red')], dependencies: [{ feature: 'parent', variants: ['red'] }] },
    { name: 'child-missing', enabled: true, strategies: [rollout('child-missing')], dependencies: [{ feature: 'elsewhere' }] },
    { name: 'plain', enabled: true, strategies: [rollout('plain')] },
  ] as FeatureDefinition[];
  const compiled = compileFlagSet(features, { customStrategyNames: new Set() });
  return { compiled, definitions: features.map((feature) => new WeakRef(feature)) };
}

describe('a compiled flag set', () => {
  it('keeps none of the definition objects it was compiled from', async () => {
    const { compiled, definitions } = compileWithDependencies();
    // A WeakRef's target stays alive until the job that made it ends.
    await new Promise((resolve) => setTimeout(resolve, 0));
    collect();
    expect(definitions.map((ref) => ref.deref()?.constructor.name)).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
    // ...and still answers from what it compiled.
    const context = { userId: 'u1', properties: {} };
    expect(['parent', 'child', 'child-not', 'child-red', 'child-missing', 'plain'].map((name) => compiled.isOn(name, context))).toEqual([
      true,
      true,
      false,
      true,
      false,
      true,
    ]);
  });
});

/**
 * Heap bytes a compiled set of the `count`-flag benchmark set keeps once its definitions are gone,
 * and then what binding every toggle's handle adds (as answers do): the medians of three
 * compilations, each measured alone.
 */
async function compiledHeapBytes(count: number): Promise<{ compiled: number; handles: number }> {
  const names = generateFlags(count).features.map((feature) => feature.name);
  const build = (): CompiledFlagSet => {
    const { features, segments } = generateFlags(count);
    const byId = new Map(segments.map((segment) => [segment.id, segment]));
    return compileFlagSet(withSegmentData(features as FeatureDefinition[], byId as never) as FeatureDefinition[], { customStrategyNames: new Set() });
  };
  // Once first, so that what compiling loads for good (modules, shared tables) is not counted.
  build();
  const compiledSizes: number[] = [];
  const handleSizes: number[] = [];
  for (let i = 0; i < 3; i += 1) {
    await settle();
    const before = dataBytes();
    let compiled: CompiledFlagSet | undefined = build();
    await settle();
    const built = dataBytes();
    compiledSizes.push(built - before);
    // The set keeps the handles it bound; nothing here holds one across the next compilation.
    const bound = names.filter((name) => compiled?.handle(name) !== undefined).length;
    await settle();
    handleSizes.push(dataBytes() - built);
    // Still there, and whole: every toggle of the set compiled.
    expect(names.filter((name) => !compiled?.has(name))).toEqual([]);
    expect(bound).toBe(names.length);
    compiled = undefined;
  }
  const median = (sizes: number[]): number => sizes.sort((a, b) => a - b)[1] as number;
  return { compiled: median(compiledSizes), handles: median(handleSizes) };
}

describe('a compiled flag set, by size', () => {
  // Measured: the compiled set 2.57 MB, its handles 50–90 B a toggle (with the Map that keeps
  // them). While each rollout check, hash prefix and variant seed was a closure of its own, and
  // each constraint had its own reader of the field it reads, 2.95–3.17 MB; while short value
  // lists were Sets and kept lists had room for 17 entries, 3.7–3.9 MB; while each handle was
  // three closures over the toggle, 290–330 B a toggle.
  it('holds the 2000-flag benchmark set in under 2.8 MB of heap, and binds a handle to each toggle in under 175 bytes', async () => {
    const bytes = await compiledHeapBytes(2000);
    expect(bytes.compiled).toBeLessThan(2.8e6);
    expect(bytes.handles).toBeLessThan(2000 * 175);
  });
});

describe('the definitions a flag set is compiled and planned from', () => {
  // The copies with segments filled in lived through compiling and planning: 2.4 MB at 5,000
  // flags, of which one toggle in ten uses a segment, that V8's young collections found alive
  // (and counted towards growing the young generation). Only what changes is copied now.
  it('are copies only for toggles whose strategies name segments, the rest the very definitions', () => {
    const segment = { id: 7, constraints: [{ contextName: 'region', operator: 'IN', values: ['eu'] }] };
    const plain = { name: 'plain', enabled: true, strategies: [rollout('plain'), { name: 'default', parameters: {}, constraints: [], segments: [] }] };
    const segmented = {
      name: 'segmented',
      enabled: true,
      strategies: [rollout('segmented'), { name: 'default', parameters: {}, constraints: [], segments: [7, 8] }],
    };
    // `null` for segments is copied as unleash-client reads it: no segments, `undefined`.
    const nulled = { name: 'nulled', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [], segments: null }] };
    const features = [plain, segmented, nulled] as FeatureDefinition[];
    const before = JSON.stringify(features);
    const [keptPlain, filled, copiedNulled] = withSegmentData(features, new Map([[7, segment]]) as never) as unknown as Array<typeof segmented>;
    expect(keptPlain).toBe(plain);
    expect(filled).not.toBe(segmented);
    // The strategy without segments is the very one; the other has its segments, a missing id as undefined.
    expect(filled?.strategies[0]).toBe(segmented.strategies[0]);
    expect(filled?.strategies[1]).toEqual({ name: 'default', parameters: {}, constraints: [], segments: [segment, undefined] });
    expect(copiedNulled?.strategies[0]).toEqual({ name: 'default', parameters: {}, constraints: [], segments: undefined });
    expect(JSON.stringify(features)).toBe(before);
  });
});
