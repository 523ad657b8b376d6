/**
 * The OFREP event-stream fan-out: how many `GET /ofrep/v1/sse` streams one flag-proxy process
 * holds, what each costs in memory, and how long an upstream change takes to reach the last of
 * them.
 *
 * One flag-proxy target process (on the target core when pinning is available) with
 * `maxEventStreams` above the stream count; the runner opens every stream on loopback, one socket
 * each (`agent: false`), reads the target's RSS and its heap after a full collection before and
 * after, flips one flag in the upstream, and times the `refetchEvaluation` event on every stream.
 * Everything is bounded by deadlines and closed at the end.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { createTestFlagServer } from '../src/testing/index.js';
import { APP_NAME, CLIENT_KEY, contextFor, generateFlags } from './flags.js';
import { readMemory, startTarget, type TargetProcess } from './processes.js';
import { OFREP_BULK, ofrepBody } from './scenarios.js';

/** The proxy's poll of the upstream during the fan-out: short, so a change reaches it quickly. */
export const FANOUT_REFRESH_MS = 1000;
/** Streams opening at once: enough to open 10,000 in seconds, few enough not to overrun the listen backlog. */
const OPENING_AT_ONCE = 200;
/** File descriptors the runner needs beside its streams (upstream, IPC, autocannon's leftovers). */
const FD_MARGIN = 256;

export interface FanoutConfig {
  /** The flag-proxy module the target loads (bench/build.ts). */
  flagProxyModule: string;
  /** The flag-proxy target entry (bench/build.ts). */
  entry: string;
  streams: number;
  flags: number;
  core: number | undefined;
  nodeArgs: string[];
  log(line: string): void;
}

export interface FanoutResult {
  /** Streams asked for, and those the target answered 200 and kept open. */
  requested: number;
  open: number;
  /** Streams refused (a status other than 200) or failed (a socket error) while opening. */
  refused: number;
  openSeconds: number;
  /** The target's RSS and its heap after a full collection, before and after opening the streams. */
  rssBefore: number;
  rssAfter: number;
  heapBefore: number;
  heapAfter: number;
  /** Streams that received `refetchEvaluation` before the deadline. */
  notified: number;
  /** Milliseconds from the upstream change to the first, median, 99th percentile and last stream notified. */
  changeToFirstMs: number;
  changeToP50Ms: number;
  changeToP99Ms: number;
  changeToLastMs: number;
  refreshIntervalMs: number;
  /** The runner's open-file limit (`ulimit -n`), which its target inherits. */
  fdLimit: number;
  flags: number;
}

/** The soft limit on open files of this process (what `ulimit -n` shows), from /proc. */
export function openFileLimit(): number {
  try {
    const limits = readFileSync('/proc/self/limits', 'utf8');
    const soft = /^Max open files\s+(\S+)/m.exec(limits)?.[1];
    return soft === undefined || soft === 'unlimited' ? Number.POSITIVE_INFINITY : Number(soft);
  } catch {
    return Number.NaN;
  }
}

/** The open-file limit is too low for the fan-out: the run stops with the message alone, no stack. */
export class FileLimitError extends Error {
  override name = 'FileLimitError';
}

/** Throws a clear error when this process (and so the target it starts) cannot hold `streams` sockets. */
export function checkFileLimit(streams: number): number {
  const limit = openFileLimit();
  if (Number.isFinite(limit) && limit < streams + FD_MARGIN) {
    throw new FileLimitError(
      `The SSE fan-out opens ${streams.toLocaleString('en-US')} streams: the runner and the target each need about ${(streams + FD_MARGIN).toLocaleString('en-US')} open files, ` +
        `but \`ulimit -n\` is ${limit}. Raise it in this shell (e.g. \`ulimit -n ${Math.max(20_000, streams * 2)}\`, up to \`ulimit -Hn\`), ask for fewer streams (--fanout-streams=N) or skip the fan-out (--fanout=0).`,
    );
  }
  return limit;
}

/** POSTs an OFREP bulk evaluation and returns the event-stream URL its answer advertises. */
async function streamUrl(base: string): Promise<string> {
  const res = await fetch(`${base}${OFREP_BULK}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_KEY}` },
    body: ofrepBody(contextFor(1)),
  });
  if (res.status !== 200) throw new Error(`OFREP bulk evaluation answered ${res.status}, expected 200`);
  const body = (await res.json()) as { eventStreams?: Array<{ type: string; url: string }> };
  const url = body.eventStreams?.find((s) => s.type === 'sse')?.url;
  if (!url) throw new Error('The OFREP bulk answer advertises no sse event stream');
  return url;
}

interface Stream {
  req: http.ClientRequest;
  /** performance.now() when its `refetchEvaluation` arrived. */
  notifiedAt?: number;
}

