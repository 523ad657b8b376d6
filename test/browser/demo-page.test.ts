/**
 * The Express example's demo page (`GET /`) in headless Chromium, as people see it:
 *
 * 1. The example as `npx tsx examples/express/server.ts` runs it (its demo flags, same origin):
 *    the table follows the userId and region typed into the form, a signed-in session overrides
 *    the typed userId, and the page is left as a screenshot (docs/demo-page.png with UPDATE_SCREENSHOTS=1).
 * 2. The page pointed with `?proxy=` at another proxy, as after `npm start` (a standalone proxy
 *    with the CLI's demo flags and key, on another origin): every row, variant and payload as the
 *    flag server's own SDK evaluates them.
 *
 * Run with `npm run test:browser` (Chromium: `.ci/setup-chromium.sh`, or CHROMIUM_PATH).
 */
import { statSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Unleash } from 'unleash-client';
import { createFlagProxy, type FlagProxy } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { demoFlags, DEMO_CLIENT_KEY, DEMO_UPSTREAM_TOKEN } from '../../src/demo/flags.js';
import { exampleFlags, type ExampleFlags } from '../../examples/demo.js';
import { buildApp } from '../../examples/express/app.js';
import { eventually, serveLogged, silentLogger, startOracle, type LoggedRequest, type LoggedServer } from '../e2e/sdk-fixtures.js';
import { launchChromium, type Browser } from './chromium.js';
import { screenshotPath } from './screenshots.js';

const SCREENSHOT = screenshotPath('demo-page.png');
/** A fixed clock, so the "updated" time in the screenshot is the same on every run. */
const FIXED_TIME = new Date('2025-06-02T10:30:00');

let browser: Browser | undefined;
let flags: ExampleFlags | undefined;
let example: { proxy: FlagProxy; server: LoggedServer } | undefined;
const log: LoggedRequest[] = [];

beforeAll(async () => {
  browser = await launchChromium();
  flags = await exampleFlags({});
  const { app, proxy } = buildApp({ ...flags.options, logger: silentLogger });
  example = { proxy, server: await serveLogged('example', app, log) };
  await proxy.ready;
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await example?.proxy.close();
  await example?.server.close();
  await flags?.close();
});

/** The table as the page shows it: flag → [state, variant, payload]. */
async function table(page: Page): Promise<Record<string, string[]>> {
  // Runs in the page (no DOM types here): each row's flag name, then its cells but the first.
  const rows: string[][] = await page
    .locator('#flags tbody tr[data-flag]')
    .evaluateAll((trs: any[]) => trs.map((tr) => [tr.dataset.flag, ...Array.from(tr.cells as ArrayLike<any>, (td) => String(td.textContent).trim()).slice(1)]));
  return Object.fromEntries(rows.map(([name, ...cells]) => [name, cells]));
}

/** Fills the form and waits until the table shows `flag` in `state`. */
async function ask(page: Page, userId: string, region: string, flag: string, state: 'on' | 'off'): Promise<void> {
  await page.fill('#userId', userId);
  await page.selectOption('#region', region);
  await page.click('button[type=submit]');
  await page.locator(`#flags tr[data-flag="${flag}"][data-state="${state}"]`).waitFor({ timeout: 10_000 });
}

