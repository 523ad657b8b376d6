/** The standalone CLI as a user meets it: a real process, configured only by environment variables. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { startCli, type Cli } from '../support/cli.js';
import { feature } from '../support/harness.js';

const run = promisify(execFile);

const running: Cli[] = [];
let upstream: TestFlagServer | undefined;
afterEach(async () => {
  for (const cli of running.splice(0)) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
  await upstream?.close();
  upstream = undefined;
});

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
    running.push(cli);
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
    running.push(cli);
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
    running.push(cli);
    expect(await cli.exited).toBe(1);
    expect(cli.output().trim()).toBe(line);
  });
});
