/**
 * The revision log behind /api/client/streaming and /api/client/delta, over a stand-in service:
 * which ids it can resume from (its own, up to 32 changes back), what it hands on, and that a
 * hydration follows the current flag set.
 */
import { describe, expect, it } from 'vitest';
import type { FeatureDefinition } from 'flag-proxy';
import type { EvaluationService } from '../../src/core/service.js';
import { EVERY_FLAG, hydrationEvent, parseFilter, type FlagSetChanges } from '../../src/surfaces/client-streaming/deltas.js';
import { createRevisionLog } from '../../src/surfaces/client-streaming/revision-log.js';
import { turnsWhile } from '../support/turns.js';

const flag = (name: string, enabled = true): FeatureDefinition => ({ name, enabled, strategies: [], variants: [] }) as unknown as FeatureDefinition;

/** A service whose flag set the test sets; `change()` tells the listeners as the proxy does. */
function fakeService(features: FeatureDefinition[]) {
  let snapshot = { revision: 1, features, segments: [] as Array<{ id: number; constraints: unknown[] }> };
  const listeners = new Set<() => void>();
  const service = {
    snapshot: () => snapshot,
    onChange(listener: () => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  } as unknown as EvaluationService;
  return {
    service,
    change(next: FeatureDefinition[], tell = true) {
      snapshot = { ...snapshot, revision: snapshot.revision + 1, features: next };
      if (tell) for (const listener of listeners) listener();
    },
  };
}

describe('createRevisionLog', () => {
  it('resumes its own ids, up to 32 changes back, and nobody else’s', () => {
    const fake = fakeService([flag('a')]);
    const log = createRevisionLog(fake.service, () => undefined);
    const first = log.idOf(1);
    expect(first).toMatch(/^1-[0-9a-f]{8}$/);
    expect(log.changesSince(first)).toEqual({ features: new Map(), segments: new Map() });
    fake.change([flag('a', false)]);
    expect([...log.changesSince(first)!.features.keys()]).toEqual(['a']);
    expect(log.changesSince(first.replace(/-.*/, '-00000000'))).toBeUndefined();
    expect(createRevisionLog(fake.service, () => undefined).changesSince(log.idOf(2))).toBeUndefined();
    for (let i = 0; i < 31; i += 1) fake.change([flag('a', i % 2 === 0)]);
    expect(log.changesSince(first)).not.toBeUndefined();
    fake.change([flag('a'), flag('b')]);
    expect(log.changesSince(first)).toBeUndefined();
    expect([...log.changesSince(log.idOf(2))!.features.keys()].sort()).toEqual(['a', 'b']);
  });

  it('hands on each change with something in it once, and takes a change nobody told it about on the next read', () => {
    const fake = fakeService([flag('a')]);
    const heard: Array<[number, FlagSetChanges]> = [];
    const log = createRevisionLog(fake.service, (changes, snapshot) => heard.push([snapshot.revision, changes]));
    fake.change([flag('a')]);
    expect(heard).toEqual([]);
    fake.change([flag('a', false)], false);
    expect(heard).toEqual([]);
    expect(log.current().revision).toBe(3);
    expect(heard.map(([revision, changes]) => [revision, [...changes.features.keys()]])).toEqual([[3, ['a']]]);
  });

  it('prepares a hydration in slices, the event loop turning, into the same event as one built at once', async () => {
    const features = Array.from({ length: 3000 }, (_, i) => flag(`flag-${i}`, i % 3 === 0));
    const fake = fakeService(features);
    const log = createRevisionLog(fake.service, () => undefined);
    const filter = parseFilter('namePrefix=flag-1');
    const { turns } = await turnsWhile(() => log.prepareHydration(filter));
    expect(turns).toBeGreaterThan(0);
    expect(log.hydration(filter)).toBe(hydrationEvent(fake.service.snapshot(), filter, 1));
    // A change while it was prepared: the next hydration is the new set's.
    const preparing = log.prepareHydration(EVERY_FLAG);
    fake.change([flag('only')]);
    await preparing;
    expect(JSON.parse(log.hydration(EVERY_FLAG))).toMatchObject({ eventId: 2, features: [flag('only')] });
  });

  it('hydrates the current flag set, not the one it first cached', () => {
    const fake = fakeService([flag('a')]);
    const log = createRevisionLog(fake.service, () => undefined);
    expect(JSON.parse(log.hydration(EVERY_FLAG)).features).toEqual([flag('a')]);
    fake.change([flag('a', false)]);
    expect(JSON.parse(log.hydration(EVERY_FLAG))).toMatchObject({ eventId: 2, features: [flag('a', false)] });
  });
});
