/**
 * The CLI's full collection after each flag-set change. Adopting a flag set leaves its garbage
 * behind in the old generation: the upstream's answer as one string (3.3 MB at 5000 flags, in
 * V8's large-object space, which only a full collection frees), the parsed JSON, the definitions
 * and plan of the set before. A busy proxy allocates mostly short-lived answers and may go for
 * hours without a full collection, so that garbage stays resident under load, on top of
 * everything the load needs. One full collection shortly after the change frees it while little
 * else is alive: measured at 5000 flags, idle RSS 95 → 91 MB and peak RSS through unique contexts
 * and hot contexts 106 → 99 MB (docs/performance.md, "Memory").
 *
 * This turns on `--expose-gc` for the whole process, so only the CLI, which owns its process,
 * does it: the library never does.
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How long after the last change of a burst the collection runs: the change's own follow-up work (backup, notices) is done by then. */
export const COLLECT_DELAY_MS = 500;

/**
 * V8's full collection, as `--expose-gc` exposes it (turned on here, for this process), or
 * `undefined` where the runtime does not give it (a flag no longer settable once started): the
 * CLI then runs without it rather than not at all.
 */
export function fullCollection(lookUp: () => unknown = () => runInNewContext('gc')): (() => void) | undefined {
  try {
    v8.setFlagsFromString('--expose-gc');
    // The flag gives `gc` to contexts made after it is set: a new one, not this module's.
    const gc = lookUp();
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs `collect` once, `delayMs` after the last of each burst of changes `subscribe` reports
 * (as `proxy.onChange` does). The timer never keeps the process alive. Returns the stop, which
 * unsubscribes and drops a collection still due.
 */
export function collectAfterChanges(subscribe: (listener: () => void) => () => void, collect: () => void, delayMs = COLLECT_DELAY_MS): () => void {
  let due: NodeJS.Timeout | undefined;
  const unsubscribe = subscribe(() => {
    if (due !== undefined) clearTimeout(due);
    due = setTimeout(() => {
      due = undefined;
      collect();
    }, delayMs);
    due.unref();
  });
  return () => {
    unsubscribe();
    if (due !== undefined) clearTimeout(due);
    due = undefined;
  };
}
