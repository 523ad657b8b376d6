import { afterEach, describe, expect, it, vi } from 'vitest';
import { collectAfterChanges, fullCollection } from '../../src/collect-after-change.js';

/** A change source like `proxy.onChange`: `fire()` calls every listener still subscribed. */
function changeSource(): { subscribe(listener: () => void): () => void; fire(): void; listeners(): number } {
  const listeners = new Set<() => void>();
  return {
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    fire: () => listeners.forEach((listener) => listener()),
    listeners: () => listeners.size,
  };
}

describe('collectAfterChanges', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('collects once, the delay after the last change of a burst', () => {
    vi.useFakeTimers();
    const source = changeSource();
    const collect = vi.fn();
    collectAfterChanges((l) => source.subscribe(l), collect, 500);
    source.fire();
    vi.advanceTimersByTime(400);
    source.fire();
    vi.advanceTimersByTime(400);
    expect(collect).not.toHaveBeenCalled();
    vi.advanceTimersByTime(100);
    expect(collect).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(5_000);
    expect(collect).toHaveBeenCalledTimes(1);
    source.fire();
    vi.advanceTimersByTime(500);
    expect(collect).toHaveBeenCalledTimes(2);
  });

  it('once stopped, unsubscribes and drops a collection still due', () => {
    vi.useFakeTimers();
    const source = changeSource();
    const collect = vi.fn();
    const stop = collectAfterChanges((l) => source.subscribe(l), collect, 500);
    expect(source.listeners()).toBe(1);
    source.fire();
    stop();
    expect(source.listeners()).toBe(0);
    vi.advanceTimersByTime(1_000);
    expect(collect).not.toHaveBeenCalled();
  });

  it('does not keep the process alive while a collection is due', () => {
    vi.useFakeTimers();
    const source = changeSource();
    const timers = vi.spyOn(globalThis, 'setTimeout');
    collectAfterChanges((l) => source.subscribe(l), () => undefined, 500);
    source.fire();
    const timer = timers.mock.results.at(-1)?.value as { hasRef(): boolean };
    expect(timer.hasRef()).toBe(false);
  });
});

describe('fullCollection', () => {
  it('gives undefined, not an exception, where the runtime has no gc to give', () => {
    expect(
      fullCollection(() => {
        throw new ReferenceError('gc is not defined');
      }),
    ).toBeUndefined();
    expect(fullCollection(() => undefined)).toBeUndefined();
  });

  it('runs a full collection of this process: unreachable objects are gone afterwards', async () => {
    const collect = fullCollection();
    expect(collect).toBeTypeOf('function');
    let garbage: object | undefined = { big: new Array(10_000).fill('x') };
    const ref = new WeakRef(garbage);
    garbage = undefined;
    // A WeakRef's target stays alive to the end of the current job.
    await new Promise((resolve) => setImmediate(resolve));
    collect!();
    expect(ref.deref()).toBeUndefined();
  });
});
