/**
 * Polls with request tags as real frontend SDKs make them: `unleash-proxy-client` polling `/proxy`
 * by GET and Edge's `/api/frontend` by POST (`usePOSTrequests`), each sending back the ETag of its
 * last 200 (it ignores a 304's).
 *
 * - A launch scheduled ahead: until the instant every poll is a 304 answered without evaluating
 *   anything (the answer's tag names that instant); at it, with nothing changed upstream, the next
 *   poll gets the new body and the SDK turns the flag on; from then on its polls are 304s again.
 * - A flag change that leaves the SDK's answer as it was: one 200 (the same toggles, a new tag),
 *   then 304s without evaluating. Answered 304 by comparing bodies instead, the SDK would keep its
 *   stale tag, and every later poll would be evaluated in full.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENTS, InMemoryStorageProvider, UnleashClient } from 'unleash-proxy-client';
import { createFlagProxy, type FeatureDefinition, type FlagProxy, type FlagProxyOptions } from 'flag-proxy';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { CLIENT_KEY, evaluationCount, eventually, feature, launchAt, testProxyOptions } from '../support/harness.js';
import { serveLogged, type LoggedRequest } from './sdk-fixtures.js';

/** How far ahead the launch is when the test starts (ms): several of the SDKs' polls fit before it. */
const AHEAD_MS = 4000;
/** The SDKs' poll interval, in seconds (the SDK multiplies by 1000). */
const REFRESH_S = 0.25;

describe('a scheduled launch, seen by unleash-proxy-client polling with ETags', () => {
  let bed: PollingBed;
  let launch: number;
  beforeAll(async () => {
    launch = Date.now() + AHEAD_MS;
    bed = await startPollingBed([feature('everyone'), launchAt(launch, 'launch')]);
  });
  afterAll(() => bed?.close());

  it('is a 304 without evaluating until the launch, the new body at it, and 304s after', async () => {
    const { proxy, upstream } = bed;
    const clients = bed.clients();
    const polls = bed.polls;
    try {
      await eventually(() => {
        for (const c of clients) expect(c.sdk.client.isReady()).toBe(true);
      });
      for (const c of clients) expect(c.sdk.client.isEnabled('launch')).toBe(false);
      expect(Date.now()).toBeLessThan(launch - 1000);
      // Every poll from here to the launch is answered from its request alone.
      const evaluated = await evaluationCount(proxy);
      const before = clients.map((c) => polls(c).length);
      await new Promise((resolve) => setTimeout(resolve, launch - Date.now() - 200));
      expect(await evaluationCount(proxy)).toBe(evaluated);
      for (const [i, c] of clients.entries()) {
        const waiting = polls(c).slice(before[i]);
        expect(waiting.length, c.path).toBeGreaterThanOrEqual(3);
        for (const poll of waiting) {
          expect(poll.headers['if-none-match'], c.path).toBeTruthy();
          expect(poll.status, c.path).toBe(304);
        }
      }
      // At the launch, with the upstream unchanged, each SDK turns the flag on from its next poll.
      const flags = JSON.stringify(upstream.features());
      const atLaunch = clients.map((c) => polls(c).length);
      await eventually(() => {
        for (const c of clients) expect(c.sdk.client.isEnabled('launch'), c.path).toBe(true);
      }, 4000);
      expect(JSON.stringify(upstream.features())).toBe(flags);
      for (const [i, c] of clients.entries()) {
        const update = c.sdk.updates.find((at) => at >= launch);
        expect(update, c.path).toBeDefined();
        expect(polls(c).slice(atLaunch[i]).some((poll) => poll.status === 200), c.path).toBe(true);
      }
      // The answer now holds as long as the flag set: polls are 304s again.
      const after = clients.map((c) => polls(c).length);
      await eventually(() => {
        for (const [i, c] of clients.entries()) {
          expect(polls(c).slice(after[i]).filter((poll) => poll.status === 304).length, c.path).toBeGreaterThanOrEqual(2);
        }
      }, 3000);
    } finally {
      for (const c of clients) c.sdk.client.stop();
    }
  }, 20_000);
});

