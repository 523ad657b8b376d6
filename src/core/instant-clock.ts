/**
 * Wakes listeners just after each date-constraint instant of the flag set being served: from then
 * on, answers for contexts without `currentTime` may differ although nothing changed upstream (a
 * scheduled launch). Surfaces that push use it to tell their clients to fetch again. One timer,
 * armed only while someone listens and an instant lies ahead, unref'd, and cleared by `close()`.
 */

export interface InstantClock {
  /** Calls `listener` just after each instant (with that instant); returns the unsubscribe. */
  on(listener: (instant: number) => void): () => void;
  /** The flag set changed, and its instants may have: arms the timer for the new next one. */
  rearm(): void;
  /** Clears the timer and drops the listeners. */
  close(): void;
}

/** The longest single wait: setTimeout cannot wait past 2^31 − 1 ms, and a day is checked again cheaply. */
const LONGEST_WAIT_MS = 24 * 3600 * 1000;

/**
 * `next(now)` gives the first instant at or after `now` (`Infinity` when none is ahead or no flag
 * set is served); `failed` gets what a listener threw.
 */
export function createInstantClock(next: (now: number) => number, failed: (error: unknown) => void): InstantClock {
  const listeners = new Set<(instant: number) => void>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const arm = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (closed || listeners.size === 0) return;
    const now = Date.now();
    const instant = next(now);
    if (!Number.isFinite(instant)) return;
    // Just after the instant: a DATE_AFTER constraint holds only once the time is past it.
    timer = setTimeout(() => fire(instant), Math.min(instant + 1 - now, LONGEST_WAIT_MS));
    timer.unref();
  };

  const fire = (instant: number): void => {
    timer = undefined;
    // A timer may wake a little early (or after a day's wait, long before the instant): wait again.
    if (Date.now() > instant) {
      for (const listener of [...listeners]) {
        try {
          listener(instant);
        } catch (error) {
          failed(error);
        }
      }
    }
    arm();
  };

  return {
    on(listener) {
      listeners.add(listener);
      if (timer === undefined) arm();
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0) arm();
      };
    },
    rearm: arm,
    close() {
      closed = true;
      listeners.clear();
      arm();
    },
  };
}
