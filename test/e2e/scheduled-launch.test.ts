/**
 * A launch scheduled ahead, as real frontend SDKs see it: `unleash-proxy-client` polling `/proxy`
 * by GET and Edge's `/api/frontend` by POST (`usePOSTrequests`), each sending back its last ETag.
 * Until the launch instant every poll is a 304 answered without evaluating anything (the answer's
 * tag names that instant); at it, with nothing changed upstream, the next poll gets the new body
 * and the SDK turns the flag on; from then on its polls are 304s again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENTS, InMemoryStorageProvider, UnleashClient } from 'unleash-proxy-client';
import { createFlagProxy, type FlagProxy } from 'flag-proxy';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { CLIENT_KEY, evaluationCount, eventually, feature, launchAt, testProxyOptions } from '../support/harness.js';
import { serveLogged, type LoggedRequest, type LoggedServer } from './sdk-fixtures.js';

/** How far ahead the launch is when the test starts (ms): several of the SDKs' polls fit before it. */
const AHEAD_MS = 4000;
/** The SDKs' poll interval, in seconds (the SDK multiplies by 1000). */
const REFRESH_S = 0.25;

describe('a scheduled launch, seen by unleash-proxy-client polling with ETags', () => {
  let upstream: TestFlagServer;
  let proxy: FlagProxy;
  let server: LoggedServer;
  const log: LoggedRequest[] = [];
  let launch: number;
  beforeAll(async () => {
    launch = Date.now() + AHEAD_MS;
    upstream = await createTestFlagServer({ features: [feature('everyone'), launchAt(launch, 'launch')] });
    proxy = createFlagProxy(testProxyOptions(upstream));
    await proxy.ready;
    server = await serveLogged('proxy', (req, res) => proxy(req, res, () => res.writeHead(404).end()), log);
  });
  afterAll(async () => {
    await server?.close();
    await proxy?.close();
    await upstream?.close();
  });

  it('is a 304 without evaluating until the launch, the new body at it, and 304s after', async () => {
    const clients = [
      { path: '/proxy', method: 'GET', sdk: sdk(`${server.origin}/proxy`, false) },
      { path: '/api/frontend', method: 'POST', sdk: sdk(`${server.origin}/api/frontend`, true) },
    ];
    const polls = (c: (typeof clients)[number]) => log.filter((r) => r.path === c.path && r.method === c.method && r.status !== undefined);
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
