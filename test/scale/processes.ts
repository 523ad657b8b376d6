/**
 * Runs the real CLI (or an example) as a child process, as a user or an orchestrator would, and
 * keeps track of every process started so a test can always stop them, even when it fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';

import { root } from '../support/cli.js';

export { root };

export interface RunningProcess {
  child: ChildProcess;
  output(): string;
  /** The `http://localhost:<port><basePath>` of the first "listening on" line. */
  base: Promise<string>;
  exited: Promise<number | null>;
  /** Resolves when `pattern` appears in the output (or rejects after `timeoutMs`). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
}

const running = new Set<RunningProcess>();

/** Starts `node --import tsx <script>` in the repository with exactly `env` (plus PATH and HOME). */
export function startProcess(script: string, env: Record<string, string>): RunningProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer): void => {
    output += chunk.toString();
    for (const listener of [...listeners]) listener();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

  const waitFor = (pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> =>
    new Promise((resolve, reject) => {
      const check = (): boolean => {
        const match = pattern.exec(output);
        if (match === null) return false;
        cleanup();
        resolve(match);
        return true;
      };
      const onExit = (): void => {
        if (check()) return;
        cleanup();
        reject(new Error(`process exited before printing ${pattern}:\n${output}`));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`${pattern} not printed within ${timeoutMs} ms:\n${output}`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        listeners.delete(listener);
        child.off('exit', onExit);
      };
      const listener = (): void => void check();
      listeners.add(listener);
      child.once('exit', onExit);
      check();
    });

  const base = waitFor(/listening on (http:\/\/localhost:\d+\S*)\/proxy/).then((m) => m[1]!);
  base.catch(() => undefined);

  const proc: RunningProcess = {
    child,
    output: () => output,
    base,
    exited,
    waitFor,
    async stop(graceMs = 15_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        const code = await exited;
        clearTimeout(timer);
        return code;
      }
      return child.exitCode;
    },
  };
  running.add(proc);
  void exited.then(() => running.delete(proc));
  return proc;
}

/** Starts the CLI with `env` and `PORT=0`. */
export function startCli(env: Record<string, string>): RunningProcess {
  return startProcess('src/cli.ts', { PORT: '0', ...env });
}

/** Kills every process still running (for `afterEach`/`afterAll`). */
export async function killAll(): Promise<void> {
  await Promise.all(
    [...running].map(async (p) => {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await p.exited;
    }),
  );
}

/** Waits until `GET <base>/proxy/health` answers 200. */
export async function waitForHealth(base: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await fetch(`${base}/proxy/health`).catch(() => undefined);
    if (res?.status === 200) return;
    if (Date.now() > deadline) throw new Error(`${base} not healthy within ${timeoutMs} ms (last status ${res?.status})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
