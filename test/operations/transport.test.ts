/**
 * How the proxy reaches its upstream: through HTTP_PROXY / HTTPS_PROXY (set in the environment
 * of a CLI process; unleash-client and the usage reporter read them with proxy-from-env), and over
 * TLS with `httpOptions.rejectUnauthorized` against a self-signed certificate made at test time.
 */
import { X509Certificate } from 'node:crypto';
import https from 'node:https';
import { afterEach, describe, expect, it } from 'vitest';
import { createFlagProxy, type FlagProxy } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer, silentLogger as silent } from 'flag-proxy/testing';
import { eventually, feature, postJson, startHarness, type Harness } from '../support/harness.js';
import {
  nodeSelfSignedCertificate,
  sample,
  selfSignedCertificate,
  startCli,
  startForwardProxy,
  startTlsFront,
  waitForHealth,
  type Cli,
  type Running,
} from './support.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
function later<T extends { close(): Promise<unknown> } | Cli>(thing: T): T {
  cleanups.push(() => ('stop' in thing ? thing.stop() : thing.close()));
  return thing;
}


async function upstreamWithToken(): Promise<TestFlagServer> {
  return later(await createTestFlagServer({ clientTokens: ['transport-token'], features: [feature('over-the-wire')] }));
}

/** The CLI against `flagUrl`, with extra environment; resolves once healthy. */
async function cli(flagUrl: string, env: Record<string, string>): Promise<{ cli: Cli; base: string }> {
  const started = later(
    startCli({ FLAG_URL: flagUrl, FLAG_API_TOKEN: 'transport-token', FLAG_PROXY_CLIENT_KEYS: 'k', FLAG_METRICS_INTERVAL: '600000', ...env }),
  );
  const base = await started.base;
  await waitForHealth(base);
  return { cli: started, base };
}

/** One named lookup, so there is usage to report on shutdown. */
async function lookup(base: string): Promise<void> {
  const res = await fetch(`${base}/proxy`, { ...postJson({ toggles: ['over-the-wire'] }), headers: { authorization: 'k', 'content-type': 'application/json' } });
  expect(res.status).toBe(200);
}

describe('HTTP_PROXY and HTTPS_PROXY', () => {
  it('sends every upstream request (fetch, registration, usage report) through HTTP_PROXY', async () => {
    const upstream = await upstreamWithToken();
    const forward = later(await startForwardProxy());
    const { cli: proxyProcess, base } = await cli(upstream.url, { HTTP_PROXY: forward.url });
    await lookup(base);
    expect(await proxyProcess.stop()).toBe(0);
    const api = upstream.url.replace(/\/$/, '');
    const seen = forward.seen.map((r) => `${r.method} ${r.target.split('?')[0]}`);
    expect(seen).toContain(`GET ${api}/client/features`);
    expect(seen).toContain(`POST ${api}/client/register`);
    expect(seen).toContain(`POST ${api}/client/metrics`);
    // Everything the upstream received came through the forward proxy.
    expect(upstream.requests.length).toBe(forward.seen.length);
    expect(upstream.countsFor('over-the-wire').yes).toBe(1);
  });

  it('tunnels HTTPS upstream requests through HTTPS_PROXY (CONNECT)', async () => {
    const upstream = await upstreamWithToken();
    const front = later(await startTlsFront(Number(new URL(upstream.url).port), selfSignedCertificate()));
    const forward = later(await startForwardProxy());
    const flagUrl = `https://127.0.0.1:${front.port}/api/`;
    const { cli: proxyProcess, base } = await cli(flagUrl, { HTTPS_PROXY: forward.url, HTTP_OPTIONS_REJECT_UNAUTHORIZED: 'false' });
    await lookup(base);
    expect(await proxyProcess.stop()).toBe(0);
    expect(forward.seen.length).toBeGreaterThan(0);
    expect(forward.seen.every((r) => r.method === 'CONNECT' && r.target === `127.0.0.1:${front.port}`)).toBe(true);
    expect(upstream.requests.some((r) => r.path === '/api/client/features')).toBe(true);
    expect(upstream.countsFor('over-the-wire').yes).toBe(1);
  });
});

describe('httpOptions.rejectUnauthorized against a self-signed upstream', () => {
  async function tlsUpstream(): Promise<{ upstream: TestFlagServer; front: Running; flagUrl: string }> {
    const upstream = await upstreamWithToken();
    const front = later(await startTlsFront(Number(new URL(upstream.url).port), selfSignedCertificate()));
    return { upstream, front, flagUrl: `https://127.0.0.1:${front.port}/api/` };
  }
  function proxyFor(flagUrl: string, rejectUnauthorized: boolean | undefined): FlagProxy {
    const proxy = createFlagProxy({
      flagUrl,
      flagApiToken: 'transport-token',
      clientKeys: ['k'],
      storageProvider: createMemoryStorageProvider(),
      refreshInterval: 100,
      metricsInterval: 0,
      logger: silent,
      ...(rejectUnauthorized === undefined ? {} : { httpOptions: { rejectUnauthorized } }),
    });
    cleanups.push(() => proxy.close());
    return proxy;
  }

  it.each([true, undefined])('refuses the certificate with rejectUnauthorized %s: never ready, fetches counted as errors', async (reject) => {
    const { upstream, flagUrl } = await tlsUpstream();
    const proxy = proxyFor(flagUrl, reject);
    // unleash-client retries a failed fetch twice (1 s, then 2 s) before it reports the error.
    await eventually(async () => {
      expect(sample(await proxy.metrics(), 'flag_proxy_upstream_fetches_total', { outcome: 'error' })).toBeGreaterThanOrEqual(1);
    }, 10_000);
    expect(proxy.isReady()).toBe(false);
    expect(upstream.requests).toEqual([]);
  });

  it('syncs with rejectUnauthorized false, and reports usage over the same TLS', async () => {
    const { upstream, flagUrl } = await tlsUpstream();
    const h: Harness = await startHarness({
      upstream,
      options: { flagUrl, flagApiToken: 'transport-token', httpOptions: { rejectUnauthorized: false }, metricsInterval: 60_000 },
    });
    cleanups.push(() => h.close());
    expect((await (await h.request('/proxy')).json()).toggles.map((t: { name: string }) => t.name)).toEqual(['over-the-wire']);
    await h.request('/proxy', postJson({ toggles: ['over-the-wire'] }));
    await h.proxy.close();
    expect(upstream.countsFor('over-the-wire').yes).toBe(1);
    expect(upstream.registrations).toHaveLength(1);
  });
});

describe('the test certificate', () => {
  it('can be made without openssl (node:crypto), and serves TLS for 127.0.0.1', async () => {
    const certificate = nodeSelfSignedCertificate();
    expect(new X509Certificate(certificate.cert).checkIP('127.0.0.1')).toBe('127.0.0.1');
    const upstream = await upstreamWithToken();
    const front = later(await startTlsFront(Number(new URL(upstream.url).port), certificate));
    const status = await new Promise<number>((resolve, reject) => {
      https
        .get(`https://127.0.0.1:${front.port}/api/client/features`, { ca: certificate.cert, headers: { authorization: 'transport-token' }, agent: false }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        })
        .on('error', reject);
    });
    expect(status).toBe(200);
  });
});
