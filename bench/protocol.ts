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
  /** bare-node only: the precomputed answers it serves. */
  bare?: { full: string; named: string };
}

export type ToTarget = { type: 'start'; config: TargetConfig } | { type: 'usage' } | { type: 'stop' };

export type FromTarget =
  | { type: 'listening'; port: number }
  | { type: 'usage'; cpuUs: number; rssBytes: number }
  | { type: 'failed'; message: string };
