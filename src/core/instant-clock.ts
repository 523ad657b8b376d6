/**
 * Wakes listeners just after each date-constraint instant of the flag set being served: from then
 * on, answers for contexts without `currentTime` may differ although nothing changed upstream (a
 * scheduled launch). Surfaces that push use it to tell their clients to fetch again. One timer,
 * armed only while someone listens and an instant lies ahead, unref'd, and cleared by `close()`.
 */

export interface InstantClock {
  /**
   * Calls `listener` just after each instant, with it (instants less than a second after the last
   * wake-up are woken for together, a second after it, with the first of them); returns the unsubscribe.
   */
  on(listener: (instant: number) => void): () => void;
  /** The flag set changed, and its instants may have: arms the timer for the new next one. */
  rearm(): void;
  /** Clears the timer and drops the listeners. */
  close(): void;
}

/** The longest single wait: setTimeout cannot wait past 2^31 − 1 ms, and a day is checked again cheaply. */
const LONGEST_WAIT_MS = 24 * 3600 * 1000;
/**
 * The shortest time between two wake-ups: instants closer together than this (a flag set with
 * dates a millisecond apart) wake listeners once for all of them, after the last, not once each.
 */
const SHORTEST_GAP_MS = 1000;

/**
 * `next(now)` gives the first instant at or after `now` (`Infinity` when none is ahead or no flag
 * set is served); `failed` gets what a listener threw.
 */
export function createInstantClock(next: (now: number) => number, failed: (error: unknown) => void): InstantClock {
  const listeners = new Set<(instant: number) => void>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let lastWoken = Number.NEGATIVE_INFINITY;

  const arm = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (closed || listeners.size === 0) return;
    const now = Date.now();
    const instant = next(now);
    if (!Number.isFinite(instant)) return;
    // Just after the instant: a DATE_AFTER constraint holds only once the time is past it.
    const wait = Math.max(instant + 1 - now, lastWoken + SHORTEST_GAP_MS - now);
    timer = setTimeout(() => fire(instant), Math.min(wait, LONGEST_WAIT_MS));
    timer.unref();
  };

  const fire = (instant: number): void => {
    timer = undefined;
    const now = Date.now();
    // A timer may wake a little early (or after a day's wait, long before the instant): wait again.
    if (now > instant && now >= lastWoken + SHORTEST_GAP_MS) {
      lastWoken = now;
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
