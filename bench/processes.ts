/**
 * The runner side of target processes: spawn one (pinned to a core with taskset), talk to it over
 * IPC, read its memory from /proc, and make sure none outlives the runner. Also starts flag-proxy's
 * own CLI (a primary and its workers with `FLAG_PROXY_WORKERS`), which is measured from /proc.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { processCpuTime, type CpuTime } from './cores.js';
import { APP_NAME, CLIENT_KEY } from './flags.js';
import type { FromTarget, MemoryParts, TargetConfig, ToTarget } from './protocol.js';
import type { TargetName } from './options.js';

/** Where processes go when pinned: each target on core 1, the runner (load and upstream) on core 0. */
export const TARGET_CORE = 1;
export const RUNNER_CORE = 0;
/** Both proxies' defaults, set explicitly so they match. */
export const REFRESH_INTERVAL_MS = 5000;
export const METRICS_INTERVAL_MS = 30_000;

/** What a target is started with against the runner's upstream (`flagProxyModule`: flag-proxy's build). */
export function targetConfig(upstream: { url: string; token: string }, flagProxyModule: string): TargetConfig {
  return {
    upstreamUrl: upstream.url,
    upstreamToken: upstream.token,
    clientKey: CLIENT_KEY,
    appName: APP_NAME,
    refreshInterval: REFRESH_INTERVAL_MS,
    metricsInterval: METRICS_INTERVAL_MS,
    flagProxyModule,
  };
}

/** What a measurement needs of a running target, whatever its shape. */
export interface Measurable {
  /** `http://127.0.0.1:<port>` */
  readonly base: string;
  /** Every process whose CPU and memory count: the target, or a CLI's primary and all its workers. */
  readonly pids: readonly number[];
  /** CPU time (all threads, all of `pids`) used so far. */
  cpuTime(): Promise<CpuTime>;
  /** How `waitForIdle` samples `cpuTime`: the interval, and the CPU below which the target counts as idle. */
  readonly idle: { intervalMs: number; belowUs: number };
  /** Counting of the bytes allocated on the target's V8 heap (bench/heap.ts), when the target speaks the bench protocol. */
  readonly heap?: { start(): void; stop(): Promise<{ allocatedBytes: number; liveBytes: number; parts?: MemoryParts }> };
}

