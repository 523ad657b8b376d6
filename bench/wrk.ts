/**
 * A timed load run with wrk (C, one thread) instead of autocannon, for the measured windows and
 * warm-ups: autocannon is JavaScript and tops out near 9,000 small answers a second on one core of
 * the bench machine, below what a bare node:http server serves on its own, so the fast targets were
 * never saturated and their CPU per request carried the cost of waking up for every request. wrk
 * saturates them, as the issue's own measurements did.
 *
 * The scenario's requests are autocannon request definitions whose `setupRequest` builds the next
 * request; they are drawn here ahead of the run, as many as the window could send at
 * {@link MAX_RATE}, written to a file as raw HTTP/1.1 requests, and replayed by a Lua script that
 * reads them in order (from the start again should it reach the end, which it counts). Answers are
 * not handed back to the scenario (`onResponse` is not called): priming, which needs them, stays
 * with autocannon.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type autocannon from 'autocannon';
import type { LoadResult } from './load.js';

/** Requests a second the drawn requests must last for (well above what a target here answers). */
export const MAX_RATE = 40_000;

/** What `wrk -v` said, asked once per runner process (the options, the report and bench:ab each want it). */
let probed: { version: string | undefined } | undefined;

/** wrk's version as it prints it (`4.1.0`; Debian's `debian/4.1.0-3+b2`), or undefined when it is not installed. */
export function wrkVersion(): string | undefined {
  if (probed === undefined) {
    const probe = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
    probed = { version: probe.error ? undefined : /wrk (\S+)/.exec(`${probe.stdout}${probe.stderr}`)?.[1] };
  }
  return probed.version;
}

/**
 * The replaying script: each request file entry is `<length>\n<bytes>`. The thread's counts go back
 * to the main state through `thread:get`, and `done` prints them as one JSON line.
 */
const SCRIPT = `
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  file = assert(io.open(args[1], "rb"))
  sent, wraps, statuses = 0, 0, {}
end
function request()
  local length = file:read("*n")
  if length == nil then
    file:seek("set", 0)
    wraps = wraps + 1
    length = file:read("*n")
  end
  file:read(1)
  sent = sent + 1
  return file:read(length)
end
function response(status)
  statuses[status] = (statuses[status] or 0) + 1
end
function done(summary, latency)
  local sent, wraps, parts = 0, 0, {}
  local statuses = {}
  for _, thread in ipairs(threads) do
    sent = sent + thread:get("sent")
    wraps = wraps + thread:get("wraps")
    for status, n in pairs(thread:get("statuses")) do statuses[status] = (statuses[status] or 0) + n end
  end
  for status, n in pairs(statuses) do table.insert(parts, string.format('"%d":%d', status, n)) end
  local e = summary.errors
  io.write(string.format('\\nWRK-RESULT {"count":%d,"sent":%d,"wraps":%d,"p50":%d,"p99":%d,"errors":%d,"statuses":{%s}}\\n',
    summary.requests, sent, wraps, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, table.concat(parts, ",")))
end
`;

export interface WrkSettings {
  base: string;
  requests: autocannon.Request[];
  connections: number;
  /** Seconds; fractions allowed (wrk takes whole seconds, so it is stopped by SIGINT). */
  duration: number;
  /** How many requests to draw. @default duration × {@link MAX_RATE}, at least 1,000 */
  drawn?: number;
  /** Where the run's own directory (script, request file) is made. @default os.tmpdir() */
  scratch?: string;
}

