/**
 * The OFREP event-stream fan-out: how many `GET /ofrep/v1/sse` streams one flag-proxy process
 * holds, what each costs in memory, and how long an upstream change takes to reach the last of
 * them.
 *
 * One flag-proxy target process (on the target core when pinning is available) with
 * `maxEventStreams` above the stream count; the runner opens every stream on loopback, one socket
 * each (`agent: false`), reads the target's RSS and its heap after a full collection before and
 * after, flips one flag in the upstream, and times the `refetchEvaluation` event on every stream.
 * Each stream then fetches its flags again, as a browser does (a bulk evaluation for its own
 * context, over a pool of {@link REFETCH_SOCKETS} connections), while a probe asks for the health
 * route every {@link PROBE_GAP_MS}: how long the refetches take, and how long the proxy keeps other
 * requests waiting meanwhile. It runs once with the proxy's default pacing of those notices
 * (`ofrep.refetchNoticesPerSecond`) and once with every stream told at once.
 * Everything is bounded by deadlines and closed at the end.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
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
/** Connections the streams' refetches share: browsers have one each, the runner cannot have 10,000 more. */
export const REFETCH_SOCKETS = 1000;
/**
 * The target server's keep-alive timeout in the fan-out, ms. The runner pipelines its refetches
 * (about ten on each connection, where each browser would use its own), and node's server stops
 * reading a connection whose answers back up, yet arms its keep-alive timer (5 s by default) once
 * the answers it has read are written: with requests still unread, it then closes the connection
 * under them (ECONNRESET). With every stream told at once, 20 to 76 of 10,000 refetches were
 * reset so (runs of 2026-11-27/28); with this timeout, none. 65 s is also what hosts behind a
 * load balancer commonly set (above its 60 s idle timeout).
 */
export const FANOUT_KEEP_ALIVE_MS = 65_000;
/** Milliseconds between the end of one health probe and the next. */
export const PROBE_GAP_MS = 10;

