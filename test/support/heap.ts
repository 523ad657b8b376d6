/**
 * V8's heap as the memory tests read it: a full collection on demand (`--expose-gc`, turned on for
 * the test's process when this module loads), the bytes in use outside code spaces, and a settled
 * heap (the current job ended, then collected).
 */
import v8 from 'node:v8';
import vm from 'node:vm';

v8.setFlagsFromString('--expose-gc');
/** V8's full collection: the flag gives `gc` to contexts made after it is set, so a new one. */
export const collect = vm.runInNewContext('gc') as () => void;

/** V8 heap bytes in use outside code spaces (compiled code comes and goes with optimization). */
export function dataBytes(): number {
  return v8
    .getHeapSpaceStatistics()
    .filter((space) => !space.space_name.startsWith('code'))
    .reduce((sum, space) => sum + space.space_used_size, 0);
}

/** Lets the current job end (a WeakRef's target, and whatever else a job holds, stays alive until then), then collects. */
export async function settle(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 0));
  collect();
}
