/**
 * The delta format of /api/client/streaming and /api/client/delta, without sockets: which events a
 * change between two flag sets becomes for each filter, and how consecutive changes fold.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { FeatureDefinition } from 'flag-proxy';
import {
  composeChanges,
  deltaBody,
  deltaEvents,
  diffSnapshots,
  EVERY_FLAG,
  hydrationEvent,
  isEmpty,
  parseFilter,
} from '../../src/surfaces/client-streaming/deltas.js';
import { sameJson } from '../../src/evaluation/content-digest.js';

const flag = (name: string, extra: Record<string, unknown> = {}): FeatureDefinition =>
  ({ name, enabled: true, project: 'default', strategies: [], variants: [], ...extra }) as FeatureDefinition;
const set = (features: FeatureDefinition[], segments: Array<{ id: number; constraints: unknown[] }> = []) => ({ features, segments });
const parsed = (events: string[]) => JSON.parse(deltaBody(events)).events;

describe('diffSnapshots and deltaEvents', () => {
  it('reports changed, added and removed flags and segments, and nothing for equal JSON in new objects', () => {
    const before = set([flag('same'), flag('changed'), flag('gone', { project: 'billing' })], [{ id: 1, constraints: [] }, { id: 2, constraints: [] }]);
    const after = set([flag('same'), flag('changed', { enabled: false }), flag('new')], [{ id: 1, constraints: [] }, { id: 3, constraints: [] }]);
    const changes = diffSnapshots(before, after);
    expect(parsed(deltaEvents(changes, EVERY_FLAG, 9))).toEqual([
      { type: 'feature-updated', eventId: 9, feature: flag('changed', { enabled: false }) },
      { type: 'feature-updated', eventId: 9, feature: flag('new') },
      { type: 'feature-removed', eventId: 9, featureName: 'gone', project: 'billing' },
      { type: 'segment-updated', eventId: 9, segment: { id: 3, constraints: [] } },
      { type: 'segment-removed', eventId: 9, segmentId: 2 },
    ]);
    expect(isEmpty(diffSnapshots(before, set(before.features.map((f) => ({ ...f })), before.segments.map((s) => ({ ...s })))))).toBe(true);
  });

  it("compares toggles by the digests the engine made of them, where both sets have them", () => {
    // Objects that differ, digests that say they do not (and the other way round): the digests decide.
    const before = { ...set([flag('kept'), flag('touched')]), toggleDigests: new Map([['kept', 'k1'], ['touched', 't1']]) };
    const after = { ...set([flag('kept', { enabled: false }), flag('touched')]), toggleDigests: new Map([['kept', 'k1'], ['touched', 't2']]) };
    expect([...diffSnapshots(before, after).features.keys()]).toEqual(['touched']);
    // Without digests on one side, the definitions themselves are compared.
    expect([...diffSnapshots(set(before.features), after).features.keys()]).toEqual(['kept']);
  });

  it('removes a flag for a client whose filter it leaves, and leaves out flags the filter never saw', () => {
    const filter = parseFilter('namePrefix=web.&project=web');
    const before = set([flag('web.a', { project: 'web' }), flag('web.b', { project: 'web' }), flag('api.c', { project: 'web' })]);
    const after = set([flag('web.a', { project: 'ops' }), flag('web.b', { project: 'web', enabled: false }), flag('api.c', { project: 'web', enabled: false })]);
    expect(parsed(deltaEvents(diffSnapshots(before, after), filter, 2))).toEqual([
      { type: 'feature-removed', eventId: 2, featureName: 'web.a', project: 'web' },
      { type: 'feature-updated', eventId: 2, feature: flag('web.b', { project: 'web', enabled: false }) },
    ]);
  });
  it('keeps no JSON of the flags a change left as they were', () => {
    // Every refresh parses new objects for every flag, so each change compares them all by their
    // JSON. Kept per object, that text stayed for as long as the flag set was current: at 5000
    // flags, 3.3 MB after the first change, whether or not any client was streaming.
    v8.setFlagsFromString('--expose-gc');
    const collect = vm.runInNewContext('gc') as () => void;
    const description = 'x'.repeat(8000);
    const definitions = Array.from({ length: 500 }, (_, i) => flag(`flag-${i}`, { description }));
    const before = set(JSON.parse(JSON.stringify(definitions)) as FeatureDefinition[]);
    const after = set(JSON.parse(JSON.stringify(definitions)) as FeatureDefinition[]);
    after.features[0] = flag('flag-0', { description, enabled: false });
    collect();
    const held = v8.getHeapStatistics().used_heap_size;
    const changes = diffSnapshots(before, after);
    collect();
    const grown = v8.getHeapStatistics().used_heap_size - held;
    expect([...changes.features.keys()]).toEqual(['flag-0']);
    // Both sets' JSON would be 8 MB; the one change's JSON is 16 kB.
    expect(grown).toBeLessThan(1024 * 1024);
  });
});

describe('composeChanges', () => {
  it('keeps the first before and the last after, so a flag added then removed disappears', () => {
    const a = set([flag('x')]);
    const b = set([flag('x', { enabled: false }), flag('temp')]);
    const c = set([flag('x', { enabled: true, description: 'back' })]);
    const folded = composeChanges([diffSnapshots(a, b), diffSnapshots(b, c)]);
    expect(parsed(deltaEvents(folded, EVERY_FLAG, 3))).toEqual([{ type: 'feature-updated', eventId: 3, feature: flag('x', { enabled: true, description: 'back' }) }]);
  });
});

describe('parseFilter and hydrationEvent', () => {
  it('matches any of several projects, treats a missing project as default, and shares one key per filter', () => {
    const filter = parseFilter('project=a&project=default');
    expect(filter.matches(flag('one', { project: 'a' }))).toBe(true);
    expect(filter.matches({ name: 'two', enabled: true, strategies: [] } as unknown as FeatureDefinition)).toBe(true);
    expect(filter.matches(flag('three', { project: 'b' }))).toBe(false);
    expect(parseFilter('').key).toBe(EVERY_FLAG.key);
    expect(parseFilter('project=a&project=default').key).toBe(filter.key);
    expect(parseFilter('project=a').key).not.toBe(filter.key);
  });

  it('hydrates the matching flags and every segment', () => {
    const event = JSON.parse(hydrationEvent(set([flag('web.a'), flag('api.b')], [{ id: 4, constraints: [] }]), parseFilter('namePrefix=web.'), 5));
    expect(event).toEqual({ type: 'hydration', eventId: 5, features: [flag('web.a')], segments: [{ id: 4, constraints: [] }] });
  });
});

describe('sameJson', () => {
  const json = (value: unknown): string => JSON.stringify(value);
  /** The same value rebuilt: new objects, with the keys of every object reversed when asked. */
  const rebuilt = (value: unknown, reverse: boolean): unknown => {
    if (Array.isArray(value)) return value.map((item) => rebuilt(item, reverse));
    if (typeof value !== 'object' || value === null) return value;
    const keys = Object.keys(value);
    return Object.fromEntries((reverse ? keys.reverse() : keys).map((key) => [key, rebuilt((value as Record<string, unknown>)[key], reverse)]));
  };

  it('agrees with comparing JSON text, for any two JSON values, copies and reordered copies', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), fc.boolean(), (a, b, reverse) => {
        expect(sameJson(a, b)).toBe(json(a) === json(b));
        const copy = rebuilt(a, reverse);
        expect(sameJson(a, copy)).toBe(json(a) === json(copy));
      }),
      { numRuns: 2000 },
    );
  });

  it('falls back to the JSON of what is not plain data', () => {
    expect(sameJson({ at: new Date(1) }, { at: new Date(2) })).toBe(false);
    expect(sameJson({ at: new Date(1) }, { at: new Date(1) })).toBe(true);
    expect(sameJson({ a: 1, gone: undefined }, { a: 1 })).toBe(true);
    expect(sameJson({ a: { toJSON: () => 'x' } }, { a: 'x' })).toBe(true);
    expect(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
  });
});
