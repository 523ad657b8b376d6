/**
 * The Unleash frontend SDK (`unleash-proxy-client`) in Node, on Node's own fetch, against the proxy
 * mounted under /api/flags three ways: node:http (`proxyBasePath`), Express
 * (`createExpressMiddleware`) and Koa (`createKoaMiddleware`). Every run checks, through the SDK
 * only: answers and payloads as the flag server's own SDK computes them, updateContext, ETag
 * revalidation (304), an upstream change within one poll, exact usage counts upstream, and a wrong
 * key as an error event. The same steps run in Chromium in test/browser/sdk-examples.test.ts.
 */
import http from 'node:http';
import express from 'express';
import Koa from 'koa';
import { afterAll, beforeAll, describe, it, vi } from 'vitest';
import { EVENTS, InMemoryStorageProvider, UnleashClient } from 'unleash-proxy-client';
import type { Unleash } from 'unleash-client';
import { createFlagProxy, type FlagProxy, type FlagProxyOptions } from 'flag-proxy';
import { createExpressMiddleware } from 'flag-proxy/express';
import { createKoaMiddleware } from 'flag-proxy/koa';
import type { TestFlagServer } from 'flag-proxy/testing';
import {
  CLIENT_KEY,
  MOUNT_PATH,
  proxyOptions,
  serveLogged,
  startOracle,
  startUpstream,
  steps,
  type DriverSettings,
  type LoggedRequest,
  type LoggedServer,
  type SdkDriver,
  type SdkEvent,
} from './sdk-fixtures.js';

/** Seconds between the SDK's polls and usage reports (fractions work: the SDK multiplies by 1000). */
const REFRESH_S = 0.5;
const METRICS_S = 0.5;

/** The SDK in this process, on global fetch, recording its events. */
function nodeDriver(settings: DriverSettings): SdkDriver {
  const client = new UnleashClient({
    url: settings.url,
    clientKey: settings.clientKey,
    appName: 'sdk-e2e-node',
    refreshInterval: settings.refresh,
    metricsInterval: settings.metrics,
    metricsIntervalInitial: settings.metrics,
    storageProvider: new InMemoryStorageProvider(),
    context: settings.userId ? { userId: settings.userId } : {},
  });
  const events: SdkEvent[] = [];
  for (const name of [EVENTS.INIT, EVENTS.READY, EVENTS.UPDATE, EVENTS.ERROR, EVENTS.RECOVERED, EVENTS.SENT]) {
    client.on(name, (detail: unknown) => events.push({ name, at: Date.now(), detail: detail === undefined ? null : JSON.parse(JSON.stringify(detail)) }));
  }
  void client.start();
  return {
    isEnabled: async (name) => client.isEnabled(name),
    getVariant: async (name) => client.getVariant(name),
    enabledNames: async () => client.getAllToggles().map((t) => t.name),
    updateContext: (context) => client.updateContext(context),
    events: async () => [...events],
    isReady: async () => client.isReady(),
    close: async () => client.stop(),
  };
}

/** Each host serves the proxy under /api/flags, created from `options` the host's own way. */
const HOSTS: Array<[string, (options: FlagProxyOptions) => { listener: http.RequestListener; proxy: FlagProxy }]> = [
  [
    'node:http',
    (options) => {
      const proxy = createFlagProxy({ ...options, proxyBasePath: MOUNT_PATH });
      return { proxy, listener: (req, res) => proxy(req, res, () => res.writeHead(404).end()) };
    },
  ],
  [
    'Express',
    (options) => {
      const flags = createExpressMiddleware(options);
      const app = express();
      app.use(MOUNT_PATH, flags);
      return { proxy: flags.proxy, listener: app };
    },
  ],
  [
    'Koa',
    (options) => {
      const flags = createKoaMiddleware(options, { prefix: MOUNT_PATH });
      const app = new Koa();
      app.use(flags);
      return { proxy: flags.proxy, listener: app.callback() };
    },
  ],
];

describe.each(HOSTS)('unleash-proxy-client in Node against the proxy mounted on %s', (_host, mount) => {
  let upstream: TestFlagServer;
  let oracle: Unleash;
  let proxy: FlagProxy;
  let server: LoggedServer;
  const log: LoggedRequest[] = [];
  const drivers: SdkDriver[] = [];
  let sdk: SdkDriver;
  const start = (settings: Partial<DriverSettings> = {}): SdkDriver => {
    const driver = nodeDriver({ url: `${server.origin}${MOUNT_PATH}/proxy`, clientKey: CLIENT_KEY, userId: '7', refresh: REFRESH_S, metrics: METRICS_S, ...settings });
    drivers.push(driver);
    return driver;
  };

  beforeAll(async () => {
    // The SDK logs every failed fetch with console.error; the wrong-key step fails on purpose.
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    upstream = await startUpstream();
    oracle = await startOracle(upstream);
    const host = mount(proxyOptions(upstream));
    proxy = host.proxy;
    server = await serveLogged('proxy', host.listener, log);
    await proxy.ready;
    sdk = start();
  });
  afterAll(async () => {
    for (const driver of drivers) await driver.close();
    oracle?.destroy();
    await proxy?.close();
    await server?.close();
    await upstream?.close();
    vi.restoreAllMocks();
  });

  it('answers isEnabled and getVariant (with payloads) as the flag server does', () => steps.answers(sdk, oracle));
  it('refetches on updateContext, and the answer changes', () => steps.updateContext(sdk, log));
  it('revalidates with the ETag: 304 answers keep its toggles', () => steps.revalidates(sdk, log, REFRESH_S));
  it('sees a flag changed upstream within its refresh interval', async () => {
    await steps.upstreamChange(sdk, upstream, log, REFRESH_S);
  });
  it('reports usage: its counts reach the flag server in the proxy report', () => steps.usage(sdk, upstream, log));
  it('emits an error event for a wrong client key, without hanging', async () => {
    const started = Date.now();
    await steps.wrongKey(start({ clientKey: 'not-a-key' }), started, log);
  });
});
