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
  /** bare-node only: the precomputed answers it serves. */
  bare?: { full: string; named: string };
}

export type ToTarget = { type: 'start'; config: TargetConfig } | { type: 'usage' } | { type: 'heap-start' } | { type: 'heap-stop' } | { type: 'stop' };

export type FromTarget =
  | { type: 'listening'; port: number }
  | { type: 'usage'; cpuUs: number; rssBytes: number }
  /**
   * Bytes the target allocated on its V8 heap since `heap-start`, and its heap still in use after
   * a full collection right after (see bench/heap.ts).
   */
  | { type: 'heap'; allocatedBytes: number; liveBytes: number }
  | { type: 'failed'; message: string };
