/**
 * A fleet of proxy processes sharing one Redis snapshot and one upstream: the fourth instance
 * starts while the upstream is down and becomes ready from Redis, answering like the others; once
 * the upstream is back, a flag change reaches all four within one refresh interval.
 */
import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FeatureDefinition } from 'flag-proxy';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { feature } from '../support/harness.js';
import { killAll, startCli, waitForHealth, type RunningProcess } from './processes.js';
import { redisServerAvailable, SKIP_MESSAGE, startRedisServer, type RedisServer } from './redis-server.js';

if (!redisServerAvailable) console.warn(SKIP_MESSAGE);

/** Milliseconds between upstream fetches of every proxy in the fleet. */
const REFRESH_MS = 800;
/**
 * What "within one refresh interval" allows on top: the fetch itself and this test's polling.
 * Less than an interval, so a pass still means every instance took the change from its first poll
 * after it.
 */
const SLACK_MS = 500;
const TOKEN = 'fleet-upstream-token';
const KEY = 'fleet-client-key';
const APP = 'fleet-app';

const FEATURES = [
  feature('fleet.everyone'),
  feature('fleet.rollout', {
    strategies: [{ name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'userId', groupId: 'fleet.rollout' }, constraints: [] }],
  }),
  feature('fleet.ab', {
    variants: [
      { name: 'blue', weight: 500, stickiness: 'userId', weightType: 'variable', payload: { type: 'string', value: 'b' } },
      { name: 'green', weight: 500, stickiness: 'userId', weightType: 'variable', payload: { type: 'string', value: 'g' } },
    ] as unknown as FeatureDefinition['variants'],
  }),
  feature('fleet.to-switch'),
];

interface Instance {
  id: string;
  process: RunningProcess;
  base: string;
}

/** What one instance answers for a set of contexts: the comparison key of "answers the same". */
async function answers(instance: Instance): Promise<string[]> {
  const out: string[] = [];
  for (let user = 1; user <= 12; user++) {
    const res = await fetch(`${instance.base}/proxy?userId=${user}`, { headers: { authorization: KEY } });
    expect(res.status).toBe(200);
    out.push(await res.text());
  }
  const res = await fetch(`${instance.base}/proxy`, {
    method: 'POST',
    headers: { authorization: KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ context: { userId: '5' }, toggles: ['fleet.ab', 'fleet.rollout', 'unknown'] }),
  });
  expect(res.status).toBe(200);
  out.push(await res.text());
  return out;
}

async function isOn(instance: Instance, name: string): Promise<boolean> {
  const res = await fetch(`${instance.base}/proxy?userId=1`, { headers: { authorization: KEY } });
  const body = (await res.json()) as { toggles: Array<{ name: string }> };
  return body.toggles.some((t) => t.name === name);
}

