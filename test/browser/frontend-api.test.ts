/**
 * The Unleash browser SDK (`unleash-proxy-client`) and the OpenFeature Unleash web provider
 * (`@openfeature/unleash-web-provider` on `@openfeature/web-sdk`) in headless Chromium, configured
 * as for Unleash Edge: `url: <proxy>/api/frontend`. The page comes from one loopback origin and
 * the proxy answers on another, so every request is cross-origin and preflighted. Both get the
 * flags `/proxy` answers for the same context, and the SDK's usage report reaches the flag server.
 *
 * One page, one browser: kept small, as Chromium is slow. Run with `npm run test:browser`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFlagProxy, type FlagProxy } from 'flag-proxy';
import type { TestFlagServer } from 'flag-proxy/testing';
import { CLIENT_KEY, FLAGS, proxyOptions, serveLogged, startUpstream, type LoggedRequest, type LoggedServer } from '../e2e/sdk-fixtures.js';
import { eventually } from '../support/harness.js';
import { launchChromium, type Browser } from './chromium.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The page's script: both clients, started by the test through `window`. */
const ENTRY = `
import { UnleashClient } from 'unleash-proxy-client';
import { OpenFeature } from '@openfeature/web-sdk';
import { UnleashWebProvider } from '@openfeature/unleash-web-provider';

window.runSdk = async (url, clientKey, context, usePOSTrequests, metered) => {
  const client = new UnleashClient({ url, clientKey, appName: 'edge-browser', refreshInterval: 60, metricsInterval: 60, usePOSTrequests, context });
  const ready = new Promise((resolve) => client.once('ready', resolve));
  await client.start();
  await ready;
  const toggles = client.getAllToggles();
  for (let i = 0; i < metered; i += 1) client.isEnabled('sdk.metered');
  if (metered > 0) await client.sendMetrics();
  client.stop();
  return toggles;
};

// Starts the SDK polling by POST every 200 ms, lets it poll for \`ms\`, and says what it held and heard.
window.pollByPost = async (url, clientKey, context, ms) => {
  const client = new UnleashClient({ url, clientKey, appName: 'edge-browser', refreshInterval: 0.2, metricsInterval: 60, usePOSTrequests: true, context });
  const ready = new Promise((resolve) => client.once('ready', resolve));
  await client.start();
  await ready;
  const first = client.getAllToggles();
  // Heard from the first answer on: its own arrival is an update.
  const heard = [];
  for (const name of ['update', 'error']) client.on(name, () => heard.push(name));
  await new Promise((resolve) => setTimeout(resolve, ms));
  client.stop();
  return { first, last: client.getAllToggles(), heard };
};

window.runOpenFeature = async (url, clientKey, context, names) => {
  await OpenFeature.setProviderAndWait(new UnleashWebProvider({ url, clientKey, appName: 'edge-browser', context, disableMetrics: true, refreshInterval: 60 }));
  const client = OpenFeature.getClient();
  const values = {};
  for (const name of names) values[name] = client.getBooleanValue(name, false);
  values['sdk.json-payload:object'] = client.getObjectValue('sdk.json-payload', {});
  await OpenFeature.close();
  return values;
};
`;

interface PageGlobal {
  runSdk(url: string, key: string, context: object, post: boolean, metered: number): Promise<unknown[]>;
  runOpenFeature(url: string, key: string, context: object, names: string[]): Promise<Record<string, unknown>>;
  pollByPost(url: string, key: string, context: object, ms: number): Promise<{ first: unknown[]; last: unknown[]; heard: string[] }>;
}

let browser: Browser | undefined;
let upstream: TestFlagServer;
let proxy: FlagProxy;
let api: LoggedServer;
let pages: http.Server;
let page: Page;
const log: LoggedRequest[] = [];

