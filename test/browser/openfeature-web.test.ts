/**
 * OpenFeature's own browser provider (`@openfeature/ofrep-web-provider` 0.4.3 with
 * `@openfeature/web-sdk`) in headless Chromium against the proxy's OFREP routes. The page comes
 * from one loopback port and the proxy listens on another, so every request is cross-origin
 * (preflights included) and the event stream is a native `EventSource`.
 *
 * Through the page only: the same values as `/proxy` for several contexts, and a flag flipped
 * upstream reaching the page within two seconds with polling off (pushed over SSE), with the
 * provider's configuration-changed event; so does a launch scheduled ahead, when its instant
 * comes, with nothing changed upstream; and open pages change one after another at the paced
 * rate of the proxy's notices.
 *
 * Run with `npm run test:browser` (Chromium: `.ci/setup-chromium.sh`, or CHROMIUM_PATH).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_KEY, launchAt, postJson, startHarness, type Harness } from '../support/harness.js';
import { OFREP_FEATURES } from '../support/ofrep.js';
import { launchChromium, type Browser } from './chromium.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The page script: the provider and SDK, driven from the test through `window.ofrepPage`. */
const ENTRY = `
import { OpenFeature, ProviderEvents } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
const events = [];
window.ofrepPage = {
  events,
  async start(baseUrl, key, context) {
    OpenFeature.addHandler(ProviderEvents.ConfigurationChanged, (details) => events.push({ type: 'changed', flags: details?.flagsChanged ?? [] }));
    await OpenFeature.setContext(context);
    await OpenFeature.setProviderAndWait(new OFREPWebProvider({ baseUrl, headers: [['X-API-Key', key]], cacheMode: 'disabled', pollInterval: 0 }));
  },
  setContext: (context) => OpenFeature.setContext(context),
  details(kind, name, fallback) {
    const client = OpenFeature.getClient();
    const method = { boolean: 'getBooleanDetails', string: 'getStringDetails', number: 'getNumberDetails', object: 'getObjectDetails' }[kind];
    const { value, errorCode, reason, variant } = client[method](name, fallback);
    return { value, errorCode, reason, variant };
  },
};
`;

interface PageDetails {
  value: unknown;
  errorCode?: string;
  reason?: string;
  variant?: string;
}

interface OfrepPageGlobal {
  ofrepPage: {
    events: Array<{ type: string; flags: string[] }>;
    start(baseUrl: string, key: string, context: object): Promise<void>;
    setContext(context: object): Promise<void>;
    details(kind: string, name: string, fallback: unknown): PageDetails;
  };
}

