/**
 * The Unleash browser SDK (`unleash-proxy-client`) in headless Chromium, against the Express and
 * the Koa example. Each example app listens twice on loopback: the page (`GET /sdk`, whose script
 * the app bundles with the SDK itself) comes from one port, and the SDK talks to the proxy
 * mounted at /api/flags/proxy on the other, so every SDK request is cross-origin and its custom
 * headers (`unleash-appname`, `unleash-connection-id`, `unleash-sdk`, `if-none-match`) make the
 * browser send real CORS preflights, which the proxy must answer.
 *
 * Through the page only: answers and payloads as the flag server's own SDK computes them,
 * updateContext, ETag revalidation (304) without breaking the SDK, an upstream change within one
 * poll, exact usage counts at the flag server, and a wrong key as the SDK's error event.
 *
 * Run with `npm run test:browser` (Chromium: `.ci/setup-chromium.sh`, or CHROMIUM_PATH).
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Unleash } from 'unleash-client';
import type { FlagProxy } from 'flag-proxy';
import type { TestFlagServer } from 'flag-proxy/testing';
import {
  CLIENT_KEY,
  EXAMPLES,
  MOUNT_PATH,
  polls,
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
  type SdkVariant,
} from '../e2e/sdk-fixtures.js';
import { launchChromium, type Browser } from './chromium.js';

/** The SDK's poll and usage-report intervals in the page, in seconds. */
const REFRESH_S = 1;
const METRICS_S = 1;

/** What the SDK page (examples/express/browser/sdk.js) puts on `window`. */
interface SdkPageGlobal {
  sdkPage: {
    client: {
      isEnabled(name: string): boolean;
      getVariant(name: string): SdkVariant;
      getAllToggles(): Array<{ name: string }>;
      updateContext(context: object): Promise<void>;
      isReady(): boolean;
      stop(): void;
    };
    events: SdkEvent[];
    url: string;
  };
}
/** The SDK in a page, driven with page.evaluate. */
function pageDriver(page: Page): SdkDriver {
  // Each callback is sent to the page as source: it may use only its argument and globals.
  return {
    isEnabled: (name) => page.evaluate((n) => (globalThis as unknown as SdkPageGlobal).sdkPage.client.isEnabled(n), name),
    getVariant: (name) => page.evaluate((n) => (globalThis as unknown as SdkPageGlobal).sdkPage.client.getVariant(n), name),
    enabledNames: () => page.evaluate(() => (globalThis as unknown as SdkPageGlobal).sdkPage.client.getAllToggles().map((t) => t.name)),
    updateContext: (context) => page.evaluate((c) => (globalThis as unknown as SdkPageGlobal).sdkPage.client.updateContext(c), context),
    events: () => page.evaluate(() => (globalThis as unknown as SdkPageGlobal).sdkPage.events),
    isReady: () => page.evaluate(() => (globalThis as unknown as SdkPageGlobal).sdkPage.client.isReady()),
    close: async () => {
      await page.evaluate(() => (globalThis as unknown as SdkPageGlobal).sdkPage.client.stop()).catch(() => undefined);
      await page.close().catch(() => undefined);
    },
  };
}

let browser: Browser | undefined;
beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