describe('a flag change that leaves the answer as it was, seen by unleash-proxy-client polling with ETags', () => {
  let bed: PollingBed;
  beforeAll(async () => {
    const forSomeoneElse = feature('for-someone-else', { strategies: [{ name: 'userWithId', parameters: { userIds: '99' }, constraints: [] }] as never });
    // No answer cache: it would answer a few thousand such clients from the ETags it keeps, and
    // this is about every client past those.
    bed = await startPollingBed([feature('everyone'), forSomeoneElse], { answerCacheBytes: 0 });
  });
  afterAll(() => bed?.close());

  it('is one 200 with the same toggles and a new tag, then 304s without evaluating', async () => {
    const { proxy, upstream } = bed;
    const clients = bed.clients();
    const polls = bed.polls;
    try {
      await eventually(() => {
        for (const c of clients) {
          expect(c.sdk.client.isReady()).toBe(true);
          expect(polls(c).some((poll) => poll.status === 304), c.path).toBe(true);
        }
      });
      const toggles = clients.map((c) => JSON.stringify(c.sdk.client.getAllToggles()));
      // A change upstream to a flag this user never gets: the answers stay as they were.
      upstream.setEnabled('for-someone-else', false);
      await eventually(() => expect(proxy.definition('for-someone-else')?.enabled).toBe(false));
      const changed = clients.map((c) => polls(c).length);
      // Each SDK's next poll misses its tag; within a few polls its ETag names the new flag set.
      await new Promise((resolve) => setTimeout(resolve, 6 * REFRESH_S * 1000));
      const evaluated = await evaluationCount(proxy);
      const settled = clients.map((c) => polls(c).length);
      await new Promise((resolve) => setTimeout(resolve, 6 * REFRESH_S * 1000));
      expect(await evaluationCount(proxy)).toBe(evaluated);
      for (const [i, c] of clients.entries()) {
        const since = polls(c).slice(changed[i]);
        expect(since.filter((poll) => poll.status === 200).length, c.path).toBeLessThanOrEqual(1);
        const later = polls(c).slice(settled[i]);
        expect(later.length, c.path).toBeGreaterThanOrEqual(3);
        for (const poll of later) expect(poll.status, c.path).toBe(304);
        expect(JSON.stringify(c.sdk.client.getAllToggles()), c.path).toBe(toggles[i]);
      }
    } finally {
      for (const c of clients) c.sdk.client.stop();
    }
  }, 20_000);
});

/** An SDK polling one route, as the tests drive it. */
interface PollingClient {
  path: string;
  method: string;
  sdk: { client: UnleashClient; updates: number[] };
}

/** An upstream, a proxy on it behind a server that logs every request, and the SDKs that poll it. */
interface PollingBed {
  upstream: TestFlagServer;
  proxy: FlagProxy;
  /** One SDK polling `/proxy` by GET and one polling `/api/frontend` by POST, both started. */
  clients(): PollingClient[];
  /** The requests of a client's route and method answered so far, oldest first. */
  polls(client: PollingClient): LoggedRequest[];
  close(): Promise<void>;
}

async function startPollingBed(features: FeatureDefinition[], options: Partial<FlagProxyOptions> = {}): Promise<PollingBed> {
  const upstream = await createTestFlagServer({ features });
  const proxy = createFlagProxy(testProxyOptions(upstream, options));
  await proxy.ready;
  const log: LoggedRequest[] = [];
  const server = await serveLogged('proxy', (req, res) => proxy(req, res, () => res.writeHead(404).end()), log);
  return {
    upstream,
    proxy,
    clients: () => [
      { path: '/proxy', method: 'GET', sdk: sdk(`${server.origin}/proxy`, false) },
      { path: '/api/frontend', method: 'POST', sdk: sdk(`${server.origin}/api/frontend`, true) },
    ],
    polls: (c) => log.filter((r) => r.path === c.path && r.method === c.method && r.status !== undefined),
    async close() {
      await server.close();
      await proxy.close();
      await upstream.close();
    },
  };
}

/** A started SDK with its own session, recording when it reported an update. */
function sdk(url: string, usePOSTrequests: boolean): { client: UnleashClient; updates: number[] } {
  const client = new UnleashClient({
    url,
    clientKey: CLIENT_KEY,
    appName: 'scheduled-launch',
    refreshInterval: REFRESH_S,
    metricsInterval: 60,
    disableMetrics: true,
    usePOSTrequests,
    storageProvider: new InMemoryStorageProvider(),
    context: { userId: '7' },
  });
  const updates: number[] = [];
  client.on(EVENTS.UPDATE, () => updates.push(Date.now()));
  void client.start();
  return { client, updates };
}