export interface TargetProcess extends Measurable {
  readonly name: TargetName;
  readonly pid: number;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
/** Processes the runner did not spawn itself but must not leave behind: a CLI's cluster workers. */
const livePids = new Set<number>();
/** Temp directories of CLI targets still running. */
const liveDirs = new Set<string>();

/** Kills every target still running (SIGKILL, by pid). Safe to call more than once. */
export function killAllTargets(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  live.clear();
  for (const pid of livePids) killPid(pid);
  livePids.clear();
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
  liveDirs.clear();
}

function killPid(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/** Sum of {@link processCpuTime} over several processes. */
export function processesCpuTime(pids: readonly number[]): CpuTime {
  return pids.map(processCpuTime).reduce((sum, one) => ({ totalUs: sum.totalUs + one.totalUs, systemUs: sum.systemUs + one.systemUs }), { totalUs: 0, systemUs: 0 });
}

/** True when taskset exists and there are at least two cores to split between runner and target. */
export function pinningAvailable(cores: number): { ok: boolean; reason?: string } {
  if (cores < 2) return { ok: false, reason: `only ${cores} core(s)` };
  const probe = spawnSync('taskset', ['-p', String(process.pid)], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) return { ok: false, reason: 'taskset (util-linux) is not available' };
  return { ok: true };
}

/** Pins this process (every thread) to one core, or to a taskset list of cores (e.g. `0-1` to unpin it). */
export function pinSelf(core: number | string): void {
  const result = spawnSync('taskset', ['-a', '-p', '-c', String(core), String(process.pid)], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`taskset could not pin the runner: ${result.stderr}`);
}

/**
 * Resolves once `/proxy/health` has answered 200 `inARow` times in a row, each on a connection of
 * its own: a cluster primary deals connections to its workers in turn, and each worker becomes
 * ready on its own (on a slow machine seconds apart), so one 200 says nothing of the others.
 */
function waitForHealth(base: string, timeoutMs: number, inARow = 1): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let healthy = 0;
  return new Promise((resolve, reject) => {
    const attempt = (): void => {
      const req = http.get(`${base}/proxy/health`, { agent: false }, (res) => {
        res.resume();
        if (res.statusCode === 200) {
          healthy += 1;
          if (healthy >= inARow) return resolve();
          return attempt();
        }
        healthy = 0;
        retry(`status ${res.statusCode}`);
      });
      req.on('error', (e) => {
        healthy = 0;
        retry(e.message);
      });
    };
    const retry = (why: string): void => {
      if (Date.now() > deadline) return reject(new Error(`${base}/proxy/health did not answer 200 within ${timeoutMs} ms (last: ${why})`));
      setTimeout(attempt, 50);
    };
    attempt();
  });
}

export interface StartOptions {
  entry: string;
  config: TargetConfig;
  /** Core to pin the target to, or undefined to leave it unpinned. */
  core: number | undefined;
  nodeArgs: string[];
}

export async function startTarget(name: TargetName, options: StartOptions): Promise<TargetProcess> {
  const nodeCommand = [process.execPath, ...options.nodeArgs, options.entry];
  const [command, ...args] = options.core === undefined ? nodeCommand : ['taskset', '-c', String(options.core), ...nodeCommand];
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production' };
  // Nothing of the runner's own loader (tsx) may leak into a measured process.
  delete env.NODE_OPTIONS;
  const child = spawn(command as string, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env });
  live.add(child);
  const waiting = new Set<(message: FromTarget) => void>();
  let exited: string | undefined;
  child.on('message', (message: FromTarget) => {
    for (const w of [...waiting]) w(message);
  });
  const exitPromise = new Promise<void>((resolve) => {
    child.on('exit', (code, signal) => {
      exited = `${name} exited (code ${code}, signal ${signal})`;
      live.delete(child);
      for (const w of [...waiting]) w({ type: 'failed', message: exited });
      resolve();
    });
  });
  const next = <T extends FromTarget['type']>(type: T, timeoutMs: number): Promise<Extract<FromTarget, { type: T }>> =>
    new Promise((resolve, reject) => {
      if (exited) return reject(new Error(exited));
      const timer = setTimeout(() => {
        waiting.delete(handler);
        reject(new Error(`${name}: no '${type}' message within ${timeoutMs} ms`));
      }, timeoutMs);
      const handler = (message: FromTarget): void => {
        if (message.type !== type && message.type !== 'failed') return;
        waiting.delete(handler);
        clearTimeout(timer);
        if (message.type === 'failed') reject(new Error(`${name} failed: ${message.message}`));
        else resolve(message as Extract<FromTarget, { type: T }>);
      };
      waiting.add(handler);
    });
  const post = (message: ToTarget): void => {
    if (!exited && child.connected) child.send(message);
  };
  try {
    const listening = next('listening', 30_000);
    post({ type: 'start', config: options.config });
    const { port } = await listening;
    const base = `http://127.0.0.1:${port}`;
    await waitForHealth(base, 30_000);
    if (child.pid === undefined) throw new Error(`${name} has no pid`);
    const pid = child.pid;
    return {
      name,
      pid,
      pids: [pid],
      base,
      // process.cpuUsage() over IPC is exact to the µs: 30 ms samples, idle below 10% of a core.
      idle: { intervalMs: 30, belowUs: 3000 },
      async cpuTime() {
        const answer = next('usage', 10_000);
        post({ type: 'usage' });
        const { cpuUs, systemUs } = await answer;
        return { totalUs: cpuUs, systemUs };
      },
      heap: {
        start() {
          post({ type: 'heap-start' });
        },
        async stop() {
          const answer = next('heap', 10_000);
          post({ type: 'heap-stop' });
          const { allocatedBytes, liveBytes, parts } = await answer;
          return { allocatedBytes, liveBytes, ...(parts ? { parts } : {}) };
        },
      },
      async stop() {
        if (exited) return;
        post({ type: 'stop' });
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exitPromise;
        clearTimeout(timer);
      },
    };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

/** Resident set size now and its peak (VmHWM) in bytes, from /proc/<pid>/status. */
export function readMemory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** Resets the kernel's peak RSS of a process (clear_refs 5); false when not permitted. */
export function resetPeakMemory(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/**
 * Tracks the peak RSS of a process over a window: the kernel's own high-water mark when it can be
 * reset at the start, else the highest of samples taken every 50 ms. With several processes (a
 * CLI's primary and workers), the sum of each one's peak. `stop` reads it; `cancel` only stops
 * the sampling (a window that failed).
 */
export function trackPeakMemory(pids: number | readonly number[]): { stop(): number; cancel(): void } {
  const list = typeof pids === 'number' ? [pids] : [...pids];
  const exact = list.map((pid) => resetPeakMemory(pid));
  const sampled = list.map((pid) => readMemory(pid).rss);
  const timer = setInterval(() => {
    list.forEach((pid, i) => {
      try {
        sampled[i] = Math.max(sampled[i] ?? 0, readMemory(pid).rss);
      } catch {
        // The process is gone; the caller notices on its next request.
      }
    });
  }, 50);
  return {
    cancel() {
      clearInterval(timer);
    },
    stop() {
      clearInterval(timer);
      return list.reduce((sum, pid, i) => {
        const now = readMemory(pid);
        return sum + Math.max(sampled[i] ?? 0, now.rss, exact[i] ? now.peak : 0);
      }, 0);
    },
  };
}

/** Pids of the live children of a process (from /proc: every process whose parent it is). */
export function childPids(parent: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name (in parentheses, may contain spaces): state, then ppid.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent) children.push(Number(entry));
    } catch {
      // Exited while we looked.
    }
  }
  return children;
}

