/**
 * The CLI as a child process, started from the sources with exactly the environment a test gives
 * it: for the operations, reliability and secrets tests alike.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (the CLI runs from it, so `src/cli.ts` and test fixtures resolve). */
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A CLI process started from the sources. */
export interface Cli {
  child: ChildProcess;
  output(): string;
  /** `http://localhost:<port><basePath>`, once it listens. */
  base: Promise<string>;
  exited: Promise<number | null>;
  stop(): Promise<number | null>;
}

/** Starts `src/cli.ts` with exactly `env` (plus PATH and HOME), on a free port. */
export function startCli(env: Record<string, string>, options: { tsconfig?: string } = {}): Cli {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: '0',
      ...(options.tsconfig ? { TSX_TSCONFIG_PATH: options.tsconfig } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const base = new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/localhost:\d+\S*)\/proxy/.exec(output);
      if (match) resolve(match[1]!.replace('localhost', '127.0.0.1'));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', () => reject(new Error(`CLI exited before listening:\n${output}`)));
  });
  base.catch(() => undefined);
  return {
    child,
    output: () => output,
    base,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Waits for `GET <base>/proxy/health` to answer 200. */
export async function waitForHealth(base: string, timeoutMs = 10_000): Promise<void> {
  const started = Date.now();
  for (;;) {
    const res = await fetch(`${base}/proxy/health`).catch(() => undefined);
    if (res?.status === 200) return;
    if (Date.now() - started > timeoutMs) throw new Error(`not healthy within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
