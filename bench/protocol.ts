/**
 * Messages between the bench runner and a target process (over the IPC channel of `spawn`).
 * Shared by both sides; types only.
 */

/** What a target needs to start. */
export interface TargetConfig {
  upstreamUrl: string;
  upstreamToken: string;
  clientKey: string;
  appName: string;
  refreshInterval: number;
  metricsInterval: number;
  /** flag-proxy only: absolute path of the module exporting `createFlagProxy`. */
  flagProxyModule?: string;
  /** flag-proxy only: its `maxEventStreams` (the SSE fan-out opens more than the default). */
  maxEventStreams?: number;
  /** flag-proxy only: its `ofrep.refetchNoticesPerSecond` (the fan-out compares pacing with none). */
  refetchNoticesPerSecond?: number;
  /** flag-proxy only: its server's `keepAliveTimeout`, ms (the fan-out's, see bench/fanout.ts); node's 5 s otherwise. */
  keepAliveTimeout?: number;
  /**
   * bare-node only: the precomputed answers it serves: flag-proxy's bodies, and the header fields
   * (`[name, value, …]`) of its 304s, health and preflight answers.
   */
  bare?: { full: string; named: string; notModified: string[]; health: string[]; preflight: string[] };
}

/**
 * Where a target's memory is, read at the end of a window before the full collection that follows
 * it (bench/heap.ts): V8's heap spaces as committed, and the resident pages of the process by kind
 * of mapping. Bytes.
 */
export interface MemoryParts {
  /** The young generation (both semi-spaces and its large objects), committed. */
  young: number;
  /** The old generation, committed. */
  old: number;
  /** Code and large objects, committed. */
  codeAndLarge: number;
  /** Resident pages of malloc's main heap (`[heap]`): Buffers' memory, zlib, node's own allocations. */
  mallocHeap: number;
  /** Resident anonymous pages besides: V8's heap pages, threads' stacks and malloc arenas, mmapped allocations. */
  otherAnonymous: number;
  /** Resident pages backed by files: node's binary, shared libraries, mapped files. */
  fileBacked: number;
}

export type ToTarget = { type: 'start'; config: TargetConfig } | { type: 'usage' } | { type: 'heap-start' } | { type: 'heap-stop' } | { type: 'stop' };

export type FromTarget =
  | { type: 'listening'; port: number }
  /** CPU µs used so far, in all and of it in the kernel (`process.cpuUsage()`'s user + system, and system). */
  | { type: 'usage'; cpuUs: number; systemUs: number; rssBytes: number }
  /**
   * Bytes the target allocated on its V8 heap since `heap-start`, and its heap still in use after
   * a full collection right after (see bench/heap.ts).
   */
  | { type: 'heap'; allocatedBytes: number; liveBytes: number; parts?: MemoryParts }
  | { type: 'failed'; message: string };