/** Opens one stream; resolves with it once the target answered 200, or undefined if it did not. */
function openStream(url: string, deadline: number): Promise<Stream | undefined> {
  return new Promise((resolve) => {
    const stream: Stream = { req: undefined as unknown as http.ClientRequest };
    // Keeps the last few characters, so an event split across two chunks is still seen.
    let tail = '';
    const timer = setTimeout(() => {
      stream.req.destroy();
      resolve(undefined);
    }, Math.max(1, deadline - Date.now()));
    stream.req = http.get(url, { agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
      clearTimeout(timer);
      if (res.statusCode !== 200) {
        res.resume();
        stream.req.destroy();
        return resolve(undefined);
      }
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (stream.notifiedAt !== undefined) return;
        const text = tail + chunk;
        if (text.includes('refetchEvaluation')) stream.notifiedAt = performance.now();
        else tail = text.slice(-32);
      });
      res.on('error', () => {});
      resolve(stream);
    });
    stream.req.on('error', () => {
      clearTimeout(timer);
      resolve(undefined);
    });
  });
}

async function targetMemory(target: TargetProcess): Promise<{ rss: number; heap: number }> {
  // heap-start/heap-stop answers the heap in use after a full collection (bench/heap.ts).
  target.heap?.start();
  const heap = (await target.heap?.stop())?.liveBytes ?? Number.NaN;
  return { rss: readMemory(target.pid).rss, heap };
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? Number.NaN;

/** Runs the fan-out once. Throws before starting anything when the open-file limit is too low. */
export async function runFanout(config: FanoutConfig): Promise<FanoutResult> {
  const fdLimit = checkFileLimit(config.streams);
  const { features, segments } = generateFlags(config.flags);
  const upstreamToken = 'bench-fanout-upstream-token';
  const upstream = await createTestFlagServer({ features, segments, clientTokens: [upstreamToken] });
  const streams: Stream[] = [];
  let target: TargetProcess | undefined;
  try {
    target = await startTarget('flag-proxy', {
      entry: config.entry,
      core: config.core,
      nodeArgs: config.nodeArgs,
      config: {
        upstreamUrl: upstream.url,
        upstreamToken,
        clientKey: CLIENT_KEY,
        appName: APP_NAME,
        refreshInterval: FANOUT_REFRESH_MS,
        metricsInterval: 30_000,
        flagProxyModule: config.flagProxyModule,
        maxEventStreams: config.streams + 100,
      },
    });
    const url = await streamUrl(target.base);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const before = await targetMemory(target);

    const opening = performance.now();
    const openDeadline = Date.now() + 120_000;
    let refused = 0;
    let next = 0;
    // A fixed number of openers, each taking the next stream until all are asked for.
    await Promise.all(
      Array.from({ length: Math.min(OPENING_AT_ONCE, config.streams) }, async () => {
        while (next < config.streams && Date.now() < openDeadline) {
          next++;
          const stream = await openStream(url, openDeadline);
          if (stream) streams.push(stream);
          else refused++;
        }
      }),
    );
    const openSeconds = (performance.now() - opening) / 1000;
    config.log(`   ${streams.length.toLocaleString('en-US')} streams open in ${openSeconds.toFixed(1)} s${refused ? `, ${refused} refused or failed` : ''}`);
    // Let the target settle (its write buffers drained, its young generation collected) before reading.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const after = await targetMemory(target);

    // Flip a flag that is on: the next poll brings a new flag set, and every stream is told.
    const flipped = features.find((f) => f.enabled) ?? features[0];
    if (!flipped) throw new Error('no flag to flip');
    const changedAt = performance.now();
    upstream.setEnabled(flipped.name, !flipped.enabled);
    const waitDeadline = Date.now() + FANOUT_REFRESH_MS * 2 + 30_000;
    while (Date.now() < waitDeadline && streams.some((s) => s.notifiedAt === undefined)) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const times = streams.flatMap((s) => (s.notifiedAt === undefined ? [] : [s.notifiedAt - changedAt])).sort((a, b) => a - b);
    return {
      requested: config.streams,
      open: streams.length,
      refused,
      openSeconds,
      rssBefore: before.rss,
      rssAfter: after.rss,
      heapBefore: before.heap,
      heapAfter: after.heap,
      notified: times.length,
      changeToFirstMs: times[0] ?? Number.NaN,
      changeToP50Ms: percentile(times, 0.5),
      changeToP99Ms: percentile(times, 0.99),
      changeToLastMs: times[times.length - 1] ?? Number.NaN,
      refreshIntervalMs: FANOUT_REFRESH_MS,
      fdLimit,
      flags: config.flags,
    };
  } finally {
    for (const s of streams) s.req.destroy();
    await target?.stop();
    await upstream.close();
  }
}

/** The fan-out's progress line. */
export function describeFanout(r: FanoutResult): string {
  const per = (a: number, b: number): string => ((b - a) / Math.max(1, r.open) / 1024).toFixed(1);
  return (
    `${r.open.toLocaleString('en-US')} of ${r.requested.toLocaleString('en-US')} streams open; per stream ${per(r.rssBefore, r.rssAfter)} kB RSS, ${per(r.heapBefore, r.heapAfter)} kB heap; ` +
    `${r.notified.toLocaleString('en-US')} notified: change → first ${r.changeToFirstMs.toFixed(0)} ms, p50 ${r.changeToP50Ms.toFixed(0)} ms, last ${r.changeToLastMs.toFixed(0)} ms ` +
    `(first → last ${(r.changeToLastMs - r.changeToFirstMs).toFixed(0)} ms)`
  );
}
