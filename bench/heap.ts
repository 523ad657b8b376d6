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
import { readFileSync } from 'node:fs';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { MemoryParts } from './protocol.js';

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

/**
 * Where this process's memory is now (see {@link MemoryParts}); `undefined` where
 * `/proc/self/smaps` cannot be read (not Linux).
 */
export function memoryParts(): MemoryParts | undefined {
  let smaps: string;
  try {
    smaps = readFileSync('/proc/self/smaps', 'utf8');
  } catch {
    return undefined;
  }
  let fileBacked = 0;
  let mallocHeap = 0;
  let anonymous = 0;
  let kind: 'file' | 'heap' | 'anon' = 'anon';
  for (const line of smaps.split('\n')) {
    // A mapping's header: address range, permissions, offset, device, inode, then its name if any.
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (header) {
      const name = header[2] ?? '';
      kind = name === '[heap]' ? 'heap' : header[1] !== '0' || name.startsWith('/') ? 'file' : 'anon';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const bytes = Number(rss[1]) * 1024;
    if (kind === 'file') fileBacked += bytes;
    else if (kind === 'heap') mallocHeap += bytes;
    else anonymous += bytes;
  }
  const space = (name: string): number => v8.getHeapSpaceStatistics().find((s) => s.space_name === name)?.space_size ?? 0;
  return {
    young: space('new_space') + space('new_large_object_space'),
    old: space('old_space'),
    codeAndLarge: space('code_space') + space('code_large_object_space') + space('large_object_space'),
    mallocHeap,
    otherAnonymous: anonymous,
    fileBacked,
  };
}