/** One HTTP/1.1 request as bytes, as autocannon would send it (host, and content-length for a body). */
export function rawRequest(host: string, method: string, path: string, headers: Record<string, string>, body: string | undefined): Buffer {
  let head = `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  if (body !== undefined) head += `content-length: ${Buffer.byteLength(body)}\r\n`;
  return Buffer.from(`${head}\r\n${body ?? ''}`, 'utf8');
}

/**
 * Draws `count` requests from the definitions (in turn, as autocannon takes them) into `file`,
 * each as `<length>\n<bytes>`.
 */
export function writeRequests(file: string, host: string, requests: autocannon.Request[], count: number): void {
  const fd = openSync(file, 'w');
  try {
    const chunks: Buffer[] = [];
    let pending = 0;
    for (let i = 0; i < count; i++) {
      const definition = requests[i % requests.length] as autocannon.Request;
      let req: autocannon.Request = { ...definition, headers: { ...(definition.headers ?? {}) } };
      const setup = definition.setupRequest as ((request: autocannon.Request, context: object) => autocannon.Request | undefined) | undefined;
      if (setup) req = setup(req, {}) ?? req;
      const bytes = rawRequest(host, req.method ?? 'GET', req.path ?? '/', (req.headers ?? {}) as Record<string, string>, req.body as string | undefined);
      chunks.push(Buffer.from(`${bytes.length}\n`), bytes);
      pending += bytes.length;
      if (pending > 1 << 20) {
        writeSync(fd, Buffer.concat(chunks));
        chunks.length = 0;
        pending = 0;
      }
    }
    if (chunks.length > 0) writeSync(fd, Buffer.concat(chunks));
  } finally {
    closeSync(fd);
  }
}

/** A run whose requests are drawn: started once by `start`, or given up by `discard`. */
export interface PreparedRun {
  start(): Promise<LoadResult>;
  /** Removes what the run was given (its request file), if it was never started; safe to call again. */
  discard(): void;
}

/**
 * Draws the run's requests and writes the files, and returns the run itself, so that the drawing
 * (up to a second for a window of unique contexts) happens before a measured window, not in it.
 * The files go once the run ends, or when it is discarded unstarted (a window that failed before it).
 */
export function prepareWrk(settings: WrkSettings): PreparedRun {
  const dir = mkdtempSync(join(settings.scratch ?? tmpdir(), 'flag-proxy-wrk-'));
  const script = join(dir, 'replay.lua');
  const file = join(dir, 'requests');
  try {
    writeFileSync(script, SCRIPT);
    const url = new URL(settings.base);
    writeRequests(file, url.host, settings.requests, settings.drawn ?? Math.max(1000, Math.ceil(settings.duration * MAX_RATE)));
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const args = ['-t1', `-c${settings.connections}`, `-d${Math.ceil(settings.duration) + 5}s`, '--timeout', '30s', '-s', script, settings.base, '--', file];
  const remove = (): void => rmSync(dir, { recursive: true, force: true });
  let started = false;
  const start = (): Promise<LoadResult> => {
    if (started) return Promise.reject(new Error('a prepared wrk run is started once'));
    started = true;
    return new Promise<LoadResult>((resolve, reject) => {
      const started = performance.now();
      const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
      // wrk stops on SIGINT as at the end of its duration: it closes its connections and runs `done`.
      let stoppedAt: number | undefined;
      const timer = setTimeout(() => {
        stoppedAt = performance.now();
        child.kill('SIGINT');
      }, settings.duration * 1000);
      child.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        const line = /WRK-RESULT (\{.*\})/.exec(out)?.[1];
        if (!line) return reject(new Error(`wrk (exit ${code}) printed no result: ${err.trim() || out.trim()}`));
        const r = JSON.parse(line) as { count: number; sent: number; wraps: number; p50: number; p99: number; errors: number; statuses: Record<string, number> };
        // The window ends at SIGINT: wrk sends nothing after it.
        const seconds = ((stoppedAt ?? performance.now()) - started) / 1000;
        resolve({
          count: r.count,
          seconds,
          rps: r.count / seconds,
          p50: r.p50 / 1000,
          p99: r.p99 / 1000,
          statuses: r.statuses,
          errors: r.errors,
          // wrk takes one request to check the script before it connects: never sent.
          inFlight: Math.max(0, Math.min(settings.connections, r.sent - 1 - r.count)),
          wraps: r.wraps,
        });
      });
    }).finally(remove);
  };
  return {
    start,
    discard: () => {
      if (!started) remove();
    },
  };
}
