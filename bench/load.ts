/**
 * One load run (closed loop: each connection sends its next request when the previous answer is
 * complete): timed runs with wrk when the settings ask for it (bench/wrk.ts), and every run of a
 * fixed number of requests (priming, which reads the answers) with autocannon's programmatic API.
 * Latencies are collected here from autocannon's per-response event, at the microsecond resolution
 * it measures, rather than from its histogram, whose buckets are whole milliseconds.
 */
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { prepareWrk, wrkVersion, type PreparedRun } from './wrk.js';

/** What generates the load of timed runs: wrk (C, saturates a bare node server) or autocannon. */
export type Loader = 'wrk' | 'autocannon';

/**
 * The loader a `--load` value names, or wrk when it is installed and none was named; throws,
 * after `prefix`, on anything else, or on wrk when it is not installed.
 */
export function chooseLoader(value: string | undefined, prefix = ''): Loader {
  const installed = wrkVersion() !== undefined;
  const v = value ?? (installed ? 'wrk' : 'autocannon');
  if (v !== 'wrk' && v !== 'autocannon') throw new Error(`${prefix}--load must be 'wrk' or 'autocannon', got "${v}"`);
  if (v === 'wrk' && !installed) throw new Error(`${prefix}--load=wrk: wrk is not installed (apt-get install wrk)`);
  return v;
}

export interface LoadSettings {
  base: string;
  requests: autocannon.Request[];
  connections: number;
  /** Seconds; ignored when `amount` is given. */
  duration?: number;
  /** Exactly this many requests, then stop. */
  amount?: number;
  /** With `amount`: stop after this many seconds even if not all were sent. */
  maxSeconds?: number;
  /** Who sends a timed run (`duration`); runs of an `amount` always use autocannon. @default 'autocannon' */
  loader?: Loader;
}

export interface LoadResult {
  /** Completed responses. */
  count: number;
  seconds: number;
  rps: number;
  /** Milliseconds. */
  p50: number;
  p99: number;
  statuses: Record<string, number>;
  /** Connection errors and timeouts. */
  errors: number;
  /** Requests sent but not answered when the run stopped (the target still does their work). */
  inFlight: number;
  /** wrk only: how many times the requests drawn for the run ran out and were sent again from the first. */
  wraps?: number;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

/**
 * Gets a run ready and returns it: with wrk, its requests are drawn now, so that a measured window
 * holds only the sending. A prepared run is started once; one that will not be is discarded.
 */
export function prepareLoad(settings: LoadSettings): PreparedRun {
  if (settings.loader === 'wrk' && settings.amount === undefined) {
    return prepareWrk({ base: settings.base, requests: settings.requests, connections: settings.connections, duration: settings.duration ?? 1 });
  }
  return { start: () => autocannonLoad(settings), discard: () => undefined };
}

export function runLoad(settings: LoadSettings): Promise<LoadResult> {
  return prepareLoad(settings).start();
}

function autocannonLoad(settings: LoadSettings): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    let latencies = new Float64Array(1 << 16);
    let count = 0;
    const statuses: Record<string, number> = {};
    const started = performance.now();
    const instance = autocannon(
      {
        url: settings.base,
        connections: settings.connections,
        pipelining: 1,
        timeout: 30,
        // autocannon notices the end of a run on its sampling tick (1 s by default), which would
        // round every run up to whole seconds.
        sampleInt: 100,
        ...(settings.amount !== undefined ? { amount: settings.amount } : { duration: settings.duration ?? 1 }),
        requests: settings.requests,
      },
      (error: unknown, result: autocannon.Result) => {
        const seconds = (performance.now() - started) / 1000;
        if (error) return reject(error instanceof Error ? error : new Error(String(error)));
        const sorted = latencies.subarray(0, count).sort();
        resolve({
          count,
          seconds,
          rps: count / seconds,
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          statuses,
          errors: result.errors,
          inFlight: Math.max(0, Math.min(settings.connections, (result.requests as { sent?: number }).sent ?? count) - count),
        });
      },
    );
    if (settings.amount !== undefined && settings.maxSeconds !== undefined) {
      const timer = setTimeout(() => instance.stop(), settings.maxSeconds * 1000);
      instance.on('done', () => clearTimeout(timer));
    }
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (count === latencies.length) {
        const bigger = new Float64Array(latencies.length * 2);
        bigger.set(latencies);
        latencies = bigger;
      }
      latencies[count++] = responseTime;
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
    });
  });
}
