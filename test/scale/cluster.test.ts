/**
 * The CLI as a fleet operator runs it: several worker processes (`FLAG_PROXY_WORKERS`), several
 * environments (`FLAG_ENV_<NAME>_*`), and the cluster example.
 */
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { feature } from '../support/harness.js';
import { killAll, startCli, startProcess, waitForHealth } from './processes.js';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

let upstream: TestFlagServer | undefined;
let staging: TestFlagServer | undefined;
beforeAll(async () => {
  upstream = await createTestFlagServer({ clientTokens: ['cluster-token'], features: [feature('on'), feature('prod-only')] });
  staging = await createTestFlagServer({ clientTokens: ['staging-token'], features: [feature('on'), feature('staging-only')] });
});
afterEach(() => killAll());

/** The single-environment variables: the production upstream and its token. */
const single = (): Record<string, string> => ({ FLAG_URL: upstream!.url, FLAG_API_TOKEN: 'cluster-token' });
/** One environment, `production`, on the shared upstream with the key `prod-key`. */
const PRODUCTION = { FLAG_ENV_PRODUCTION_API_TOKEN: 'cluster-token', FLAG_ENV_PRODUCTION_CLIENT_KEYS: 'prod-key' };
afterAll(async () => {
  await killAll();
  await upstream?.close();
  await staging?.close();
});

/**
 * Two workers on the production upstream, neither refetching nor reporting during a test and
 * without a backup file (a worker started later would otherwise have its flags from there at
 * once), both listening and healthy: the CLI, their base URL and the first worker's pid.
 */
async function twoServingWorkers(extra: Record<string, string> = {}) {
  const cli = startCli({
    ...single(),
    FLAG_PROXY_CLIENT_KEYS: 'cluster-key',
    FLAG_PROXY_WORKERS: '2',
    FLAG_FETCH_INTERVAL: '600000',
    FLAG_METRICS_INTERVAL: '600000',
    FLAG_PROXY_BACKUP: 'false',
    ...extra,
  });
  const line = /worker (\d+) \(pid (\d+)\) listening on (\S+)\/proxy/g;
  await cli.waitFor(new RegExp(`(${line.source}[\\s\\S]*){2}`));
  const listening = [...cli.output().matchAll(line)];
  const base = listening[0]![3]!;
  await waitForHealth(base);
  return { cli, base, firstPid: Number(listening[0]![2]) };
}

