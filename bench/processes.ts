/**
 * The runner side of target processes: spawn one (pinned to a core with taskset), talk to it over
 * IPC, read its memory from /proc, and make sure none outlives the runner.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { FromTarget, TargetConfig, ToTarget } from './protocol.js';
import type { TargetName } from './options.js';

export interface TargetProcess {
  readonly name: TargetName;
  readonly pid: number;
  /** `http://127.0.0.1:<port>` */
  readonly base: string;
  /** CPU time (user + system, all threads) the process has used so far, in µs. */
  cpuUs(): Promise<number>;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();

/** Kills every target still running (SIGKILL, by pid). Safe to call more than once. */
export function killAllTargets(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  live.clear();
}

/** True when taskset exists and there are at least two cores to split between runner and target. */
export function pinningAvailable(cores: number): { ok: boolean; reason?: string } {
  if (cores < 2) return { ok: false, reason: `only ${cores} core(s)` };
  const probe = spawnSync('taskset', ['-p', String(process.pid)], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) return { ok: false, reason: 'taskset (util-linux) is not available' };
  return { ok: true };
}

/** Pins this process (every thread) to one core. */
export function pinSelf(core: number): void {
  const result = spawnSync('taskset', ['-a', '-p', '-c', String(core), String(process.pid)], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`taskset could not pin the runner: ${result.stderr}`);
}

function waitForHealth(base: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = (): void => {
      const req = http.get(`${base}/proxy/health`, { agent: false }, (res) => {
        res.resume();
        if (res.statusCode === 200) return resolve();
        retry(`status ${res.statusCode}`);
      });
      req.on('error', (e) => retry(e.message));
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
      base,
      async cpuUs() {
        const answer = next('usage', 10_000);
        post({ type: 'usage' });
        return (await answer).cpuUs;
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
 * reset at the start, else the highest of samples taken every 50 ms.
 */
export function trackPeakMemory(pid: number): { stop(): number } {
  const exact = resetPeakMemory(pid);
  let sampled = readMemory(pid).rss;
  const timer = setInterval(() => {
    try {
      sampled = Math.max(sampled, readMemory(pid).rss);
    } catch {
      // The process is gone; the caller notices on its next request.
    }
  }, 50);
  return {
    stop() {
      clearInterval(timer);
      const now = readMemory(pid);
      return Math.max(sampled, now.rss, exact ? now.peak : 0);
    },
  };
}
