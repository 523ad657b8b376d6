/**
 * Issue 5, item 5: shutdown under load, with SDK-style clients (one keep-alive connection each)
 * posting lookups by name and frontend usage reports. In-flight requests complete; new ones are
 * refused at the connection (never a hang, never a 5xx); and the usage the clients were told was
 * accepted (200) equals what the upstream received — zero lost, zero doubled.
 * Programmatic: the host stops its server first, then calls close(). CLI: SIGTERM.
 * What goes wrong when close() is called while the server still accepts is known-bugs BUG-3.
 */
import http from 'node:http';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createFlagProxy, type FeatureDefinition } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer } from 'flag-proxy/testing';
import { root, startCli, waitForHealth } from '../support/cli.js';
import { readStream } from '../support/ofrep.js';
import { feature, quiet, sdkLoad, send, silentLogger, sleep, waitUntil, type LoadOutcome, type Tally } from './helpers.js';

const run = promisify(execFile);
const FEATURES: FeatureDefinition[] = [feature('on'), feature('off', { enabled: false })];
/** Connection-level refusals a client may see once the server stops accepting. */
const REFUSED = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE']);

function expectCleanShutdown(outcomes: LoadOutcome[], stoppedAt: number, inFlightSeenByClients = true): void {
  expect(outcomes.length).toBeGreaterThan(20);
  for (const o of outcomes) {
    if (o.error === undefined) expect(o.status, JSON.stringify(o)).toBe(200);
    else expect(REFUSED.has(o.error), JSON.stringify(o)).toBe(true);
    // Never a hang: every request settled well within the client timeout.
    expect(o.end - o.start, JSON.stringify(o)).toBeLessThan(3000);
  }
  // Requests that were being handled when shutdown began finished with 200.
  if (inFlightSeenByClients) {
    const around = outcomes.filter((o) => o.start < stoppedAt && o.end > stoppedAt);
    expect(around.filter((o) => o.status === 200).length, JSON.stringify(around.map((o) => ({ ...o, start: o.start - stoppedAt, end: o.end - stoppedAt })))).toBeGreaterThan(0);
  }
  // And after it, connections were refused.
  expect(outcomes.some((o) => o.error === 'ECONNREFUSED')).toBe(true);
}

function expectNoLostCounts(tally: Tally, received: (name: string) => { yes: number; no: number }): void {
  expect(tally.on?.yes).toBeGreaterThan(0);
  for (const name of ['on', 'off']) expect({ name, ...received(name) }).toEqual({ name, ...tally[name], variants: {} });
}

