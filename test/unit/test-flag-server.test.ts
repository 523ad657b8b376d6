/**
 * The test flag server, as a user's test drives it: flags written with string operators and
 * without their empty parts are served in full, and a busy port is an error that names it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isFlagProxyError } from 'flag-proxy';
import { createTestFlagServer, flag, type TestFlagServer } from 'flag-proxy/testing';

const started: TestFlagServer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((server) => server.close()));
});

async function start(...args: Parameters<typeof createTestFlagServer>): Promise<TestFlagServer> {
  const server = await createTestFlagServer(...args);
  started.push(server);
  return server;
}

async function served(server: TestFlagServer): Promise<{ features: unknown[]; segments: unknown[] }> {
  const res = await fetch(`${server.url}client/features`, { headers: { authorization: server.token } });
  expect(res.status).toBe(200);
  return (await res.json()) as { features: unknown[]; segments: unknown[] };
}

describe('createTestFlagServer flag definitions', () => {
  it('serves a flag built with flag() on for everyone, in full', async () => {
    const server = await start({ features: [flag('on'), flag('off', { enabled: false })] });
    expect((await served(server)).features).toEqual([
      { name: 'on', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [] }] },
      { name: 'off', enabled: false, strategies: [{ name: 'default', parameters: {}, constraints: [] }] },
    ]);
  });

  it('fills in what a plain definition leaves out: parameters, constraints, values, inverted, weights', async () => {
    const server = await start({
      features: [
        {
          name: 'for-alice',
          strategies: [{ name: 'flexibleRollout', parameters: { rollout: '100' }, constraints: [{ contextName: 'userId', operator: 'IN', values: ['alice'] }] }],
          variants: [{ name: 'blue' }, { name: 'green', weight: 200 }, { name: 'red' }],
        },
      ],
      segments: [{ id: 1, constraints: [{ contextName: 'region', operator: 'STR_CONTAINS', values: ['eu'], caseInsensitive: true }] }],
    });
    const answer = await served(server);
    expect(answer.features).toEqual([
      {
        name: 'for-alice',
        enabled: true,
        strategies: [
          { name: 'flexibleRollout', parameters: { rollout: '100' }, constraints: [{ contextName: 'userId', operator: 'IN', values: ['alice'], inverted: false }] },
        ],
        variants: [
          { name: 'blue', weight: 400 },
          { name: 'green', weight: 200 },
          { name: 'red', weight: 400 },
        ],
      },
    ]);
    expect(answer.segments).toEqual([{ id: 1, constraints: [{ contextName: 'region', operator: 'STR_CONTAINS', values: ['eu'], caseInsensitive: true, inverted: false }] }]);
  });

  it('keeps what a definition gives, even a malformed one sent on purpose', async () => {
    const server = await start();
    server.upsertFeature({ name: 'odd', enabled: false, strategies: 'not a list' as never });
    server.upsertFeature({ name: 'none', strategies: [] });
    expect((await served(server)).features).toEqual([
      { name: 'odd', enabled: false, strategies: 'not a list' },
      { name: 'none', enabled: true, strategies: [] },
    ]);
  });
});

describe('createTestFlagServer({ port })', () => {
  it('rejects with the port in the message when the port is in use', async () => {
    const first = await start();
    const port = Number(new URL(first.origin).port);
    const error = await createTestFlagServer({ port }).then(
      (server) => {
        started.push(server);
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(isFlagProxyError(error) && error.code).toBe('INVALID_OPTION');
    expect((error as Error).message).toContain(`127.0.0.1:${port}`);
    expect((error as Error).message).toContain('in use');
    expect(((error as Error).cause as NodeJS.ErrnoException | undefined)?.code).toBe('EADDRINUSE');
    // The first server still answers.
    expect((await served(first)).features).toEqual([]);
  });

  it('listens on the port it is given when it is free', async () => {
    const probe = await start();
    const port = Number(new URL(probe.origin).port);
    await probe.close();
    started.splice(0);
    const server = await start({ port });
    expect(server.origin).toBe(`http://127.0.0.1:${port}`);
  });
});
