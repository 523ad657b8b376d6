import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEventsCommand } from '../../src/admin-events/cli.js';
import { ADMIN_TOKEN, CLIENT_TOKEN, closedPortUrl, startLogServer } from './helpers.js';

type LogServer = Awaited<ReturnType<typeof startLogServer>>;

async function run(argv: string[], env: Record<string, string | undefined>) {
  let out = '';
  let err = '';
  const code = await runEventsCommand(argv, env, { write: (s) => void (out += s) }, { write: (s) => void (err += s) });
  return { code, out, err };
}

describe('flag-proxy events', () => {
  let server: LogServer;
  let env: Record<string, string | undefined>;

  beforeAll(async () => {
    server = await startLogServer();
    for (let i = 0; i < 60; i++) {
      server.log.record({ type: 'feature-updated', featureName: 'checkout', project: 'shop', environment: 'production' });
    }
    server.log.record({ type: 'tag-created', createdBy: 'ann\u001b[31m' });
    env = { FLAG_URL: `${server.url}/api/`, FLAG_ADMIN_TOKEN: ADMIN_TOKEN };
  });
  afterAll(() => server.close());

  it('prints an aligned table with a header, newest first, and a footer naming the cap', async () => {
    const { code, out, err } = await run(['--project', 'shop'], env);
    expect(code).toBe(0);
    expect(err).toBe('');
    const lines = out.trimEnd().split('\n');
    const [header, ...rest] = lines;
    const rows = rest.slice(0, -1);
    expect(header!.split(/\s+/).filter(Boolean)).toEqual([
      'id',
      'createdAt',
      'type',
      'featureName',
      'project',
      'environment',
      'createdBy',
    ]);
    expect(rows).toHaveLength(50);
    // Every column starts at the same offset on every line.
    for (const column of ['createdAt', 'type', 'featureName', 'project', 'environment', 'createdBy']) {
      const at = header!.indexOf(column);
      for (const row of rows) expect(row[at - 1]).toBe(' ');
      for (const row of rows) expect(row[at]).not.toBe(' ');
    }
    expect(rows[0]).toMatch(/^\s*60\s+\S+Z\s+feature-updated\s+checkout\s+shop\s+production\s+test-admin$/);
    expect(lines.at(-1)).toBe('50 of 60 events shown (the flag server caps this feed); add --all for the full history.');
  });

  it('prints - for missing values and neutralises control characters', async () => {
    const { code, out } = await run([], env);
    expect(code).toBe(0);
    const row = out.split('\n')[1]!;
    expect(row).toMatch(/^\s*61\s+\S+\s+tag-created\s+-\s+-\s+-\s+ann \[31m$/);
    expect(out).not.toContain('\u001b');
  });

  it('prints JSON with --json, all events with --all', async () => {
    const { code, out } = await run(['events', '--project=shop', '--all', '--json'], env);
    expect(code).toBe(0);
    const body = JSON.parse(out);
    expect(body.events).toHaveLength(60);
    expect(body.totalEvents).toBe(60);
  });

  it('lists one toggle with --toggle', async () => {
    const { code, out } = await run(['--toggle', 'checkout', '--json'], env);
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ toggleName: 'checkout', totalEvents: 60 });
  });

  it('says so when there are no events', async () => {
    const { code, out } = await run(['--toggle', 'nothing'], env);
    expect(code).toBe(0);
    expect(out).toBe('No events.\n');
  });

  it('prints usage with --help', async () => {
    const { code, out } = await run(['--help'], env);
    expect(code).toBe(0);
    expect(out).toContain('Usage: flag-proxy events');
    expect(out).toContain('FLAG_ADMIN_TOKEN');
  });

  it.each([
    [['--nope'], /Unknown option '--nope'/],
    [['stray'], /stray/],
    [['--project'], /--project/],
    [['--project', 'a', '--toggle', 'b'], /either --project or --toggle/],
    [['--toggle='], /--toggle needs a non-empty value/],
  ])('exits 2 with a one-line message for bad flags %j', async (argv, message) => {
    const { code, out, err } = await run(argv, env);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(message);
    expect(err.startsWith('flag-proxy events: ')).toBe(true);
    expect(err.trimEnd().split('\n')).toHaveLength(1);
  });

  it('exits 2 when FLAG_URL or FLAG_ADMIN_TOKEN is missing or FLAG_URL is invalid', async () => {
    expect((await run([], { FLAG_ADMIN_TOKEN: ADMIN_TOKEN })).err).toMatch(/FLAG_URL is not set/);
    expect((await run([], { FLAG_URL: server.url })).err).toMatch(/FLAG_ADMIN_TOKEN is not set/);
    const bad = await run([], { FLAG_URL: 'not a url', FLAG_ADMIN_TOKEN: ADMIN_TOKEN });
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/FLAG_URL/);
  });

  it('exits 1 with an ADMIN hint and no token when the token is a client token', async () => {
    const { code, err } = await run([], { FLAG_URL: server.url, FLAG_ADMIN_TOKEN: CLIENT_TOKEN });
    expect(code).toBe(1);
    expect(err).toMatch(/^flag-proxy events: .*ADMIN token/);
    expect(err).not.toContain(CLIENT_TOKEN);
    expect(err.trimEnd().split('\n')).toHaveLength(1);
  });

  it('exits 1 when the flag server cannot be reached', async () => {
    const { code, err } = await run([], { FLAG_URL: await closedPortUrl(), FLAG_ADMIN_TOKEN: ADMIN_TOKEN });
    expect(code).toBe(1);
    expect(err).toMatch(/Could not reach the flag server/);
    expect(err).not.toContain(ADMIN_TOKEN);
  });
});
