/** The timer behind `onAnswersChange`'s instants: when it wakes listeners, and that nothing outlives `close()`. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createInstantClock } from '../../src/core/instant-clock.js';

const DAY = 24 * 3600 * 1000;

describe('createInstantClock', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(1_000_000);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A flag set's instants, sorted: `next` as the service gives it. */
  const nextOf = (instants: number[]) => (now: number) => instants.find((at) => at >= now) ?? Number.POSITIVE_INFINITY;

  it('wakes each listener just after each instant, in order, and not before', () => {
    const clock = createInstantClock(nextOf([1_000_500, 1_002_000]), () => undefined);
    const seen: Array<[number, number]> = [];
    clock.on((instant) => seen.push([instant, Date.now()]));
    vi.advanceTimersByTime(500);
    expect(seen).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(seen).toEqual([[1_000_500, 1_000_501]]);
    vi.advanceTimersByTime(2000);
    expect(seen).toEqual([
      [1_000_500, 1_000_501],
      [1_002_000, 1_002_001],
    ]);
    expect(vi.getTimerCount()).toBe(0);
    clock.close();
  });

  it('wakes listeners once for instants less than a second apart, a second after the last wake-up', () => {
    // A flag set with 500 dates a millisecond apart must not make 500 rounds of events.
    const dense = Array.from({ length: 500 }, (_, i) => 1_000_100 + i);
    const clock = createInstantClock(nextOf([...dense, 1_005_000]), () => undefined);
    const seen: Array<[number, number]> = [];
    clock.on((instant) => seen.push([instant, Date.now()]));
    vi.advanceTimersByTime(3000);
    expect(seen).toEqual([
      [1_000_100, 1_000_101],
      [1_000_101, 1_001_101],
    ]);
    vi.advanceTimersByTime(3000);
    expect(seen[2]).toEqual([1_005_000, 1_005_001]);
    expect(seen).toHaveLength(3);
    clock.close();
  });

  it('holds no timer while nobody listens or nothing lies ahead, and none after the last listener leaves', () => {
    const clock = createInstantClock(nextOf([1_000_500]), () => undefined);
    expect(vi.getTimerCount()).toBe(0);
    const off = clock.on(() => undefined);
    expect(vi.getTimerCount()).toBe(1);
    off();
    expect(vi.getTimerCount()).toBe(0);
    const none = createInstantClock(nextOf([]), () => undefined);
    none.on(() => undefined);
    expect(vi.getTimerCount()).toBe(0);
    clock.close();
    none.close();
  });

  it('waits a day at most at a time, and fires only once the instant is past', () => {
    const far = 1_000_000 + 30 * DAY;
    const clock = createInstantClock(nextOf([far]), () => undefined);
    const listener = vi.fn();
    clock.on(listener);
    vi.advanceTimersByTime(29 * DAY);
    expect(listener).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(DAY + 1);
    expect(listener).toHaveBeenCalledOnce();
    expect(listener).toHaveBeenCalledWith(far);
    clock.close();
  });

  it('arms again for a changed flag set', () => {
    let instants = [1_000_500];
    const clock = createInstantClock((now) => nextOf(instants)(now), () => undefined);
    const listener = vi.fn();
    clock.on(listener);
    instants = [1_000_200];
    clock.rearm();
    vi.advanceTimersByTime(201);
    expect(listener).toHaveBeenCalledWith(1_000_200);
    vi.advanceTimersByTime(1000);
    expect(listener).toHaveBeenCalledOnce();
    clock.close();
  });

  it('passes what a listener throws to `failed`, and still wakes the others', () => {
    const failed = vi.fn();
    const clock = createInstantClock(nextOf([1_000_100]), failed);
    const boom = new Error('boom');
    clock.on(() => {
      throw boom;
    });
    const other = vi.fn();
    clock.on(other);
    vi.advanceTimersByTime(101);
    expect(failed).toHaveBeenCalledWith(boom);
    expect(other).toHaveBeenCalledOnce();
    clock.close();
  });

  it('clears its timer on close() and wakes nobody after it', () => {
    const clock = createInstantClock(nextOf([1_000_100]), () => undefined);
    const listener = vi.fn();
    clock.on(listener);
    clock.close();
    expect(vi.getTimerCount()).toBe(0);
    clock.on(listener);
    clock.rearm();
    vi.advanceTimersByTime(1000);
    expect(listener).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });
});