describe.each(EXAMPLES)('the browser SDK on the %s example page, against its proxy on another origin', (name, build) => {
  let upstream: TestFlagServer;
  let oracle: Unleash;
  let proxy: FlagProxy;
  let pageServer: LoggedServer;
  let proxyServer: LoggedServer;
  const log: LoggedRequest[] = [];
  const drivers: SdkDriver[] = [];
  let sdk: SdkDriver;
  let pageUrl: string;

  /** Opens the example's SDK page with the SDK pointed at the proxy's origin. */
  const open = async (settings: Partial<DriverSettings> = {}): Promise<{ driver: SdkDriver; url: string }> => {
    const s: DriverSettings = { url: `${proxyServer.origin}${MOUNT_PATH}/proxy`, clientKey: CLIENT_KEY, userId: '7', refresh: REFRESH_S, metrics: METRICS_S, ...settings };
    const query = new URLSearchParams({ proxy: s.url, key: s.clientKey, refresh: String(s.refresh), metrics: String(s.metrics), metricsInitial: String(s.metrics) });
    if (s.userId) query.set('userId', s.userId);
    const url = `${pageServer.origin}/sdk?${query}`;
    const page = await browser!.open(url);
    const driver = pageDriver(page);
    drivers.push(driver);
    return { driver, url };
  };

  beforeAll(async () => {
    upstream = await startUpstream();
    oracle = await startOracle(upstream);
    const app = build(proxyOptions(upstream));
    proxy = app.proxy;
    // One app, two origins: the page from one port, the proxy from the other.
    pageServer = await serveLogged('page', app.listener, log);
    proxyServer = await serveLogged('proxy', app.listener, log);
    await proxy.ready;
    ({ driver: sdk, url: pageUrl } = await open());
  }, 60_000);
  afterAll(async () => {
    for (const driver of drivers) await driver.close();
    oracle?.destroy();
    await proxy?.close();
    await pageServer?.close();
    await proxyServer?.close();
    await upstream?.close();
  });

  it('loads the SDK bundled by the example, and reaches the proxy through real CORS preflights', async () => {
    expect(new URL(pageServer.origin).origin).not.toBe(new URL(proxyServer.origin).origin);
    await steps.answers(sdk, oracle);
    // The page and its script came from the example's page origin; nothing left loopback.
    const assets = log.filter((r) => r.server === 'page' && r.path.startsWith('/assets/'));
    expect(assets.map((r) => [r.path, r.status])).toEqual([['/assets/sdk.js', 200]]);
    expect(browser!.external).toEqual([]);
    // The example's demo page is there too.
    const demo = await fetch(`${pageServer.origin}/`);
    expect(demo.status).toBe(200);
    expect(await demo.text()).toContain('<title>flag-proxy demo</title>');

    // The browser asked the proxy before its first cross-origin GET, with the SDK's headers.
    const fromProxy = log.filter((r) => r.server === 'proxy');
    const preflight = fromProxy.find((r) => r.method === 'OPTIONS' && r.path === `${MOUNT_PATH}/proxy`);
    expect(preflight, `no preflight in ${JSON.stringify(fromProxy.map((r) => `${r.method} ${r.path}`))}`).toBeDefined();
    expect(preflight!.headers.origin).toBe(pageServer.origin);
    expect(preflight!.headers['access-control-request-method']).toBe('GET');
    const asked = String(preflight!.headers['access-control-request-headers']).split(',').map((h) => h.trim());
    expect(asked).toEqual(expect.arrayContaining(['authorization', 'unleash-appname', 'unleash-connection-id', 'unleash-sdk']));
    expect(preflight!.status).toBe(204);
    expect(String(preflight!.responseHeaders?.['access-control-allow-headers']).toLowerCase()).toContain('unleash-connection-id');
    // The GET itself: cross-origin, answered with CORS headers that expose the ETag to the SDK.
    const first = polls(log)[0]!;
    expect(first.server).toBe('proxy');
    expect(first.headers.origin).toBe(pageServer.origin);
    expect(first.status).toBe(200);
    expect(first.responseHeaders?.['access-control-allow-origin']).toBe('*');
    expect(String(first.responseHeaders?.['access-control-expose-headers'])).toContain('ETag');
    expect(log.indexOf(preflight!)).toBeLessThan(log.indexOf(first));
    expect(browser!.errors.filter((e) => e.startsWith(`${pageUrl}: `))).toEqual([]);
  });

  it('refetches on updateContext, and the answer changes', () => steps.updateContext(sdk, log));

  it('revalidates with the ETag: the page receives 304s and the SDK keeps its toggles', async () => {
    await steps.revalidates(sdk, log, REFRESH_S);
    // The 304 reached the page itself (not a cached 200 the browser made up).
    const proxyUrl = `${proxyServer.origin}${MOUNT_PATH}/proxy?`;
    expect(browser!.responses.some((r) => r.method === 'GET' && r.url.startsWith(proxyUrl) && r.status === 304)).toBe(true);
    // A request carrying If-None-Match needs a preflight that allows that header.
    const preflights = log.filter((r) => r.method === 'OPTIONS' && String(r.headers['access-control-request-headers']).includes('if-none-match'));
    expect(preflights.length).toBeGreaterThanOrEqual(1);
    expect(preflights.every((r) => r.status === 204)).toBe(true);
  });

  it('sees a flag changed at the flag server within its refresh interval', async () => {
    await steps.upstreamChange(sdk, upstream, log, REFRESH_S);
  });

  it("posts usage to the proxy, and the counts reach the flag server in the proxy's report", async () => {
    await steps.usage(sdk, upstream, log);
    const preflight = log.find((r) => r.method === 'OPTIONS' && r.path === `${MOUNT_PATH}/proxy/client/metrics`);
    expect(preflight?.headers['access-control-request-method']).toBe('POST');
    expect(preflight?.status).toBe(204);
    expect(browser!.errors.filter((e) => e.startsWith(`${pageUrl}: `))).toEqual([]);
  });

  it('emits the error event for a wrong client key instead of hanging', async () => {
    const started = Date.now();
    await steps.wrongKey((await open({ clientKey: 'not-a-key' })).driver, started, log);
  });

  it(`leaves no request outside loopback (${name})`, () => {
    expect(browser!.external).toEqual([]);
  });
});