beforeAll(async () => {
  const bundled = await build({ stdin: { contents: ENTRY, resolveDir: root, loader: 'js' }, bundle: true, format: 'iife', platform: 'browser', write: false, logLevel: 'silent' });
  const script = bundled.outputFiles[0]!.text;
  pages = http.createServer((req, res) => {
    if (req.url === '/app.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    else res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>edge clients</title><script src="/app.js"></script>');
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  upstream = await startUpstream();
  proxy = createFlagProxy(proxyOptions(upstream));
  api = await serveLogged('api', proxy, log);
  await proxy.ready;
  browser = await launchChromium();
  page = await browser.open(`http://127.0.0.1:${(pages.address() as AddressInfo).port}/`);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await proxy?.close();
  await api?.close();
  pages?.closeAllConnections();
  await new Promise<void>((resolve) => (pages ? pages.close(() => resolve()) : resolve()));
  await upstream?.close();
});

/** What `/proxy` answers for the context the SDK sends (it adds its appName and environment). */
async function viaProxy(context: { userId: string; sessionId: string }): Promise<unknown[]> {
  const query = new URLSearchParams({ ...context, appName: 'edge-browser', environment: 'default' });
  const res = await fetch(`${api.origin}/proxy?${query}`, { headers: { authorization: CLIENT_KEY } });
  return ((await res.json()) as { toggles: unknown[] }).toggles;
}

describe('Edge-configured clients in Chromium against /api/frontend', () => {
  it('unleash-proxy-client holds the toggles of /proxy (GET and POST), through real preflights, and its usage report arrives', async () => {
    const url = `${api.origin}/api/frontend`;
    for (const [userId, post] of [['1', false], ['7', true]] as const) {
      const context = { userId, sessionId: `s-${userId}` };
      const toggles = await page.evaluate(([u, k, c, p]) => (globalThis as unknown as PageGlobal).runSdk(u, k, c, p, 0), [url, CLIENT_KEY, context, post] as const);
      expect(toggles).toEqual(await viaProxy(context));
    }
    await page.evaluate(([u, k]) => (globalThis as unknown as PageGlobal).runSdk(u, k, { userId: '2', sessionId: 's' }, false, 3), [url, CLIENT_KEY] as const);
    await eventually(() => expect(upstream.countsFor('sdk.metered').yes).toBe(3), 10_000);
    const preflights = log.filter((r) => r.method === 'OPTIONS' && r.path.startsWith('/api/frontend'));
    expect(preflights.map((r) => r.status)).toContain(204);
    expect(log.some((r) => r.method === 'POST' && r.path === '/api/frontend/client/metrics' && r.status === 202)).toBe(true);
    expect(browser!.external).toEqual([]);
  }, 60_000);

  it('unleash-proxy-client polling by POST sends its ETag back and is answered 304, as by Edge: the same toggles, no update, no error', async () => {
    const context = { userId: '7', sessionId: 's-post-poll' };
    const from = log.length;
    const result = await page.evaluate(([u, k, c]) => (globalThis as unknown as PageGlobal).pollByPost(u, k, c, 1500), [
      `${api.origin}/api/frontend`,
      CLIENT_KEY,
      context,
    ] as const);
    expect(result.first).toEqual(await viaProxy(context));
    expect(result.last).toEqual(result.first);
    expect(result.heard).toEqual([]);
    const posts = log.slice(from).filter((r) => r.method === 'POST' && r.path === '/api/frontend');
    expect(posts[0]!.status).toBe(200);
    const notModified = posts.filter((r) => r.status === 304);
    expect(notModified.length).toBeGreaterThanOrEqual(3);
    for (const poll of notModified) expect(poll.headers['if-none-match']).toBe(posts[0]!.responseHeaders?.etag);
    expect(browser!.errors).toEqual([]);
  }, 60_000);

  it('the OpenFeature Unleash web provider evaluates the same flags', async () => {
    const context = { userId: '1', sessionId: 's-of' };
    const names = FLAGS.map((f) => f.name).filter((name) => !name.startsWith('sdk.metered'));
    const values = await page.evaluate(([u, k, c, n]) => (globalThis as unknown as PageGlobal).runOpenFeature(u, k, c, n), [
      `${api.origin}/api/frontend`,
      CLIENT_KEY,
      context,
      names,
    ] as const);
    const enabled = new Set(((await viaProxy(context)) as Array<{ name: string }>).map((t) => t.name));
    expect(Object.fromEntries(names.map((name) => [name, values[name]]))).toEqual(Object.fromEntries(names.map((name) => [name, enabled.has(name)])));
    // The provider hands a json payload on as the string it was served.
    expect(values['sdk.json-payload:object']).toBe('{"limit":3,"theme":"dark"}');
    expect(browser!.errors).toEqual([]);
  }, 60_000);
});
