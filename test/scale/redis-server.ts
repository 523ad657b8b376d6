/**
 * A real `redis-server` (the Debian package) on a random loopback port, with persistence off, for
 * the tests that need one. `.ci/setup-redis.sh` installs it on CI.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The binary, from `REDIS_SERVER` or the PATH. */
const BINARY = process.env.REDIS_SERVER ?? 'redis-server';

/** True when `redis-server` can be run here. */
export const redisServerAvailable: boolean = spawnSync(BINARY, ['--version'], { stdio: 'ignore' }).status === 0;

// On CI the Redis tests must run, not skip: .ci/run installs redis-server, and a failed install
// has to show as failed tests.
if (!redisServerAvailable && process.env.CI) {
  throw new Error('redis-server is not installed but CI is set: run `bash .ci/setup-redis.sh` first.');
}

/** Why the Redis tests are skipped, printed once by each file that skips. */
export const SKIP_MESSAGE =
  'redis-server is not installed: the tests that need a real Redis are skipped. Install it with `bash .ci/setup-redis.sh` (Debian package redis-server).';

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** Stops the server (SIGKILL after 2 s) and removes its directory. Idempotent. */
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

async function startOnce(): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'flag-proxy-redis-'));
  const child = spawn(
    BINARY,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', ''],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
        await exited(child);
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    })();
    return stopped;
  };
  const deadline = Date.now() + 10_000;
  while (!output.includes('Ready to accept connections')) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server did not start on port ${port}:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return { url: `redis://127.0.0.1:${port}`, port, stop };
}

/** Starts a server; retries on another port if the chosen one was taken meanwhile. */
export async function startRedisServer(): Promise<RedisServer> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startOnce();
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}