describe('the Express example demo page', () => {
  it('shows the flags for the userId and region in the form, and leaves a screenshot', async () => {
    const base = example!.server.origin;
    const page = await browser!.open(`${base}/`, { viewport: { width: 760, height: 470 }, before: (p) => p.clock.setFixedTime(FIXED_TIME) });
    try {
      await page.locator('#flags tr[data-flag="demo.welcome-banner"][data-state="on"]').waitFor({ timeout: 10_000 });
      expect(await page.locator('#proxy-url').innerText()).toBe('/api/flags/proxy');
      expect(await table(page)).toEqual({ 'demo.welcome-banner': ['on', '–', '–'] });
      expect(await page.locator('#status').innerText()).toContain('1 flag on for userId (none)');

      await ask(page, '1', 'eu', 'demo.beta-testers', 'on');
      expect(await table(page)).toEqual({
        'demo.beta-testers': ['on', '–', '–'],
        'demo.eu-only': ['on', '–', '–'],
        'demo.welcome-banner': ['on', '–', '–'],
      });
      expect(new URL(page.url()).search).toBe('?userId=1&region=eu');
      // Each context was asked of the proxy, through the SDK, with the context in the query.
      const asked = log.filter((r) => r.method === 'GET' && r.path === '/api/flags/proxy').map((r) => [r.query.get('userId'), r.query.get('properties[region]')]);
      expect(asked).toContainEqual(['1', 'eu']);

      // User 42 is no beta tester: the row stays, marked off.
      await ask(page, '42', 'eu', 'demo.beta-testers', 'off');
      expect(await table(page)).toEqual({
        'demo.beta-testers': ['off', '–', '–'],
        'demo.eu-only': ['on', '–', '–'],
        'demo.welcome-banner': ['on', '–', '–'],
      });
      const status = await page.locator('#status').innerText();
      expect(status).toContain('2 flags on for userId 42, region eu');
      expect(status).toContain(FIXED_TIME.toLocaleTimeString('en-US'));

      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      expect(statSync(SCREENSHOT).size).toBeLessThan(200_000);
      expect(browser!.external).toEqual([]);
      expect(browser!.errors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("binds the userId to the app's session: a signed-in user cannot show another user's flags", async () => {
    const base = example!.server.origin;
    // Bob (user 42) is signed in; the page asks for user 1, a beta tester.
    await browser!.context.addCookies([{ name: 'session', value: 'bob', url: base }]);
    try {
      const page = await browser!.open(`${base}/?userId=1`);
      try {
        await page.locator('#flags tr[data-flag="demo.welcome-banner"][data-state="on"]').waitFor({ timeout: 10_000 });
        expect(Object.keys(await table(page))).toEqual(['demo.welcome-banner']);
        expect(await page.inputValue('#userId')).toBe('1');
      } finally {
        await page.close();
      }
    } finally {
      await browser!.context.clearCookies();
    }
  });
});

describe('the demo page with a key the proxy does not accept', () => {
  it("says so from the SDK's error event, instead of waiting", async () => {
    const page = await browser!.open(`${example!.server.origin}/?key=not-a-key`);
    try {
      await page.locator('#status.error').waitFor({ timeout: 5000 });
      expect(await page.locator('#status').innerText()).toBe('The proxy answered 401 (check the client key).');
      expect(await page.locator('#flags tbody tr[data-flag]').count()).toBe(0);
    } finally {
      await page.close();
    }
  });
});

describe('the demo page pointed at another proxy with ?proxy= (as after `npm start`)', () => {
  let upstream: TestFlagServer;
  let oracle: Unleash;
  let proxy: FlagProxy;
  let cli: LoggedServer;
  const cliLog: LoggedRequest[] = [];

  beforeAll(async () => {
    // What the CLI starts in demo mode: the demo flags, the demo key, the proxy at the root.
    upstream = await createTestFlagServer({ features: demoFlags, clientTokens: [DEMO_UPSTREAM_TOKEN] });
    oracle = await startOracle(upstream);
    proxy = createFlagProxy({
      flagUrl: upstream.url,
      flagApiToken: DEMO_UPSTREAM_TOKEN,
      clientKeys: [DEMO_CLIENT_KEY],
      storageProvider: createMemoryStorageProvider(),
      logger: silentLogger,
    });
    cli = await serveLogged('cli', (req, res) => proxy(req, res), cliLog);
    await proxy.ready;
  });
  afterAll(async () => {
    oracle?.destroy();
    await proxy?.close();
    await cli?.close();
    await upstream?.close();
  });

  it('shows every flag, variant and payload as the flag server evaluates them, with the demo key', async () => {
    const target = `${cli.origin}/proxy`;
    const query = new URLSearchParams({ proxy: target, userId: '2', region: 'eu' });
    const page = await browser!.open(`${example!.server.origin}/?${query}`);
    try {
      await page.locator('#flags tr[data-flag="demo.welcome-banner"][data-state="on"]').waitFor({ timeout: 10_000 });
      expect(await page.locator('#proxy-url').innerText()).toBe(target);
      const context = { userId: '2', properties: { region: 'eu' } };
      const expected: Record<string, string[]> = {};
      for (const { name } of demoFlags) {
        if (!oracle.isEnabled(name, context)) continue; // never sent to the browser, so never listed
        const variant = oracle.getVariant(name, context);
        const named = variant.name !== 'disabled';
        expected[name] = ['on', named ? variant.name : '–', named && variant.payload ? `${variant.payload.type}: ${variant.payload.value}` : '–'];
      }
      expect(Object.keys(expected)).toEqual(expect.arrayContaining(['demo.beta-testers', 'demo.eu-only', 'demo.checkout-button']));
      await eventually(async () => expect(await table(page)).toEqual(expected), 5000);
      // Cross-origin, with the demo key (never the example's own key), after a preflight.
      const polls = cliLog.filter((r) => r.method === 'GET' && r.path === '/proxy');
      expect(polls[0]?.headers.authorization).toBe(DEMO_CLIENT_KEY);
      expect(polls[0]?.headers.origin).toBe(example!.server.origin);
      expect(cliLog.some((r) => r.method === 'OPTIONS' && r.path === '/proxy' && r.status === 204)).toBe(true);
      expect(browser!.external).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