describe.concurrent('shutdown under load', () => {
  it('programmatic: server.close(), then proxy.close() — in-flight complete, new refused, zero lost counts', async () => {
    const upstream = await createTestFlagServer({ features: FEATURES });
    const proxy = createFlagProxy({
      flagUrl: upstream.url,
      flagApiToken: upstream.token,
      clientKeys: ['sdk-key'],
      storageProvider: createMemoryStorageProvider(),
      refreshInterval: 100,
      metricsInterval: 60_000,
      logger: silentLogger(),
      // 30 ms per lookup, so requests are in flight when shutdown begins.
      expCustomEnrichers: [async (context) => (await sleep(context.userId === 'slow' ? 30 : 0), context)],
    });
    // A host that drains properly: once stopping, every answer closes its keep-alive connection.
    let stopping = false;
    const active = new Set<http.ServerResponse>();
    const server = http.createServer((req, res) => {
      if (stopping) res.setHeader('Connection', 'close');
      active.add(res);
      res.on('close', () => active.delete(res));
      proxy(req, res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await proxy.ready;
    const load = sdkLoad(base, 'sdk-key', 12);
    try {
      await sleep(500);
      // Stop while the server is handling requests (30 ms each), and remember which.
      await waitUntil(() => active.size >= 3, 3000, 'requests in flight');
      const inFlight = [...active];
      const stoppedAt = Date.now();
      stopping = true;
      const closed = new Promise<void>((r) => server.close(() => r()));
      const closeMs = await waitUntil(async () => (await Promise.race([closed.then(() => true), sleep(10).then(() => false)])), 3000, 'server close');
      await proxy.close();
      await Promise.race([load.done, sleep(3000)]);
      await load.stop();
      expect(closeMs).toBeLessThan(2000);
      // Every request in flight when shutdown began was answered in full, with 200.
      for (const res of inFlight) expect([res.statusCode, res.writableFinished]).toEqual([200, true]);
      // (A keep-alive request the server had not read yet may be reset instead: allowed, not counted.)
      expectCleanShutdown(load.outcomes, stoppedAt, false);
      expectNoLostCounts(load.tally, (name) => upstream.countsFor(name));
      expect(upstream.metrics).toHaveLength(1);
    } finally {
      await load.stop();
      server.closeAllConnections();
      await proxy.close();
      await quiet(upstream);
      await upstream.close();
    }
  });

  it('CLI: SIGTERM with a connection per request — exits 0 promptly, in-flight complete, new refused, zero lost counts', async () => {
    const upstream = await createTestFlagServer({ clientTokens: ['cli-upstream-token'], features: FEATURES });
    const cli = startCli({
      FLAG_URL: upstream.url,
      FLAG_API_TOKEN: 'cli-upstream-token',
      FLAG_PROXY_CLIENT_KEYS: 'sdk-key',
      FLAG_FETCH_INTERVAL: '100',
      FLAG_METRICS_INTERVAL: '600000',
      EXP_CUSTOM_ENRICHERS_FILE: 'test/reliability/fixtures/enrichers.cjs',
    });
    let load: ReturnType<typeof sdkLoad> | undefined;
    try {
      const base = await cli.base;
      await waitForHealth(base);
      // Keep-alive clients make the CLI wait its whole 10 s grace: known-bugs.test.ts BUG-14.
      load = sdkLoad(base, 'sdk-key', 12, { keepAlive: false });
      await sleep(1000);
      const stoppedAt = Date.now();
      cli.child.kill('SIGTERM');
      const code = await Promise.race([cli.exited, sleep(8000).then(() => 'hung' as const)]);
      const exitMs = Date.now() - stoppedAt;
      await Promise.race([load.done, sleep(3000)]);
      await load.stop();
      expect(code).toBe(0);
      expect(exitMs).toBeLessThan(3000);
      expectCleanShutdown(load.outcomes, stoppedAt);
      expectNoLostCounts(load.tally, (name) => upstream.countsFor(name));
      expect(cli.output()).toContain('SIGTERM received, shutting down');
    } finally {
      await load?.stop();
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      await upstream.close();
    }
  });

  it('CLI: SIGTERM with open event streams — they end at once and the CLI exits promptly, still answering requests in flight', async () => {
    const upstream = await createTestFlagServer({ clientTokens: ['cli-upstream-token'], features: FEATURES });
    const cli = startCli({
      FLAG_URL: upstream.url,
      FLAG_API_TOKEN: 'cli-upstream-token',
      FLAG_PROXY_CLIENT_KEYS: 'sdk-key',
      EXP_SERVER_SIDE_SDK_CONFIG_TOKENS: 'server-token',
      FLAG_METRICS_INTERVAL: '600000',
      EXP_CUSTOM_ENRICHERS_FILE: 'test/reliability/fixtures/enrichers.cjs',
    });
    try {
      const base = await cli.base;
      await waitForHealth(base);
      const bulk = await fetch(`${base}/ofrep/v1/evaluate/flags`, {
        method: 'POST',
        headers: { authorization: 'Bearer sdk-key', 'content-type': 'application/json' },
        body: '{"context":{}}',
      });
      const { eventStreams } = (await bulk.json()) as { eventStreams: Array<{ url: string }> };
      const browser = readStream(eventStreams[0]!.url.replace('localhost', '127.0.0.1'), {}, () => false, 9000);
      const server = readStream(`${base}/api/client/streaming`, { authorization: 'server-token', accept: 'text/event-stream' }, () => false, 9000);
      await sleep(300);
      // A lookup (30 ms of enricher) in flight at SIGTERM still gets its answer.
      const inFlight = send(`${base}/proxy`, { method: 'POST', headers: { authorization: 'sdk-key', 'content-type': 'application/json' }, body: '{"context":{},"toggles":["on"]}' });
      await sleep(5);
      const stoppedAt = Date.now();
      cli.child.kill('SIGTERM');
      const code = await Promise.race([cli.exited, sleep(8000).then(() => 'hung' as const)]);
      const exitMs = Date.now() - stoppedAt;
      const [ofrep, streaming] = await Promise.all([browser, server]);
      expect(ofrep.status).toBe(200);
      expect(streaming.status).toBe(200);
      expect((await inFlight).status).toBe(200);
      expect(code).toBe(0);
      expect(exitMs).toBeLessThan(3000);
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      await upstream.close();
    }
  });

  /**
   * Regression test of BUG-2 (found by this suite, fixed in src/evaluation/engine.ts): close()
   * while a failed flag fetch awaits its retry, then the upstream goes away; the retry's error was
   * emitted on a stopped repository with no listener and killed the process.
   */
  it('close() while a failed flag fetch awaits its retry does not crash the process', async () => {
    const result = await run(process.execPath, ['--import', 'tsx', 'test/reliability/fixtures/close-during-failing-fetch.ts'], { cwd: root, timeout: 15_000 }).catch(
      (error: { code?: number; stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? '', stderr: `${error.stderr ?? ''} (exit ${error.code})` }),
    );
    expect(result.stderr).not.toMatch(/ECONNREFUSED|Unhandled|exit/);
    expect(result.stdout).toBe('survived\n');
  });
});
