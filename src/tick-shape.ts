/**
 * Keeps the hidden class of node's tick objects alive while a proxy is open.
 *
 * Every `process.nextTick` builds a small object (the callback, its arguments, two async ids), and
 * V8 gives them all one hidden class, which lives only as long as some tick object does. Optimized
 * code refers to such a class weakly: a full collection that runs while no tick is queued (a proxy
 * idle between bursts of polls, after a stretch that grew its old generation) may free it, and then
 * throws away every optimized function that built ticks against it, node's stream, socket and http
 * internals and the proxy's own hot path alike. Seen in the benchmark's 20,000-client polls: after
 * such a collection `process.nextTick` went from about 1% to 11–16% of a 304's CPU for the rest of
 * the run, and the slice it happened in cost three to four times the others; with a tick object
 * held, `process.nextTick` was no longer thrown away (docs/performance.md, "What those slices
 * were"). One tick object held keeps the class, so the collection has nothing of it to discard.
 *
 * The hold is the proxy's own, made when it is created and let go at `close()`: no global state, and
 * nothing but one small object kept.
 */
import { executionAsyncResource } from 'node:async_hooks';

/** One proxy's hold on a tick object. */
export interface TickShapeHold {
  /** The tick object held (a callback run by `process.nextTick` sees it as its async resource); `undefined` before the next tick and after {@link release}. */
  held(): object | undefined;
  /** Lets it go. Idempotent. */
  release(): void;
}

/** Holds the tick object of a tick queued now, from when it runs until {@link TickShapeHold.release}. */
export function holdTickShape(): TickShapeHold {
  let held: object | undefined;
  let released = false;
  process.nextTick(() => {
    if (released) return;
    try {
      held = executionAsyncResource();
    } catch {
      // A runtime without it (node's API elsewhere) has nothing of node's ticks to keep.
    }
  });
  return {
    held: () => held,
    release() {
      released = true;
      held = undefined;
    },
  };
}
