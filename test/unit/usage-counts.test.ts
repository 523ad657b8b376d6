/**
 * The usage collector's bound counters (what in-process calls count with): the same counts as
 * `count(name, …)`, in the period current at each call, within the same budget of names.
 */
import { describe, expect, it } from 'vitest';
import { createUsageCounts } from '../../src/evaluation/usage-counts.js';

describe('usage counts: a bound counter', () => {
  it('counts into the period current at each call, after a take and a restore too', () => {
    const counts = createUsageCounts({ maxToggles: 10, maxUnknownToggles: 10 });
    const count = counts.counter('checkout', true);
    count(true);
    count(true);
    count(false);
    counts.count('checkout', true, true);
    const first = counts.take();
    expect(first.toggles.checkout).toMatchObject({ yes: 3, no: 1 });

    // The next period: nothing counted into the period already taken.
    count(false);
    expect(first.toggles.checkout).toMatchObject({ yes: 3, no: 1 });
    expect(counts.pending().checkout).toMatchObject({ yes: 0, no: 1 });

    // A period put back merges with the current one, and the counter keeps counting there.
    counts.restore(first);
    count(true);
    expect(counts.pending().checkout).toMatchObject({ yes: 4, no: 2 });
    expect(counts.take().toggles.checkout).toMatchObject({ yes: 4, no: 2 });
    expect(counts.size()).toBe(0);
  });

  it('drops, and counts as dropped, every call for a name beyond the budget until a period has room', () => {
    const counts = createUsageCounts({ maxToggles: 1, maxUnknownToggles: 1 });
    counts.count('first', true, true);
    const second = counts.counter('second', true);
    second(true);
    second(false);
    expect(counts.pending().second).toBeUndefined();
    expect(counts.takeDropped()).toBe(2);
    counts.take();
    second(true);
    expect(counts.pending().second).toMatchObject({ yes: 1, no: 0 });
    expect(counts.takeDropped()).toBe(0);
  });
});
