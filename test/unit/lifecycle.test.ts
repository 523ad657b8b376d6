/** Startup and refresh control: `waitUntilReady({ timeoutMs })` and `refresh()`, single and multi-environment. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createFlagProxy, createMultiEnvironmentProxy, isFlagProxyError, type FlagProxy, type MultiEnvironmentProxy } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { feature, silentLogger, startHarness, type Harness } from '../reliability/helpers.js';

const closing: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of closing.splice(0).reverse()) await item.close();
});

async function upstreamWith(...names: string[]): Promise<TestFlagServer> {
  const upstream = await createTestFlagServer({ features: names.map((name) => feature(name)) });
  closing.push(upstream);
  return upstream;
}

function proxyOf(upstream: TestFlagServer, extra: Partial<Parameters<typeof createFlagProxy>[0]> = {}): FlagProxy {
  const proxy = createFlagProxy({
    flagUrl: upstream.url,
    flagApiToken: upstream.token,
    clientKeys: ['k'],
    metricsInterval: 0,
    storageProvider: createMemoryStorageProvider(),
    logger: silentLogger(),
    ...extra,
  });
  closing.push(proxy);
  return proxy;
}

async function rejection(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isFlagProxyError(error), String(error)).toBe(true);
  return error as { code: string; message: string };
}

async function enabledNames(harness: Harness): Promise<string[]> {
  const res = await harness.request('/proxy');
  expect(res.status).toBe(200);
  return ((await res.json()) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name).sort();
}

describe('proxy.waitUntilReady()', () => {
  it('resolves once the first flag set is loaded', async () => {
    const proxy = proxyOf(await upstreamWith('on'));
    await proxy.waitUntilReady({ timeoutMs: 5000 });
    expect(proxy.isReady()).toBe(true);
    await proxy.waitUntilReady({ timeoutMs: 0 });
  });

  it('rejects after timeoutMs with READY_TIMEOUT naming the upstream (credentials redacted) and its last failure', async () => {
    const upstream = await upstreamWith('on');
    const flagUrl = upstream.url.replace('http://', 'http://bob:hunter2pass@');
    const proxy = proxyOf(upstream, { flagUrl, flagApiToken: 'not-the-token', refreshInterval: 100 });
    const started = Date.now();
    const error = await rejection(proxy.waitUntilReady({ timeoutMs: 800 }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(790);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(error.code).toBe('READY_TIMEOUT');
    expect(error.message).toContain('not ready within 800 ms');
    expect(error.message).toContain(upstream.url.replace('http://', 'http://[redacted]@'));
    expect(error.message).toContain('responded 401');
    expect(error.message).not.toContain('hunter2pass');
    // The default stays: the proxy keeps polling and answers 503 meanwhile.
    expect(proxy.isReady()).toBe(false);
  });

  it('says so when the upstream has not answered at all yet', async () => {
    const upstream = await upstreamWith('on');
    upstream.setFault({ hang: true });
    const proxy = proxyOf(upstream);
    const error = await rejection(proxy.waitUntilReady({ timeoutMs: 300 }));
    expect(error.code).toBe('READY_TIMEOUT');
    expect(error.message).toContain(`no flag set from ${upstream.url} yet (no answer so far)`);
  });

  it('rejects with NOT_READY once the proxy is closed, and INVALID_OPTION for a bad timeout', async () => {
    const proxy = proxyOf(await upstreamWith('on'));
    expect((await rejection(proxy.waitUntilReady({ timeoutMs: -1 }))).code).toBe('INVALID_OPTION');
    expect((await rejection(proxy.waitUntilReady({ timeoutMs: Number.NaN }))).code).toBe('INVALID_OPTION');
    await proxy.close();
    expect((await rejection(proxy.waitUntilReady({ timeoutMs: 1000 }))).code).toBe('NOT_READY');
  });
});

describe('proxy.refresh()', () => {
  it('fetches now: the next GET /proxy shows a flag changed upstream, with a 60 s refresh interval', async () => {
    const harness = await startHarness({ features: [feature('a'), feature('b')], options: { refreshInterval: 60_000 } });
    closing.push(harness);
    expect(await enabledNames(harness)).toEqual(['a', 'b']);
    harness.upstream.setEnabled('a', false);
    await harness.proxy.refresh();
    expect(await enabledNames(harness)).toEqual(['b']);
    // Unchanged upstream: resolves all the same.
    await harness.proxy.refresh();
    expect(await enabledNames(harness)).toEqual(['b']);
  });

  it('makes a proxy that never polls (refreshInterval 0) ready and current, on demand', async () => {
    const harness = await startHarness({ features: [feature('a')], options: { refreshInterval: 0 }, noWait: true });
    closing.push(harness);
    expect((await harness.request('/proxy')).status).toBe(503);
    await harness.proxy.refresh();
    expect(await enabledNames(harness)).toEqual(['a']);
    harness.upstream.upsertFeature(feature('c'));
    await harness.proxy.refresh();
    expect(await enabledNames(harness)).toEqual(['a', 'c']);
  });

  it('rejects with UPSTREAM naming the failure, and the last good flag set stays', async () => {
    const harness = await startHarness({ features: [feature('a')], options: { refreshInterval: 60_000 } });
    closing.push(harness);
    harness.upstream.setFault({ status: 500 });
    harness.upstream.setEnabled('a', false);
    const error = await rejection(harness.proxy.refresh());
    expect(error.code).toBe('UPSTREAM');
    expect(error.message).toContain('responded 500');
    expect(await enabledNames(harness)).toEqual(['a']);
    harness.upstream.setFault(undefined);
    await harness.proxy.refresh();
    expect(await enabledNames(harness)).toEqual([]);
  });

  it('rejects with NOT_READY once the proxy is closed', async () => {
    const proxy = proxyOf(await upstreamWith('on'));
    await proxy.ready;
    await proxy.close();
    const error = await rejection(proxy.refresh());
    expect(error.code).toBe('NOT_READY');
    expect(error.message).toContain('closed');
  });
});

describe('multi-environment proxy', () => {
  async function multi(): Promise<{ proxy: MultiEnvironmentProxy; base: string; production: TestFlagServer; staging: TestFlagServer }> {
    const production = await upstreamWith('p');
    const staging = await upstreamWith('s');
    const proxy = createMultiEnvironmentProxy({
      flagUrl: production.url,
      metricsInterval: 0,
      refreshInterval: 60_000,
      storageProvider: createMemoryStorageProvider(),
      logger: silentLogger(),
      environments: [
        { name: 'production', flagApiToken: production.token, clientKeys: ['prod-key'] },
        { name: 'staging', flagUrl: staging.url, flagApiToken: staging.token, clientKeys: ['staging-key'] },
      ],
    });
    closing.push(proxy);
    const server = http.createServer(proxy);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closing.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
    return { proxy, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, production, staging };
  }

  async function namesFor(base: string, key: string): Promise<string[]> {
    const res = await fetch(`${base}/proxy`, { headers: { authorization: key, connection: 'close' } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name);
  }

  it('waits for every environment, and a timeout names the environment that is not ready', async () => {
    const { proxy, staging } = await multi();
    await proxy.waitUntilReady({ timeoutMs: 5000 });
    expect(proxy.isReady()).toBe(true);

    const broken = createMultiEnvironmentProxy({
      flagUrl: staging.url,
      metricsInterval: 0,
      storageProvider: createMemoryStorageProvider(),
      logger: silentLogger(),
      environments: [
        { name: 'good', flagApiToken: staging.token, clientKeys: ['g'] },
        { name: 'bad', flagApiToken: 'wrong', clientKeys: ['b'] },
      ],
    });
    closing.push(broken);
    const error = await rejection(broken.waitUntilReady({ timeoutMs: 500 }));
    expect(error.code).toBe('READY_TIMEOUT');
    expect(error.message).toMatch(/^Environment "bad": /);
    expect(error.message).toContain('responded 401');
  });

  it('refreshes one environment by name, or all of them', async () => {
    const { proxy, base, production, staging } = await multi();
    await proxy.ready;
    production.setEnabled('p', false);
    staging.setEnabled('s', false);
    await proxy.refresh('staging');
    expect(await namesFor(base, 'staging-key')).toEqual([]);
    expect(await namesFor(base, 'prod-key')).toEqual(['p']);
    await proxy.refresh();
    expect(await namesFor(base, 'prod-key')).toEqual([]);
    const error = await rejection(proxy.refresh('nowhere'));
    expect(error.code).toBe('NOT_FOUND');
    expect(error.message).toBe('No environment named "nowhere" (known: production, staging)');
  });
});
