/**
 * Issue 5, item 3 (secrets): a full run at debug level — startup with a bootstrap URL, requests of
 * every kind, upstream errors, failed usage reports, close — with ALL log output captured (plain
 * and JSON logger in process, and the CLI's stdout/stderr), and every response body and header
 * kept. None of them may contain the upstream token, a client key, a server-side token or the
 * bootstrap Authorization. Leaks found are in known-bugs.test.ts (BUG-11, BUG-12).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createDefaultLogger, createFlagProxy, Strategy, type FeatureDefinition, type FlagProxy } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { startCli, waitForHealth } from '../support/cli.js';
import { feature, fetchesOf, quiet, send, sleep, usageReport, waitUntil, type Outcome } from './helpers.js';


const UPSTREAM_TOKEN = 'upstream-tok-7f3a9c51';
const CLIENT_KEYS = ['ck-s3cr3t-one-9141', 'ck-s3cr3t-two-9242'];
const SERVER_TOKENS = ['sst-s3cr3t-one-9343', 'sst-s3cr3t-two-9444'];
const BOOTSTRAP_AUTH = 'Bearer boot-s3cr3t-9545';
const SECRETS = [UPSTREAM_TOKEN, ...CLIENT_KEYS, ...SERVER_TOKENS, BOOTSTRAP_AUTH, 'boot-s3cr3t-9545'];
const [CK, CK2] = CLIENT_KEYS as [string, string];
const [ST, ST2] = SERVER_TOKENS as [string, string];

const FEATURES: FeatureDefinition[] = [
  feature('plain'),
  feature('leaky-strategy', { strategies: [{ name: 'leaky', parameters: {}, constraints: [] }] as never }),
];

/** A strategy whose error message carries credentials, as a careless library's might. */
class Leaky extends Strategy {
  constructor() {
    super('leaky');
  }
  override isEnabled(): boolean {
    throw new Error(`strategy saw Authorization: ${CK} and upstream token ${UPSTREAM_TOKEN}`);
  }
}

/**
 * A bootstrap source that answers 200 with a wrong-shaped JSON echoing the Authorization it got;
 * unleash-client put the whole answer in its warning; ours names only the first problem ("Flag set
 * rejected, ...: features: ..."), and either way no secret may reach the log.
 */