async function servePage(): Promise<{ url: string; close(): Promise<void> }> {
  const { build } = await import('esbuild');
  const result = await build({
    stdin: { contents: ENTRY, resolveDir: root, loader: 'js' },
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: ['es2020'],
    write: false,
    logLevel: 'silent',
  });
  const script = result.outputFiles[0]!.text;
  const server = http.createServer((req, res) => {
    if (req.url === '/ofrep.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(script);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>OFREP</title><script src="/ofrep.js"></script>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The kind and code default to ask each fixture flag with. */
const ASKED: Array<[string, 'boolean' | 'string' | 'number' | 'object', unknown]> = [
  ['bool-on', 'boolean', false],
  ['bool-off', 'boolean', true],
  ['bool-users', 'boolean', false],
  ['plan-pro', 'boolean', false],
  ['text', 'string', 'code-default'],
  ['text-off', 'string', 'code-default'],
  ['count', 'number', -1],
  ['config', 'object', {}],
];

/** What `/proxy` says the page should see: on/off for boolean flags, the parsed payload (or the code default) for the others. */
function expectedFromProxy(toggles: Array<{ name: string; enabled: boolean; variant: { payload?: { type: string; value: string } } }>) {
  const byName = new Map(toggles.map((t) => [t.name, t]));
  return ASKED.map(([name, kind, fallback]) => {
    const toggle = byName.get(name);
    if (kind === 'boolean') return [name, toggle?.enabled === true];
    const payload = toggle?.variant.payload;
    if (!payload) return [name, fallback];
    return [name, kind === 'number' ? Number(payload.value) : kind === 'object' ? JSON.parse(payload.value) : payload.value];
  });
}

describe('@openfeature/ofrep-web-provider in Chromium, cross-origin', () => {
  let browser: Browser;
  let h: Harness;
  let page: Page;
  let site: { url: string; close(): Promise<void> };
  beforeAll(async () => {
    browser = await launchChromium();
    h = await startHarness({ features: OFREP_FEATURES });
    site = await servePage();
    page = await browser.open(site.url);
    await page.evaluate(
      ([base, key]) => (globalThis as unknown as OfrepPageGlobal).ofrepPage.start(base as string, key as string, { targetingKey: 'alice', plan: 'pro' }),
      [h.base, CLIENT_KEY],
    );
  }, 60_000);
  afterAll(async () => {
    await page?.close().catch(() => undefined);
    await browser?.close();
    await site?.close();
    await h?.close();
  });

  const inPage = (): Promise<Array<[string, PageDetails]>> =>
    page.evaluate(
      (asked) => asked.map(([name, kind, fallback]) => [name, (globalThis as unknown as OfrepPageGlobal).ofrepPage.details(kind, name, fallback)] as [string, PageDetails]),
      ASKED,
    );

  it('sees the values /proxy answers, for several contexts', async () => {
    for (const context of [{ targetingKey: 'alice', plan: 'pro' }, { targetingKey: 'bob', plan: 'free' }, { targetingKey: 'carol' }]) {
      await page.evaluate((c) => (globalThis as unknown as OfrepPageGlobal).ofrepPage.setContext(c), context);
      const { targetingKey, ...properties } = context;
      const proxied = await (await h.request('/proxy', postJson({ context: { userId: targetingKey, properties } }))).json();
      const seen = (await inPage()).map(([name, details]) => [name, details.value]);
      expect(seen, JSON.stringify(context)).toEqual(expectedFromProxy(proxied.toggles));
    }
    const [, missing] = (await page.evaluate(() => [0, (globalThis as unknown as OfrepPageGlobal).ofrepPage.details('boolean', 'missing', true)])) as [number, PageDetails];
    expect(missing).toMatchObject({ value: true, errorCode: 'FLAG_NOT_FOUND' });
    // Every request was cross-origin: the browser asked first.
    expect(await h.proxy.metrics()).toMatch(/flag_proxy_http_requests_total\{route="\/ofrep\/v1\/evaluate\/flags",method="OPTIONS",status="204"\} [1-9]/);
    expect(browser.errors).toEqual([]);
  });

  it('changes a value within two seconds of an upstream flip, pushed over the event stream with polling off', async () => {
    await page.evaluate(() => (globalThis as unknown as OfrepPageGlobal).ofrepPage.setContext({ targetingKey: 'alice' }));
    const value = () => page.evaluate(() => (globalThis as unknown as OfrepPageGlobal).ofrepPage.details('boolean', 'bool-on', false).value);
    expect(await value()).toBe(true);
    // The stream is open before the flip: the event, not a reconnect, must carry it.
    await expect.poll(() => browser.responses.some((r) => r.url.includes('/ofrep/v1/sse') && r.status === 200), { timeout: 5000 }).toBe(true);
    const changedBefore = (await page.evaluate(() => (globalThis as unknown as OfrepPageGlobal).ofrepPage.events.length)) as number;
    const started = Date.now();
    h.upstream.setEnabled('bool-on', false);
    await expect.poll(value, { timeout: 2000, interval: 25 }).toBe(false);
    expect(Date.now() - started).toBeLessThan(2000);
    const events = (await page.evaluate(() => (globalThis as unknown as OfrepPageGlobal).ofrepPage.events)) as Array<{ type: string; flags: string[] }>;
    expect(events.slice(changedBefore)).toContainEqual({ type: 'changed', flags: expect.arrayContaining(['bool-on']) });
  });

  it('turns a scheduled launch on within two seconds of its instant, pushed over the event stream with polling off', async () => {
    // Chromium is running: a fresh page and proxy are ready well within the lead.
    const at = Date.now() + 4000;
    const own = await startHarness({ features: [...OFREP_FEATURES, launchAt(at)] });
    const launched = await browser.open(site.url);
    try {
      await launched.evaluate(
        ([base, key]) => (globalThis as unknown as OfrepPageGlobal).ofrepPage.start(base as string, key as string, { targetingKey: 'dana' }),
        [own.base, CLIENT_KEY],
      );
      const value = () => launched.evaluate(() => (globalThis as unknown as OfrepPageGlobal).ofrepPage.details('boolean', 'launch', false).value);
      expect(await value()).toBe(false);
      await expect.poll(() => browser.responses.some((r) => r.url.startsWith(`${own.base}/ofrep/v1/sse`) && r.status === 200), { timeout: 5000 }).toBe(true);
      expect(Date.now()).toBeLessThan(at);
      await expect.poll(value, { timeout: at - Date.now() + 2000, interval: 25 }).toBe(true);
      expect(Date.now()).toBeGreaterThan(at);
      const events = (await launched.evaluate(() => (globalThis as unknown as OfrepPageGlobal).ofrepPage.events)) as Array<{ type: string; flags: string[] }>;
      expect(events).toContainEqual({ type: 'changed', flags: expect.arrayContaining(['launch']) });
      expect(browser.errors).toEqual([]);
    } finally {
      await launched.close().catch(() => undefined);
      await own.close();
    }
  });

  it('changes every open page at the paced rate, in the order their streams opened', async () => {
    // Four notices a second: one page every 250 ms. Four pages hold four of Chromium's six
    // connections to the proxy's origin, the refetches share the rest.
    const own = await startHarness({ features: OFREP_FEATURES, options: { ofrep: { refetchNoticesPerSecond: 4 } } });
    const pages: Page[] = [];
    try {
      const streams = () => browser.responses.filter((r) => r.url.startsWith(`${own.base}/ofrep/v1/sse`) && r.status === 200).length;
      for (let i = 0; i < 4; i += 1) {
        const opened = await browser.open(site.url);
        pages.push(opened);
        await opened.evaluate(
          ([base, key]) => (globalThis as unknown as OfrepPageGlobal).ofrepPage.start(base as string, key as string, { targetingKey: 'erin' }),
          [own.base, CLIENT_KEY],
        );
        await expect.poll(streams, { timeout: 5000 }).toBe(i + 1);
      }
      const value = (p: Page) => p.evaluate(() => (globalThis as unknown as OfrepPageGlobal).ofrepPage.details('boolean', 'bool-on', false).value);
      for (const p of pages) expect(await value(p)).toBe(true);
      own.upstream.setEnabled('bool-on', false);
      const changedAt: Array<number | undefined> = pages.map(() => undefined);
      const deadline = Date.now() + 8000;
      while (changedAt.includes(undefined) && Date.now() < deadline) {
        for (const [i, p] of pages.entries()) if (changedAt[i] === undefined && (await value(p)) === false) changedAt[i] = Date.now();
        await new Promise((r) => setTimeout(r, 20));
      }
      const times = changedAt as number[];
      expect(times.every((t) => t !== undefined)).toBe(true);
      // One page after another, in the order their streams opened, three ticks from first to last.
      for (let i = 1; i < times.length; i += 1) expect(times[i]!, `page ${i}`).toBeGreaterThan(times[i - 1]!);
      expect(times[3]! - times[0]!).toBeGreaterThanOrEqual(600);
      for (const p of pages) {
        const events = (await p.evaluate(() => (globalThis as unknown as OfrepPageGlobal).ofrepPage.events)) as Array<{ type: string; flags: string[] }>;
        expect(events).toContainEqual({ type: 'changed', flags: expect.arrayContaining(['bool-on']) });
      }
      expect(browser.errors).toEqual([]);
    } finally {
      for (const p of pages) await p.close().catch(() => undefined);
      await own.close();
    }
  });
});