export interface CliTarget extends Measurable {
  /** The process started: the cluster primary, or the single server when `workers` is 1. */
  readonly pid: number;
  /** Pids of the cluster workers (empty with 1 worker: the CLI then serves in its own process). */
  readonly workerPids: readonly number[];
  readonly workers: number;
  stop(): Promise<void>;
}

export interface CliStartOptions {
  /** The CLI's entry (a bundle of src/cli.ts, or dist/cli.js). */
  entry: string;
  /** The guard preloaded with --import (bench/targets/cli-guard.ts, bundled). */
  guard: string;
  workers: number;
  /** The CLI's own variables (FLAG_URL, ...); PORT, FLAG_PROXY_WORKERS and TMPDIR are added here. */
  variables: Record<string, string>;
  /** Cores (taskset list, e.g. '1') for the CLI and all its workers, or undefined for unpinned. */
  cores: string | undefined;
  nodeArgs: string[];
  /** Directory for the CLI's temp directory (bench/.build, emptied by every build, so a killed run leaves nothing elsewhere). */
  scratch: string;
}

/** The variables of the runner's environment a CLI target inherits: nothing that configures it. */
const INHERITED = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ'];

/**
 * Starts flag-proxy's CLI, configured only by environment variables as in production, with
 * `FLAG_PROXY_WORKERS=<workers>` and `PORT=0`, and waits until every worker listens. The CLI has
 * no bench protocol, so its port and workers are read from its own output and /proc, and its CPU
 * from /proc (10 ms ticks). The guard preloaded into it (bench/targets/cli-guard.ts) makes it
 * listen on 127.0.0.1 like the other targets, and exits the primary, killing its workers, when the
 * runner's IPC channel closes, so a crashed runner leaves nothing behind.
 */