describe.skipIf(!redisServerAvailable)('a fleet sharing one Redis snapshot', () => {
  let redis: RedisServer | undefined;
  let upstream: TestFlagServer | undefined;
  let reader: ReturnType<typeof createClient> | undefined;
  const prefix = `fleet-${randomUUID().slice(0, 8)}`;
  const redisKey = `${prefix}:${APP}:v1`;
  const fleet: Instance[] = [];

  /** When the test first saw each upstream request (index into `upstream.requests`). */
  const seenAt: number[] = [];
  let watcher: NodeJS.Timeout | undefined;

  const envFor = (id: string): Record<string, string> => ({
    FLAG_URL: upstream!.url,
    FLAG_API_TOKEN: TOKEN,
    FLAG_PROXY_CLIENT_KEYS: KEY,
    FLAG_APP_NAME: APP,
    FLAG_INSTANCE_ID: id,
    FLAG_FETCH_INTERVAL: String(REFRESH_MS),
    FLAG_METRICS_INTERVAL: '0',
    FLAG_PROXY_REDIS_URL: redis!.url,
    FLAG_PROXY_REDIS_KEY_PREFIX: prefix,
  });

  const start = async (id: string): Promise<Instance> => {
    const process = startCli(envFor(id));
    const base = await process.base;
    return { id, process, base };
  };

  /** Times (as first seen) of the feature fetches of one instance from request index `from` on. */
  const fetchTimes = (id: string, from: number): number[] => {
    const times: number[] = [];
    upstream!.requests.forEach((r, i) => {
      if (i >= from && r.path === '/api/client/features' && r.headers['unleash-instanceid'] === id) times.push(seenAt[i]!);
    });
    return times;
  };

  beforeAll(async () => {
    redis = await startRedisServer();
    upstream = await createTestFlagServer({ clientTokens: [TOKEN], features: FEATURES });
    reader = createClient({ url: redis.url });
    await reader.connect();
    watcher = setInterval(() => {
      while (seenAt.length < upstream!.requests.length) seenAt.push(Date.now());
    }, 20);
  }, 30_000);

  afterAll(async () => {
    clearInterval(watcher);
    await killAll();
    await reader?.close().catch(() => undefined);
    await upstream?.close();
    await redis?.stop();
  }, 30_000);

  it('serves a fourth instance from Redis while the upstream is down, then spreads a change to all four', async () => {
    // Three instances, each connected to the upstream, each writing the snapshot.
    fleet.push(...(await Promise.all(['fleet-1', 'fleet-2', 'fleet-3'].map(start))));
    await Promise.all(fleet.map((i) => waitForHealth(i.base)));
    type Stored = { savedAt: string; snapshot: { features: Array<{ name: string; enabled?: boolean }> } };
    const readStored = async (): Promise<Stored | null> => JSON.parse((await reader!.get(redisKey)) ?? 'null') as Stored | null;
    // Ready is signalled before the write to Redis completes, so the first read may come early.
    await expect.poll(async () => (await readStored())?.snapshot.features.map((f) => f.name).sort()).toEqual(
      FEATURES.map((f) => f.name).sort(),
    );
    expect(Date.parse((await readStored())!.savedAt)).toBeGreaterThan(Date.now() - 60_000);
    const reference = await answers(fleet[0]!);
    expect(await answers(fleet[1]!)).toEqual(reference);

    // The upstream goes down; every running instance notices.
    const downFrom = upstream!.requests.length;
    upstream!.setFault({ status: 503 });
    await expect
      .poll(() => fleet.every((i) => fetchTimes(i.id, downFrom).length > 0), { timeout: 15_000, interval: 50 })
      .toBe(true);

    // A fourth instance starts: its fetch fails, yet it becomes ready from Redis.
    const fourth = await start('fleet-4');
    fleet.push(fourth);
    await waitForHealth(fourth.base);
    expect(fetchTimes('fleet-4', downFrom).length).toBeGreaterThan(0);
    for (const instance of fleet) expect(await answers(instance), instance.id).toEqual(reference);

    // The upstream returns. unleash-client backs off after failures (one more interval per failure,
    // undone one success at a time), so wait until every instance polls at its normal interval.
    const upFrom = upstream!.requests.length;
    const recoveredFrom = Date.now();
    upstream!.setFault(undefined);
    await expect
      .poll(
        () =>
          fleet.every((i) => {
            const times = fetchTimes(i.id, upFrom);
            return times.length >= 3 && times.at(-1)! - times.at(-2)! < REFRESH_MS * 1.5;
          }),
        { timeout: 45_000, interval: 100 },
      )
      .toBe(true);

    // A change upstream reaches all four within one refresh interval.
    const changedAt = Date.now();
    upstream!.setEnabled('fleet.to-switch', false);
    const latencies = await Promise.all(
      fleet.map(async (instance) => {
        while (await isOn(instance, 'fleet.to-switch')) {
          if (Date.now() - changedAt > 10 * REFRESH_MS) throw new Error(`${instance.id} never saw the change`);
          await new Promise((r) => setTimeout(r, 25));
        }
        return Date.now() - changedAt;
      }),
    );
    if (process.env.FLEET_VERBOSE) console.log(`fleet: change seen after ${latencies.join(", ")} ms; recovery took ${changedAt - recoveredFrom} ms`);
    expect(Math.max(...latencies), `latencies ${latencies.join(', ')} ms`).toBeLessThanOrEqual(REFRESH_MS + SLACK_MS);

    // The snapshot in Redis follows: the next instance to start cold gets the new flags.
    await expect
      .poll(async () => (await readStored())?.snapshot.features.find((f) => f.name === 'fleet.to-switch'))
      .toMatchObject({ enabled: false });

    // Graceful shutdown of the whole fleet.
    expect(await Promise.all(fleet.map((i) => i.process.stop()))).toEqual([0, 0, 0, 0]);
  }, 150_000);
});
