/**
 * Bytes allocated on the V8 heap over a stretch of time, measured inside the process that
 * allocates them. V8 has no allocation counter Node exposes, but every byte allocated is either
 * still in use at the end or was freed by a collection in between, so:
 *
 *   allocated = (used at the end − used at the start) + Σ over collections (used before − used after)
 *
 * The collections come from `v8.GCProfiler`, which records the heap before and after each one.
 * Off-heap memory (Buffers' backing stores, sockets) is not counted: this is the garbage the
 * collector has to deal with, the figure that drives GC time and the young generation's size.
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

interface GcStatistics {
  beforeGC: { heapStatistics: { usedHeapSize: number } };
  afterGC: { heapStatistics: { usedHeapSize: number } };
}

/**
 * The heap still in use after a full collection: what the process keeps, without the garbage
 * V8 has not collected yet. Only for the bench's own target processes: it turns on `--expose-gc`
 * at run time to get `gc()`.
 */
export function liveHeapBytes(): number {
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  return v8.getHeapStatistics().used_heap_size;
}

/** Starts counting; `stop()` returns the bytes allocated since. */
export function countHeapAllocation(): { stop(): number } {
  const profiler = new v8.GCProfiler();
  profiler.start();
  const usedBefore = v8.getHeapStatistics().used_heap_size;
  return {
    stop() {
      const usedAfter = v8.getHeapStatistics().used_heap_size;
      const result = profiler.stop() as { statistics?: GcStatistics[] } | undefined;
      let freed = 0;
      for (const gc of result?.statistics ?? []) freed += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize);
      return Math.max(0, usedAfter - usedBefore + freed);
    },
  };
}