async function echoingBootstrap(): Promise<{ url: string; close(): Promise<void>; seen: string[] }> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(String(req.headers.authorization));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ features: 'none', message: `hello ${req.headers.authorization}` }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/bootstrap.json`,
    seen,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** Drives one proxy through everything that logs; returns every response seen. */
async function fullRun(base: string, upstream: TestFlagServer, proxy: FlagProxy): Promise<Outcome[]> {
  const out: Outcome[] = [];
  const go = async (p: string, init: Parameters<typeof send>[1] = {}) => {
    const res = await send(`${base}${p}`, init);
    out.push(res);
    return res;
  };
  const json = (key: string, body: unknown) => ({
    method: 'POST',
    headers: { authorization: key, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  // Requests of every kind, good and bad.
  for (const key of [CK, CK2, 'wrong-key', `Bearer ${CK}`, ST]) {
    await go('/proxy?userId=1', { headers: { authorization: key } });
    await go('/proxy/all', { headers: { authorization: key } });
    await go('/proxy/client/features', { headers: { authorization: key } });
  }
  await go('/proxy', json(CK, { toggles: ['plain', 'leaky-strategy'] }));
  await go('/proxy', json(CK, { context: { userId: 'boom' } }));
  await go('/proxy', json(CK, '{"broken":'));
  await go('/proxy', json(CK, { toggles: 'not-a-list' }));
  await go('/proxy', { ...json(CK, 'x'.repeat(200_000)) });
  await go('/proxy', { method: 'POST', headers: { authorization: CK, 'content-type': 'text/plain' }, body: 'hi' });
  await go('/proxy/client/metrics', json(CK, usageReport({ plain: { yes: 2, no: 1 } })));
  await go('/proxy/client/metrics', json(ST2, usageReport({ plain: { yes: 1, no: 0 } })));
  await go('/proxy/client/metrics', json(CK, { appName: 'x' }));
  await go('/proxy/client/register', json(ST, { appName: 'sdk', strategies: [], started: 1, interval: 1 }));
  await go('/proxy/health');
  await go('/proxy/internal-backstage/prometheus');
  await go('/proxy/nowhere');

  // Upstream errors: 5xx, an answer that echoes the token, a dropped connection.
  const phase = async (fault: Parameters<TestFlagServer['setFault']>[0], ms: number) => {
    const from = Date.now();
    upstream.setFault(fault);
    await sleep(ms);
    if (fault?.routes === 'features') {
      // At least one fetch must have met this fault (a retried fetch can wait 1-2 s).
      await waitUntil(() => fetchesOf(upstream).some((r) => r.receivedAt >= from), 5000, 'a fetch under the fault');
      await sleep(50);
    }
  };
  await phase({ rawBody: JSON.stringify({ version: 2, note: `token ${UPSTREAM_TOKEN} accepted` }), routes: 'features' }, 150);
  await phase({ status: 500, routes: 'features' }, 150);
  upstream.setFault(undefined);
  await waitUntil(() => fetchesOf(upstream).at(-1)?.status === 200 || fetchesOf(upstream).at(-1)?.status === 304, 5000, 'a good fetch');
  // Failed usage reports (a report is only sent when there are counts).
  await go('/proxy/client/metrics', json(CK, usageReport({ plain: { yes: 1, no: 1 } })));
  await phase({ status: 503, routes: 'metrics' }, 300);
  await go('/proxy/client/metrics', json(CK, usageReport({ plain: { yes: 1, no: 1 } })));
  await phase({ reset: true, routes: 'metrics' }, 600);
  // Finally the token is refused everywhere: polling stops, reports fail, the last one too.
  await go('/proxy/client/metrics', json(CK, usageReport({ plain: { yes: 5, no: 5 } })));
  upstream.setFault({ status: 401 });
  const errors = async () => Number(/^flag_proxy_upstream_fetches_total\{[^}]*outcome="error"[^}]*\} (\S+)$/m.exec(await proxy.metrics())?.[1] ?? 0);
  const before = await errors();
  // The proxy must have read the 401 (not only the upstream have sent it) before it is closed.
  await waitUntil(async () => (await errors()) > before, 5000, 'a 401 fetch read by the proxy');
  await proxy.close();
  return out;
}

function expectNoSecret(where: string, text: string): void {
  for (const secret of SECRETS) expect(text.includes(secret), `${where} contains ${secret}`).toBe(false);
}

describe.concurrent('secrets never reach a log line or an answer', () => {
  it.for([false, true])('in process, built-in logger at debug (json: %s)', async (json) => {
    const lines: string[] = [];
    const bootstrap = await echoingBootstrap();
    const upstream = await createTestFlagServer({ clientTokens: [UPSTREAM_TOKEN], features: FEATURES });
    const proxy = createFlagProxy({
      flagUrl: upstream.url,
      flagApiToken: UPSTREAM_TOKEN,
      clientKeys: CLIENT_KEYS,
      expServerSideSdkConfig: { tokens: SERVER_TOKENS },
      expBootstrap: { url: bootstrap.url, urlHeaders: { Authorization: BOOTSTRAP_AUTH } },
      expCustomEnrichers: [
        (context) => {
          if (context.userId === 'boom') throw new Error(`enricher failed with ${CK} / ${ST} / ${BOOTSTRAP_AUTH}`);
          return context;
        },
      ],
      customStrategies: [new Leaky()],
      storageProvider: createMemoryStorageProvider(),
      refreshInterval: 50,
      metricsInterval: 100,
      enableAllEndpoint: true,
      logger: createDefaultLogger({ level: 'debug', json, write: (line) => lines.push(line) }),
    });
    const server = http.createServer(proxy);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      await proxy.ready;
      const responses = await fullRun(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, upstream, proxy);
      const log = lines.join('\n');
      // The run did produce the lines that would carry a secret, at every level.
      expect(bootstrap.seen).toContain(BOOTSTRAP_AUTH);
      for (const expected of [
        /DEBUG|"debug"/,
        /INFO|"info"/,
        /unable to load bootstrap[^]*Flag set rejected/,
        /Activation strategy of toggle .{1,2}leaky-strategy.{1,2} threw/,
        /Unexpected error on POST \/proxy/,
        /Usage report to \/api\/client\/metrics (answered 503|failed)/,
        /Upstream flag API error/,
        /API token is not accepted/,
        /Could not send the last usage report/,
      ]) {
        expect(log).toMatch(expected);
      }
      expect(log).toContain('[REDACTED]');
      expectNoSecret('log', log);
      expect(responses.length).toBeGreaterThan(20);
      for (const res of responses) expectNoSecret(`answer ${res.status}`, `${JSON.stringify(res.headers)}\n${res.body}`);
    } finally {
      server.close();
      await proxy.close();
      await quiet(upstream);
      await upstream.close();
      await bootstrap.close();
    }
  });

  it('in the CLI at LOG_LEVEL=debug: stdout, stderr and every answer', async () => {
    const bootstrap = await echoingBootstrap();
    const upstream = await createTestFlagServer({ clientTokens: [UPSTREAM_TOKEN], features: [feature('plain')] });
    const cli = startCli({
      LOG_LEVEL: 'debug',
      FLAG_URL: upstream.url,
      FLAG_API_TOKEN: UPSTREAM_TOKEN,
      FLAG_PROXY_CLIENT_KEYS: CLIENT_KEYS.join(','),
      EXP_SERVER_SIDE_SDK_CONFIG_TOKENS: SERVER_TOKENS.join(','),
      EXP_BOOTSTRAP_URL: bootstrap.url,
      EXP_BOOTSTRAP_AUTHORIZATION: BOOTSTRAP_AUTH,
      EXP_CUSTOM_ENRICHERS_FILE: 'test/reliability/fixtures/enrichers.cjs',
      FLAG_FETCH_INTERVAL: '50',
      FLAG_METRICS_INTERVAL: '100',
      ENABLE_ALL_ENDPOINT: 'true',
    });
    try {
      const base = await cli.base;
      await waitForHealth(base);
      const responses: Outcome[] = [];
      for (const [p, key] of [['/proxy?userId=1', CK], ['/proxy?userId=boom', CK], ['/proxy/all', CK2], ['/proxy/client/features', ST], ['/proxy', 'wrong']] as const) {
        responses.push(await send(`${base}${p}`, { headers: { authorization: key } }));
      }
      upstream.setFault({ status: 503, routes: 'metrics' });
      const post = (p: string, key: string, body: unknown) =>
        send(`${base}${p}`, { method: 'POST', headers: { authorization: key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      responses.push(await post('/proxy/client/metrics', ST2, usageReport({ plain: { yes: 1, no: 0 } })));
      responses.push(await post('/proxy/client/register', CK, { appName: 'sdk', strategies: [], started: 1, interval: 1 }));
      await sleep(300);
      upstream.setFault({ rawBody: JSON.stringify({ version: 2, note: `token ${UPSTREAM_TOKEN} accepted` }), routes: 'features' });
      await sleep(200);
      upstream.setFault({ status: 401 });
      await waitUntil(() => fetchesOf(upstream).at(-1)?.status === 401, 5000, 'a 401 fetch');
      // Usage that no report can deliver now (the upstream refuses every route): the last report
      // at exit fails and says so. Counts from before could have gone out in the window where
      // only the features route was faulted, depending on the reports' backoff and the machine.
      responses.push(await send(`${base}/proxy?userId=2`, { headers: { authorization: CK } }));
      // Time for the CLI to read the answer the upstream has sent (loopback: well under this).
      await sleep(200);
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
      expect(responses.map((r) => r.status)).toEqual([200, 500, 200, 200, 401, 200, 200, 200]);
      for (const expected of [/DEBUG:/, /INFO:/, /WARN:/, /ERROR:/, /unable to load bootstrap[^]*Flag set rejected/, /Unexpected error on GET \/proxy/, /Usage report to \/api\/client\/metrics answered 503/, /Could not send the last usage report/]) {
        expect(cli.output()).toMatch(expected);
      }
      expectNoSecret('CLI output', cli.output());
      for (const res of responses) expectNoSecret(`answer ${res.status}`, `${JSON.stringify(res.headers)}\n${res.body}`);
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      await upstream.close();
      await bootstrap.close();
    }
  });
});