export async function startCliTarget(options: CliStartOptions): Promise<CliTarget> {
  // A fresh temp dir: the CLI's default backup file goes there, so no run starts from a backup
  // another run left, and nothing is left in the shared /tmp.
  const tmp = mkdtempSync(path.join(options.scratch, 'cli-tmp-'));
  liveDirs.add(tmp);
  const env: NodeJS.ProcessEnv = { NODE_ENV: 'production' };
  for (const name of INHERITED) if (process.env[name] !== undefined) env[name] = process.env[name];
  Object.assign(env, options.variables, { PORT: '0', FLAG_PROXY_WORKERS: String(options.workers), TMPDIR: tmp });
  const nodeCommand = [process.execPath, ...options.nodeArgs, '--import', pathToFileURL(options.guard).href, options.entry];
  const [command, ...args] = options.cores === undefined ? nodeCommand : ['taskset', '-c', options.cores, ...nodeCommand];
  const child = spawn(command as string, args, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], env });
  live.add(child);
  const label = `flag-proxy CLI (FLAG_PROXY_WORKERS=${options.workers})`;
  let output = '';
  let exited: string | undefined;
  const exitPromise = new Promise<void>((resolve) => {
    child.on('exit', (code, signal) => {
      exited = `${label} exited (code ${code}, signal ${signal})`;
      live.delete(child);
      resolve();
    });
  });
  const workerPids: number[] = [];
  const startTimes = new Map<number, string>();
  const adopt = (pids: number[]): void => {
    for (const w of pids) {
      workerPids.push(w);
      livePids.add(w);
      startTimes.set(w, startTime(w));
    }
  };
  const cleanUp = (): void => {
    // Normally the workers are gone by now; a pid is killed only if it is still the same process.
    for (const w of workerPids) {
      if (startTime(w) === startTimes.get(w)) killPid(w);
      livePids.delete(w);
    }
    rmSync(tmp, { recursive: true, force: true });
    liveDirs.delete(tmp);
  };
  try {
    // Each server prints "... listening on http://localhost:<port>/proxy" once it listens.
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${label}: not every worker listened within 30 s; its output:\n${output}`)), 30_000);
      const onData = (chunk: Buffer): void => {
        output += chunk.toString('utf8');
        const ports = [...output.matchAll(/listening on https?:\/\/[^\s/]+:(\d+)/g)].map((m) => Number(m[1]));
        if (ports.length >= options.workers) {
          clearTimeout(timer);
          resolve(ports[0] as number);
        }
      };
      child.stdout?.on('data', onData);
      void exitPromise.then(() => {
        clearTimeout(timer);
        reject(new Error(`${exited}; its output:\n${output}`));
      });
    });
    // Keep draining its output (shutdown messages) so the pipe never fills.
    child.stdout?.on('data', () => {});
    const base = `http://127.0.0.1:${port}`;
    // Every worker ready: twice as many healthy answers in a row as there are workers.
    await waitForHealth(base, 30_000, 2 * options.workers);
    if (child.pid === undefined) throw new Error(`${label} has no pid`);
    const pid = child.pid;
    if (options.workers > 1) {
      adopt(childPids(pid));
      if (workerPids.length !== options.workers) throw new Error(`${label}: found ${workerPids.length} worker processes, expected ${options.workers}`);
    }
    const pids = [pid, ...workerPids];
    return {
      pid,
      workerPids,
      workers: options.workers,
      pids,
      base,
      // /proc counts whole 10 ms ticks: 100 ms samples, idle at one tick or less.
      idle: { intervalMs: 100, belowUs: 10_001 },
      async cpuTime() {
        if (exited) throw new Error(exited);
        return processesCpuTime(pids);
      },
      async stop() {
        if (!exited) {
          // The CLI's own graceful shutdown (SIGTERM stops every worker), bounded.
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
          await exitPromise;
          clearTimeout(timer);
        }
        cleanUp();
      },
    };
  } catch (error) {
    if (workerPids.length === 0 && child.pid !== undefined) adopt(childPids(child.pid));
    child.kill('SIGKILL');
    cleanUp();
    throw error;
  }
}

/** A process's start time (field 22 of /proc/<pid>/stat), to tell it from a later one with its pid; '' when gone. */
function startTime(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}
