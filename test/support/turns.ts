/**
 * How many turns of the event loop (`setImmediate` callbacks) ran while some work was awaited: for
 * tests of work that must be done in slices, between which the event loop turns. Work done at once
 * (or in microtasks alone) lets none run.
 */
export async function turnsWhile<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let done = false;
  const tick = (): void => {
    turns += 1;
    if (!done) setImmediate(tick);
  };
  setImmediate(tick);
  try {
    const result = await work();
    return { result, turns };
  } finally {
    done = true;
  }
}
