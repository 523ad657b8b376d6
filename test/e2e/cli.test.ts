/** The standalone CLI as a user meets it: a real process, configured only by environment variables. */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { feature } from '../support/harness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);

interface Cli {
  child: ChildProcess;
  output: () => string;
  base: Promise<string>;
  exited: Promise<number | null>;
}

/** Starts the CLI; afterEach kills it if it still runs. */
function startCli(env: Record<string, string>, args: string[] = [], nodeArgs: string[] = []): Cli {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'src/cli.ts', ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const base = new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/[^\s/]+:\d+\S*)\/proxy/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', () => reject(new Error(`CLI exited before listening:\n${output}`)));
  });
  base.catch(() => undefined);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const cli = { child, output: () => output, base, exited };
  running.push(cli);
  return cli;
}

const running: Cli[] = [];
let upstream: TestFlagServer | undefined;
afterEach(async () => {
  for (const cli of running.splice(0)) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
  await upstream?.close();
  upstream = undefined;
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitForHealth(base: string): Promise<number> {
  const started = Date.now();
  for (;;) {
    const res = await fetch(`${base}/proxy/health`).catch(() => undefined);
    if (res?.status === 200) return Date.now() - started;
    if (Date.now() - started > 10_000) throw new Error('not healthy within 10 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('flag-proxy CLI', () => {
  it('starts the embedded demo with no configuration, and every printed curl command works', async () => {
    const cli = startCli({});
    const base = await cli.base;
    await waitForHealth(base);
    await new Promise((r) => setTimeout(r, 100));
    expect(cli.output()).toContain('DEMO mode');
    const commands = cli
      .output()
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.startsWith('curl '));
    expect(commands.length).toBeGreaterThanOrEqual(4);
    for (const command of commands) {
      const { stdout } = await run('sh', ['-c', `${command} --silent --show-error --fail`]);
      expect(stdout.length, command).toBeGreaterThan(0);
    }
    const { stdout } = await run('sh', ['-c', `${commands.find((c) => c.includes('userId=1'))} --silent`]);
    expect(JSON.parse(stdout).toggles.map((t: { name: string }) => t.name)).toContain('demo.beta-testers');
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
  });

  it('proxies a flag server given by FLAG_URL, and flushes usage upstream on SIGTERM', async () => {
    upstream = await createTestFlagServer({ clientTokens: ['cli-upstream-token'], features: [feature('on')] });
    const cli = startCli({
      FLAG_URL: upstream.url,
      FLAG_API_TOKEN: 'cli-upstream-token',
      FLAG_PROXY_CLIENT_KEYS: 'cli-key',
      FLAG_METRICS_INTERVAL: '600000',
      PROXY_BASE_PATH: '/flags',
    });
    const base = await cli.base;
    expect(base.endsWith('/flags')).toBe(true);
    await waitForHealth(base);
    const res = await fetch(`${base}/proxy`, {
      method: 'POST',
      headers: { authorization: 'cli-key', 'content-type': 'application/json' },
      body: JSON.stringify({ toggles: ['on', 'on'] }),
    });
    expect((await res.json() as { toggles: unknown[] }).toggles).toHaveLength(2);
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
    expect(upstream.countsFor('on')).toMatchObject({ yes: 2, no: 0 });
    expect(cli.output()).not.toContain('cli-upstream-token');
  });

  it.each([
    [{ FLAG_FETCH_INTERVAL: 'abc' }, 'flag-proxy: Invalid option refreshInterval (FLAG_FETCH_INTERVAL): expected a non-negative integer, got "abc"'],
    [{ FLAG_URL: 'http://127.0.0.1:9/api/' }, 'flag-proxy: You must specify the flagApiToken (FLAG_API_TOKEN) option'],
    [{ PORT: 'eighty' }, 'flag-proxy: Invalid option port (PORT or PROXY_PORT): expected 0-65535, got "eighty"'],
  ])('fails at start with one clear line for %j', async (env, line) => {
    const cli = startCli(env as Record<string, string>);
    expect(await cli.exited).toBe(1);
    expect(cli.output().trim()).toBe(line);
  });

  describe('demo mode', () => {
    it.each([
      [{ FLAG_API_TOKEN: 'secret', FLAG_PROXY_CLIENT_KEYS: 'k1-long-enough' }, 'flag-proxy: You must specify the flagUrl (FLAG_URL) option'],
      [{ FLAG_PROXY_WORKERS: '2' }, 'flag-proxy: You must specify the flagUrl (FLAG_URL) option'],
      [
        { NODE_ENV: 'production' },
        'flag-proxy: You must specify the flagUrl (FLAG_URL) option; NODE_ENV is production, so the embedded demo does not start (--demo forces it)',
      ],
      [
        { NODE_ENV: 'production', UNLEASH_URL: 'https://u.example/api/', UNLEASH_API_TOKEN: 't', UNLEASH_PROXY_CLIENT_KEYS: 'k' },
        'flag-proxy: You must specify the flagUrl (FLAG_URL) option; @unleash/proxy variables are set: rename UNLEASH_URL to FLAG_URL, UNLEASH_API_TOKEN to FLAG_API_TOKEN, UNLEASH_PROXY_CLIENT_KEYS to FLAG_PROXY_CLIENT_KEYS',
      ],
      [
        { FLAG_URL: 'http://127.0.0.1:9/api/', UNLEASH_API_TOKEN: 't', UNLEASH_FETCH_INTERVAL: '1000' },
        'flag-proxy: You must specify the flagApiToken (FLAG_API_TOKEN) option; @unleash/proxy variables are set: rename UNLEASH_API_TOKEN to FLAG_API_TOKEN, UNLEASH_FETCH_INTERVAL to FLAG_FETCH_INTERVAL',
      ],
    ])('is off once anything is configured: %j exits 1 with one line', async (env, line) => {
      const cli = startCli(env as Record<string, string>);
      expect(await cli.exited).toBe(1);
      expect(cli.output().trim()).toBe(line);
    });

    it('is forced by --demo, in production too, keeping the operator\'s own client keys', async () => {
      const cli = startCli({ NODE_ENV: 'production', FLAG_PROXY_CLIENT_KEYS: 'own-key' }, ['--demo']);
      const base = await cli.base;
      await waitForHealth(base);
      expect(cli.output()).toContain('DEMO mode');
      expect(cli.output()).not.toContain('own-key');
      expect((await fetch(`${base}/proxy`, { headers: { authorization: 'own-key' } })).status).toBe(200);
      expect((await fetch(`${base}/proxy`, { headers: { authorization: 'demo-client-key' } })).status).toBe(401);
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
    });

    it.each([
      [['--demo'], { FLAG_URL: 'http://127.0.0.1:9/api/' }, 'flag-proxy: --demo runs the embedded demo flag server: unset FLAG_URL (and FLAG_ENV_*) to use it'],
      [['--dmeo'], {}, 'flag-proxy: unknown argument "--dmeo" (see flag-proxy --help)'],
    ])('refuses %j with %j in one line', async (args, env, line) => {
      const cli = startCli(env as Record<string, string>, args);
      expect(await cli.exited).toBe(1);
      expect(cli.output().trim()).toBe(line);
    });
  });

  describe('FLAG_PROXY_READY_TIMEOUT', () => {
    it('exits 1 with the upstream and its last failure when not ready in time', async () => {
      upstream = await createTestFlagServer({ clientTokens: ['right-token'], features: [feature('on')] });
      const cli = startCli({
        FLAG_URL: upstream.url.replace('http://', 'http://bob:hunter2pass@'),
        FLAG_API_TOKEN: 'wrong-token',
        FLAG_PROXY_CLIENT_KEYS: 'k',
        FLAG_FETCH_INTERVAL: '100',
        FLAG_PROXY_READY_TIMEOUT: '1000',
      });
      await cli.base;
      const started = Date.now();
      expect(await cli.exited).toBe(1);
      expect(Date.now() - started).toBeLessThan(5000);
      const line = cli.output().trim().split('\n').at(-1)!;
      expect(line).toMatch(/^flag-proxy: The flag proxy was not ready within 1000 ms: no flag set from http:\/\/\[redacted\]@127\.0\.0\.1:\d+\/api\/ yet \(last failure: .*responded 401/);
      // The whole log is the secrets work's (issue 20 B6); this line is ours.
      expect(line).not.toMatch(/hunter2pass|wrong-token/);
    });

    it('stops every worker and exits 1, instead of restarting them', async () => {
      upstream = await createTestFlagServer({ clientTokens: ['right-token'], features: [feature('on')] });
      const cli = startCli({
        FLAG_URL: upstream.url,
        FLAG_API_TOKEN: 'wrong-token',
        FLAG_PROXY_CLIENT_KEYS: 'k',
        FLAG_PROXY_WORKERS: '2',
        FLAG_PROXY_READY_TIMEOUT: '1500',
      });
      expect(await cli.exited).toBe(1);
      expect(cli.output()).toContain('not ready within 1500 ms');
      expect(cli.output()).not.toContain('starting another');
    }, 40_000);

    it('starts as before when the upstream is ready in time', async () => {
      upstream = await createTestFlagServer({ clientTokens: ['right-token'], features: [feature('on')] });
      const cli = startCli({ FLAG_URL: upstream.url, FLAG_API_TOKEN: 'right-token', FLAG_PROXY_CLIENT_KEYS: 'k', FLAG_PROXY_READY_TIMEOUT: '5000' });
      await waitForHealth(await cli.base);
      await new Promise((r) => setTimeout(r, 5500));
      expect(cli.child.exitCode).toBe(null);
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
    });

    it('refuses a value that is not a number of milliseconds, in one line', async () => {
      const cli = startCli({ FLAG_URL: 'http://127.0.0.1:9/api/', FLAG_API_TOKEN: 't', FLAG_PROXY_CLIENT_KEYS: 'k', FLAG_PROXY_READY_TIMEOUT: '10s' });
      expect(await cli.exited).toBe(1);
      expect(cli.output().trim()).toBe(
        'flag-proxy: Invalid option readyTimeout (FLAG_PROXY_READY_TIMEOUT): expected milliseconds as a non-negative integer, got "10s"',
      );
    });
  });

  describe('a full collection after each flag-set change', () => {
    // V8 traces a collection `gc()` asked for with the reason "testing"; nothing else in the CLI calls it.
    const collections = (output: string): number => output.match(/Mark-Compact.*testing/g)?.length ?? 0;
    const until = async (what: () => boolean, timeoutMs: number, output: () => string): Promise<void> => {
      for (let waited = 0; !what(); waited += 50) {
        if (waited > timeoutMs) throw new Error(`timed out; ${collections(output())} forced collections in:\n${output()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    /**
     * The CLI started with `--trace-gc` and no backup file (a set loaded from one, then the
     * upstream's, would be two changes), once healthy and its first collection traced.
     */
    const startCollecting = async (env: Record<string, string>): Promise<Cli> => {
      const cli = startCli({ ...env, FLAG_METRICS_INTERVAL: '600000', FLAG_PROXY_BACKUP: 'false' }, [], ['--trace-gc']);
      await waitForHealth(await cli.base);
      await until(() => collections(cli.output()) === 1, 5_000, cli.output);
      return cli;
    };

    it('runs once after the first flag set and once after each change, and not while nothing changes', async () => {
      upstream = await createTestFlagServer({ clientTokens: ['cli-upstream-token'], features: [feature('on')] });
      const cli = await startCollecting({
        FLAG_URL: upstream.url,
        FLAG_API_TOKEN: 'cli-upstream-token',
        FLAG_PROXY_CLIENT_KEYS: 'cli-key',
        FLAG_FETCH_INTERVAL: '200',
      });
      // Ten more fetches of the same set: no collection.
      await new Promise((r) => setTimeout(r, 2_000));
      expect(collections(cli.output())).toBe(1);
      upstream.upsertFeature(feature('later'));
      await until(() => collections(cli.output()) === 2, 5_000, cli.output);
      const res = await fetch(`${await cli.base}/proxy`, { headers: { authorization: 'cli-key' } });
      expect((await res.json() as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name).sort()).toEqual(['later', 'on']);
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
    }, 20_000);

    it('runs one collection for environments whose flag sets arrive together', async () => {
      upstream = await createTestFlagServer({ clientTokens: ['prod-token', 'staging-token'], features: [feature('on')] });
      // Healthy (see startCollecting) once every environment has its flags.
      const cli = await startCollecting({
        FLAG_URL: upstream.url,
        FLAG_ENV_PRODUCTION_API_TOKEN: 'prod-token',
        FLAG_ENV_PRODUCTION_CLIENT_KEYS: 'prod-key',
        FLAG_ENV_STAGING_API_TOKEN: 'staging-token',
        FLAG_ENV_STAGING_CLIENT_KEYS: 'staging-key',
      });
      await new Promise((r) => setTimeout(r, 1_000));
      expect(collections(cli.output())).toBe(1);
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
    }, 20_000);
  });

  describe('FLAG_PROXY_YOUNG_GENERATION_MB', () => {
    // The workload fixture runs inside the CLI's own process (loaded with --import) when sent
    // SIGUSR2, once the CLI answers, and prints the young generation's size: unchecked, V8 grows
    // it to 32 MiB under that load.
    const workload = path.join(root, 'test/fixtures/young-generation-workload.mjs');
    const youngGenerationUnderLoad = async (env: Record<string, string>): Promise<number> => {
      const cli = startCli({ NODE_OPTIONS: `--import=${workload}`, ...env }, ['--demo']);
      await waitForHealth(await cli.base);
      cli.child.kill('SIGUSR2');
      for (let waited = 0; waited < 20_000; waited += 50) {
        const match = /young generation: (\d+)/.exec(cli.output());
        if (match) {
          cli.child.kill('SIGTERM');
          expect(await cli.exited).toBe(0);
          return Number(match[1]);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`no young generation size printed:\n${cli.output()}`);
    };
    const MiB = 2 ** 20;

    it('lets the young generation grow to 8 MiB by default and no further, to the value given, and as Node would at 0', async () => {
      // Loading the CLI's modules (here through tsx) takes the young generation to a few MiB
      // before anything can hold it: a cap below that keeps what was reached.
      const [byDefault, sixteen, off] = await Promise.all([
        youngGenerationUnderLoad({}),
        youngGenerationUnderLoad({ FLAG_PROXY_YOUNG_GENERATION_MB: '16' }),
        youngGenerationUnderLoad({ FLAG_PROXY_YOUNG_GENERATION_MB: '0' }),
      ]);
      expect(off).toBeGreaterThan(16 * MiB);
      expect(sixteen).toBeGreaterThan(8 * MiB);
      expect(sixteen).toBeLessThanOrEqual(16 * MiB);
      expect(byDefault).toBeLessThanOrEqual(8 * MiB);
    }, 60_000);

    it.each(['-1', '16MB', '2000'])('refuses %j, in one line', async (value) => {
      const cli = startCli({ FLAG_PROXY_YOUNG_GENERATION_MB: value });
      expect(await cli.exited).toBe(1);
      expect(cli.output().trim()).toBe(
        `flag-proxy: Invalid option youngGenerationMb (FLAG_PROXY_YOUNG_GENERATION_MB): expected a whole number of MiB from 0 (as Node sets it) to 1024, got "${value}"`,
      );
    });
  });

  describe('npm start', () => {
    it.each(['SIGTERM', 'SIGINT'] as const)('prints its pid, and stops the server when npm itself is sent %s (no orphan left listening)', async (signal) => {
      const port = await new Promise<number>((resolve) => {
        const probe = net.createServer().listen(0, '127.0.0.1', () => {
          const { port: free } = probe.address() as AddressInfo;
          probe.close(() => resolve(free));
        });
      });
      // Its own process group, so that whatever npm leaves behind can be found and cleaned up.
      const npm = spawn('npm', ['start', '--silent'], {
        cwd: root,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port) },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let output = '';
      npm.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      npm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      try {
        await waitForHealth(`http://127.0.0.1:${port}`);
        const pid = Number(/flag-proxy \(pid (\d+)\) listening on/.exec(output)?.[1]);
        expect(pid, output).toBeGreaterThan(0);
        process.kill(npm.pid!, signal);
        const deadline = Date.now() + 5000;
        let open = true;
        while (open && Date.now() < deadline) {
          open = await fetch(`http://127.0.0.1:${port}/proxy/health`).then(
            () => true,
            () => false,
          );
          if (open) await new Promise((r) => setTimeout(r, 100));
        }
        expect(open, 'the server still answers after npm was stopped').toBe(false);
        expect(alive(pid)).toBe(false);
      } finally {
        try {
          process.kill(-npm.pid!, 'SIGKILL');
        } catch {
          // the group is gone: nothing was left behind
        }
      }
    }, 30_000);
  });

  describe('HOST', () => {
    // On Linux all of 127.0.0.0/8 is loopback: a server on every interface answers 127.0.0.2 too.
    const answers = (url: string): Promise<boolean> =>
      fetch(url).then(
        (res) => res.status === 200,
        () => false,
      );

    it.each([['HOST'], ['PROXY_HOST']])('%s=127.0.0.1 binds that address only', async (variable) => {
      const cli = startCli({ [variable]: '127.0.0.1' }, ['--demo']);
      const base = await cli.base;
      expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      await waitForHealth(base);
      expect(await answers(`${base.replace('127.0.0.1', '127.0.0.2')}/proxy/health`)).toBe(false);
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
    });

    it('binds every interface when unset, as before', async () => {
      const cli = startCli({}, ['--demo']);
      const base = await cli.base;
      expect(base).toMatch(/^http:\/\/localhost:\d+$/);
      await waitForHealth(base);
      if (process.platform === 'linux') expect(await answers(`${base.replace('localhost', '127.0.0.2')}/proxy/health`)).toBe(true);
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
    });

    it.each([
      [{ HOST: 'not a host' }, 'flag-proxy: Invalid option host (HOST or PROXY_HOST): expected an IP address or a host name, got "not a host"'],
      [{ HOST: '192.0.2.1' }, /^flag-proxy: cannot listen on 192\.0\.2\.1: the address is not one of this machine's \(set HOST\)$/],
    ])('refuses %j in one line', async (env, line) => {
      const cli = startCli(env as Record<string, string>, ['--demo']);
      expect(await cli.exited).toBe(1);
      if (typeof line === 'string') expect(cli.output().trim()).toBe(line);
      else expect(cli.output().trim()).toMatch(line);
    });
  });
});