export interface FanoutConfig {
  /** The flag-proxy module the target loads (bench/build.ts). */
  flagProxyModule: string;
  /** The flag-proxy target entry (bench/build.ts). */
  entry: string;
  streams: number;
  flags: number;
  core: number | undefined;
  nodeArgs: string[];
  /** The target's `ofrep.refetchNoticesPerSecond`; undefined leaves the proxy's default. */
  noticesPerSecond?: number;
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
  /** The target's `ofrep.refetchNoticesPerSecond` (undefined: its default). */
  noticesPerSecond: number | undefined;
  /** Refetches answered 200, and milliseconds from the upstream change to the last of them. */
  refetched: number;
  /** Every refetch by its answer's status (`none`: not answered before the deadline, `0 <reason>`: the connection failed). */
  refetchStatuses: Record<string, number>;
  changeToLastRefetchMs: number;
  /** Health probes from the first notice to the last refetch: how many, and their p50, p99 and worst latency (ms). */
  probes: number;
  probeP50Ms: number;
  probeP99Ms: number;
  probeMaxMs: number;
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
  if (Number.isFinite(limit) && limit < streams + REFETCH_SOCKETS + FD_MARGIN) {
    throw new FileLimitError(
      `The SSE fan-out opens ${streams.toLocaleString('en-US')} streams: the runner and the target each need about ${(streams + REFETCH_SOCKETS + FD_MARGIN).toLocaleString('en-US')} open files, ` +
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
  /** performance.now() when the refetch it then made was answered, and that answer's status (0: failed). */
  refetchedAt?: number;
  refetchStatus?: number;
  /** Why its refetch failed (status 0): the socket error's code, or that the target closed the connection. */
  refetchFailure?: string;
}

/**
 * The streams' refetches, as cheap for the runner as it can make them, so that it can send them as
 * fast as browsers would (node's HTTP client, at about 100 µs a request, spread them out by itself):
 * REFETCH_SOCKETS raw connections opened beforehand, each request written whole on the next one in
 * turn (pipelined behind any still unanswered), and answers told apart by their status lines
 * (the bodies are JSON, and never hold one).
 */
async function openRefetchers(base: string): Promise<{ refetch(stream: Stream, body: string): void; close(): void }> {
  const { hostname, port } = new URL(base);
  const sockets = await Promise.all(
    Array.from(
      { length: REFETCH_SOCKETS },
      () =>
        new Promise<{ socket: net.Socket; waiting: Stream[] }>((resolve, reject) => {
          const socket = net.connect(Number(port), hostname, () => resolve(entry));
          const entry = { socket, waiting: [] as Stream[] };
          socket.setNoDelay(true);
          socket.setEncoding('latin1');
          let tail = '';
          socket.on('data', (chunk: string) => {
            const text = tail + chunk;
            const status = /HTTP\/1\.1 (\d{3}) /g;
            let match: RegExpExecArray | null;
            let end = 0;
            while ((match = status.exec(text)) !== null) {
              const stream = entry.waiting.shift();
              if (stream) {
                stream.refetchStatus = Number(match[1]);
                stream.refetchedAt = performance.now();
              }
              end = status.lastIndex;
            }
            tail = text.slice(Math.max(end, text.length - 16));
          });
          const fail = (reason: string): void => {
            for (const stream of entry.waiting.splice(0)) {
              stream.refetchStatus = 0;
              stream.refetchFailure = reason;
              stream.refetchedAt = performance.now();
            }
          };
          socket.on('error', (error: NodeJS.ErrnoException) => {
            fail(error.code ?? error.message);
            reject(error);
          });
          socket.on('close', () => fail('closed by the target'));
        }),
    ),
  );
  let next = 0;
  const head = `POST ${OFREP_BULK} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nAuthorization: Bearer ${CLIENT_KEY}\r\n`;
  return {
    refetch(stream, body) {
      const entry = sockets[next++ % sockets.length]!;
      entry.waiting.push(stream);
      entry.socket.write(`${head}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    },
    close() {
      for (const { socket } of sockets) socket.destroy();
    },
  };
}

/**
 * The health probe, in a thread of its own so that the runner's work on the streams' events does
 * not delay its timing: one request at a time on one connection, PROBE_GAP_MS apart, until told to
 * stop; then it posts each probe's start (`performance.timeOrigin`-based, ms) and latency.
 */
const PROBE_THREAD = `
const http = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const probes = [];
let stopped = false;
parentPort.on('message', () => { stopped = true; });
const once = () => new Promise((resolve) => {
  const req = http.get(workerData.url, { agent }, (res) => { res.resume(); res.on('end', resolve); res.on('error', resolve); });
  req.on('error', resolve);
});
(async () => {
  while (!stopped) {
    const at = performance.now();
    await once();
    probes.push({ at: performance.timeOrigin + at, ms: performance.now() - at });
    await new Promise((resolve) => setTimeout(resolve, workerData.gap));
  }
  agent.destroy();
  parentPort.postMessage(probes);
})();
`;

/** Starts the health probe on `url`; `stop()` ends it and resolves with each probe's start (on this thread's clock) and latency, ms. */
function startProbe(url: string): { stop(): Promise<Array<{ at: number; ms: number }>> } {
  const worker = new Worker(PROBE_THREAD, { eval: true, workerData: { url, gap: PROBE_GAP_MS } });
  const done = new Promise<Array<{ at: number; ms: number }>>((resolve, reject) => {
    worker.once('message', (probes: Array<{ at: number; ms: number }>) => resolve(probes.map((p) => ({ at: p.at - performance.timeOrigin, ms: p.ms }))));
    worker.once('error', reject);
  });
  return {
    async stop() {
      worker.postMessage('stop');
      try {
        return await done;
      } finally {
        await worker.terminate();
      }
    },
  };
}

/** Opens one stream; resolves with it once the target answered 200, or undefined if it did not. */
function openStream(url: string, deadline: number, onNotice: (stream: Stream) => void): Promise<Stream | undefined> {
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
        if (text.includes('refetchEvaluation')) {
          stream.notifiedAt = performance.now();
          onNotice(stream);
        } else tail = text.slice(-32);
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
  const closers: Array<() => void> = [];
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
        keepAliveTimeout: FANOUT_KEEP_ALIVE_MS,
        ...(config.noticesPerSecond !== undefined ? { refetchNoticesPerSecond: config.noticesPerSecond } : {}),
      },
    });
    const refetchers = await openRefetchers(target.base);
    closers.push(() => refetchers.close());
    let nextContext = 1_000_000;
    // What a browser's provider does on the notice: fetch its flags again, for its own context.
    const onNotice = (stream: Stream): void => refetchers.refetch(stream, ofrepBody(contextFor(nextContext++)));
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
          const stream = await openStream(url, openDeadline, onNotice);
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
    const waitDeadline = Date.now() + FANOUT_REFRESH_MS * 2 + 60_000;
    const settled = (): boolean => Date.now() >= waitDeadline || streams.every((s) => s.refetchedAt !== undefined);
    const probing = startProbe(`${target.base}/proxy/health`);
    while (!settled()) await new Promise((resolve) => setTimeout(resolve, 10));
    const probes = await probing.stop();
    const times = streams.flatMap((s) => (s.notifiedAt === undefined ? [] : [s.notifiedAt - changedAt])).sort((a, b) => a - b);
    const answered = streams.flatMap((s) => (s.refetchStatus === 200 && s.refetchedAt !== undefined ? [s.refetchedAt] : []));
    const lastRefetch = answered.length > 0 ? Math.max(...answered) : Number.NaN;
    const firstNotice = (times[0] ?? Number.NaN) + changedAt;
    // The probes the refetches could delay: from the first notice to the last refetch answered.
    const during = probes.filter((p) => p.at + p.ms >= firstNotice && p.at <= lastRefetch).map((p) => p.ms).sort((a, b) => a - b);
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
      noticesPerSecond: config.noticesPerSecond,
      refetched: answered.length,
      refetchStatuses: streams.reduce<Record<string, number>>((counts, s) => {
        const key = s.refetchStatus === undefined ? 'none' : s.refetchStatus === 0 ? `0 ${s.refetchFailure ?? ''}`.trim() : String(s.refetchStatus);
        counts[key] = (counts[key] ?? 0) + 1;
        return counts;
      }, {}),
      changeToLastRefetchMs: lastRefetch - changedAt,
      probes: during.length,
      probeP50Ms: percentile(during, 0.5),
      probeP99Ms: percentile(during, 0.99),
      probeMaxMs: during[during.length - 1] ?? Number.NaN,
      fdLimit,
      flags: config.flags,
    };
  } finally {
    for (const s of streams) s.req.destroy();
    for (const close of closers) close();
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
    `(first → last ${(r.changeToLastMs - r.changeToFirstMs).toFixed(0)} ms); ${r.refetched.toLocaleString('en-US')} refetched, the last ${r.changeToLastRefetchMs.toFixed(0)} ms after the change; ` +
    `health meanwhile p50 ${r.probeP50Ms.toFixed(1)} ms, p99 ${r.probeP99Ms.toFixed(1)} ms, worst ${r.probeMaxMs.toFixed(1)} ms (${r.probes} probes), ${r.noticesPerSecond === undefined ? 'default pacing' : `${r.noticesPerSecond} notices/s`}`
  );
}
