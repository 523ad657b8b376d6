/**
 * Work written as a generator that yields between units (one toggle compiled, one planned), so
 * that it can run either at once or in slices between which the event loop turns. Building a
 * snapshot of thousands of toggles takes tens of milliseconds: in slices, a host's own requests
 * are served meanwhile instead of waiting for the whole build.
 */
import { performance } from 'node:perf_hooks';
// node:timers' own function, not the global one: a host's tests that fake the timers replace the
// global `setImmediate`, and a build waiting on it would wait for the test to advance the clock.
import { setImmediate } from 'node:timers';

/** Work that yields between units and returns `T` at the end. */
export type Steps<T> = Generator<void, T, void>;

/** Runs `steps` to the end at once. */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

/** Raised by {@link runInSlices} when its work was cancelled between two slices. */
export class StepsCancelled extends Error {
  constructor() {
    super('cancelled');
    this.name = 'StepsCancelled';
  }
}

/** How long one slice may run before the event loop gets a turn, in ms. */
export const SLICE_MS = 5;

/** Units run between two looks at the clock. */
const UNITS_PER_LOOK = 8;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Runs `steps` in slices of about `sliceMs`, each after a turn of the event loop (I/O, timers):
 * the first one too, as what came before (parsing a large answer) took a while itself. Stops with
 * {@link StepsCancelled} at the first turn after `cancelled()` says so, so that a closed owner does
 * not finish what it no longer needs.
 */
export async function runInSlices<T>(steps: Steps<T>, cancelled: () => boolean, sliceMs = SLICE_MS): Promise<T> {
  let units = 0;
  for (;;) {
    await nextTurn();
    if (cancelled()) {
      steps.return(undefined as never);
      throw new StepsCancelled();
    }
    const sliceEnds = performance.now() + sliceMs;
    for (;;) {
      const next = steps.next();
      if (next.done) return next.value;
      units += 1;
      if (units % UNITS_PER_LOOK === 0 && performance.now() >= sliceEnds) break;
    }
  }
}