describe('FLAG_PROXY_WORKERS', () => {
  it('runs N workers on one port, replaces a dead one, and stops them all gracefully on SIGTERM', async () => {
    const cli = startCli({ ...single(), FLAG_PROXY_CLIENT_KEYS: 'cluster-key', FLAG_PROXY_WORKERS: '2', FLAG_METRICS_INTERVAL: '600000' });
    await cli.waitFor(/primary \(pid \d+\) starting 2 workers/);
    const line = /worker (\d+) \(pid (\d+)\) listening on (\S+)\/proxy/g;
    await cli.waitFor(new RegExp(`(${line.source}[\\s\\S]*){2}`));
    const listening = [...cli.output().matchAll(line)];
    const pids = listening.map((m) => Number(m[2]));
    expect(new Set(pids).size).toBe(2);
    expect(new Set(listening.map((m) => m[3])).size).toBe(1);
    const base = listening[0]![3]!;
    await waitForHealth(base);

    // Every request is answered by one of the workers, whichever it is.
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${base}/proxy`, {
        method: 'POST',
        headers: { authorization: 'cluster-key', 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ toggles: ['on'] }),
      });
      expect(res.status).toBe(200);
    }

    // A worker dies: the primary starts another one on the same port.
    process.kill(pids[0]!, 'SIGKILL');
    const replaced = await cli.waitFor(/worker 3 \(pid (\d+)\) listening on (\S+)\/proxy/);
    expect(cli.output()).toMatch(new RegExp(`worker \\d+ \\(pid ${pids[0]}\\) exited with SIGKILL; starting another`));
    expect(replaced[2]).toBe(base);
    await waitForHealth(base);

    // SIGTERM to the primary: each worker finishes, reports its usage upstream, and exits; then the primary.
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
    expect(alive(pids[1]!)).toBe(false);
    expect(alive(Number(replaced[1]))).toBe(false);
    // Six lookups, minus those counted by the worker that was killed before it could report.
    expect(upstream!.countsFor('on').yes).toBeGreaterThan(0);
    expect(upstream!.countsFor('on').yes).toBeLessThanOrEqual(6);
    expect(cli.output()).not.toContain('cluster-token');
  }, 90_000);

  it('lets a replacement worker take connections only once it has flags, while the others serve', async () => {
    const { cli, base, firstPid } = await twoServingWorkers();
    const statuses = async (): Promise<number[]> => {
      const all: number[] = [];
      // A connection each: the primary deals connections round-robin to the workers that listen.
      for (let i = 0; i < 12; i++) {
        const res = await fetch(`${base}/proxy`, { headers: { authorization: 'cluster-key', connection: 'close' } });
        all.push(res.status);
        await res.arrayBuffer();
      }
      return all;
    };
    try {
      // The upstream hangs: a worker started now cannot get its flags.
      upstream!.setFault({ hang: true, routes: 'features' });
      process.kill(firstPid, 'SIGKILL');
      await cli.waitFor(/worker 3 \(pid \d+\) waits for its flags before it listens/);
      // Every request reaches the worker that has flags, none the one still waiting (503 before).
      expect(await statuses()).toEqual(Array(12).fill(200));
      expect(cli.output()).not.toMatch(/worker 3 \(pid \d+\) listening/);
    } finally {
      upstream!.setFault(undefined);
    }
    // Once it has its flags it listens, and every answer is still a 200.
    await cli.waitFor(/worker 3 \(pid \d+\) listening on/);
    expect(await statuses()).toEqual(Array(12).fill(200));
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
  }, 90_000);

  it('keeps serving when a replacement is not ready in time (FLAG_PROXY_READY_TIMEOUT), and tries another', async () => {
    const { cli, base, firstPid } = await twoServingWorkers({ FLAG_PROXY_READY_TIMEOUT: '1500' });
    try {
      upstream!.setFault({ hang: true, routes: 'features' });
      process.kill(firstPid, 'SIGKILL');
      // The replacement gives up after 1.5 s; the primary starts another instead of stopping all.
      await cli.waitFor(/worker 3 was not ready in time \(FLAG_PROXY_READY_TIMEOUT\) while another serves; starting another/);
      await cli.waitFor(/worker 4 \(pid \d+\) waits for its flags before it listens/);
      const res = await fetch(`${base}/proxy`, { headers: { authorization: 'cluster-key', connection: 'close' } });
      expect(res.status).toBe(200);
      expect(cli.output()).not.toContain('stopping');
    } finally {
      upstream!.setFault(undefined);
    }
    // Once the upstream answers, a replacement gets its flags and listens.
    await cli.waitFor(/worker (?:[4-9]|\d{2,}) \(pid \d+\) listening on/);
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
  }, 90_000);

  it('waits twice as long before each further replacement that is not ready in time, while another serves', async () => {
    const { cli, firstPid } = await twoServingWorkers({ FLAG_PROXY_READY_TIMEOUT: '500' });
    try {
      upstream!.setFault({ hang: true, routes: 'features' });
      process.kill(firstPid, 'SIGKILL');
      // Retried forever while the other serves, but no longer once a second: 1 s, 2 s, 4 s, ...
      await cli.waitFor(/worker 3 was not ready in time \(FLAG_PROXY_READY_TIMEOUT\) while another serves; starting another in 1 s/);
      await cli.waitFor(/worker 4 was not ready in time \(FLAG_PROXY_READY_TIMEOUT\) while another serves; starting another in 2 s/);
      await cli.waitFor(/worker 5 was not ready in time \(FLAG_PROXY_READY_TIMEOUT\) while another serves; starting another in 4 s/);
      expect(cli.output()).not.toContain('stopping');
    } finally {
      upstream!.setFault(undefined);
    }
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
  }, 90_000);

  it.each([
    [{ FLAG_PROXY_WORKERS: '0' }, 'flag-proxy: Invalid option workers (FLAG_PROXY_WORKERS): expected a positive integer or "auto", got "0"'],
    [{ FLAG_PROXY_WORKERS: '2', FLAG_URL: 'http://127.0.0.1:9/api/' }, 'flag-proxy: You must specify the flagApiToken (FLAG_API_TOKEN) option'],
  ])('fails before forking, with one line, for %j', async (env, line) => {
    const cli = startCli(env as Record<string, string>);
    expect(await cli.exited).toBe(1);
    expect(cli.output().trim()).toBe(line);
  }, 30_000);

  // glibc reads MALLOC_ARENA_MAX when a process starts: the primary sets it for the workers it forks.
  const environOf = (pid: number): Record<string, string> =>
    Object.fromEntries(
      readFileSync(`/proc/${pid}/environ`, 'utf8')
        .split('\0')
        .filter((pair) => pair.includes('='))
        .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
    );

  it.runIf(process.platform === 'linux')('starts each worker with one malloc arena (MALLOC_ARENA_MAX=1)', async () => {
    const { cli, firstPid } = await twoServingWorkers();
    expect(environOf(firstPid).MALLOC_ARENA_MAX).toBe('1');
    expect(environOf(cli.child.pid!).MALLOC_ARENA_MAX).toBeUndefined();
    expect(await cli.stop()).toBe(0);
  }, 30_000);

  it.runIf(process.platform === 'linux')("keeps the operator's MALLOC_ARENA_MAX for the workers", async () => {
    const { cli, firstPid } = await twoServingWorkers({ MALLOC_ARENA_MAX: '4' });
    expect(environOf(firstPid).MALLOC_ARENA_MAX).toBe('4');
    expect(await cli.stop()).toBe(0);
  }, 30_000);
});

describe('FLAG_ENV_<NAME>_* in the CLI', () => {
  it('serves each environment to its own keys', async () => {
    const cli = startCli({
      FLAG_URL: upstream!.url,
      FLAG_METRICS_INTERVAL: '0',
      ...PRODUCTION,
      FLAG_ENV_STAGING_API_TOKEN: 'staging-token',
      FLAG_ENV_STAGING_CLIENT_KEYS: 'staging-key',
      FLAG_ENV_STAGING_URL: staging!.url,
    });
    const base = await cli.base;
    await cli.waitFor(/serving environments: production, staging/);
    await waitForHealth(base);
    const names = async (key: string): Promise<string[]> => {
      const res = await fetch(`${base}/proxy`, { headers: { authorization: key } });
      return ((await res.json()) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name).sort();
    };
    expect(await names('prod-key')).toEqual(['on', 'prod-only']);
    expect(await names('staging-key')).toEqual(['on', 'staging-only']);
    expect((await fetch(`${base}/proxy`, { headers: { authorization: 'cluster-token' } })).status).toBe(401);
    expect(await cli.stop()).toBe(0);
    expect(cli.output()).not.toMatch(/cluster-token|staging-token/);
  }, 60_000);

  it('refuses FLAG_API_TOKEN beside the environments, with one line', async () => {
    const cli = startCli({ ...single(), ...PRODUCTION });
    expect(await cli.exited).toBe(1);
    expect(cli.output().trim()).toBe(
      'flag-proxy: Invalid variable FLAG_API_TOKEN: not used when environments are configured with FLAG_ENV_<NAME>_* variables; remove it',
    );
  }, 30_000);
});

describe('examples/cluster', () => {
  it('serves from two workers and exits cleanly on SIGTERM', async () => {
    const example = startProcess('examples/cluster/server.ts', {
      ...single(),
      FLAG_PROXY_CLIENT_KEYS: 'example-key',
      FLAG_METRICS_INTERVAL: '0',
      WORKERS: '2',
      PORT: '0',
    });
    const both = await example.waitFor(/listening on (\S+)\/proxy[\s\S]*listening on (\S+)\/proxy/);
    expect(both[2]).toBe(both[1]);
    await waitForHealth(both[1]!);
    const res = await fetch(`${both[1]}/proxy`, { headers: { authorization: 'example-key' } });
    expect(((await res.json()) as { toggles: unknown[] }).toggles).toHaveLength(2);
    expect(await example.stop()).toBe(0);
  }, 60_000);
});
