/**
 * The interactive OpenAPI page in a real browser (headless Chromium through playwright-core),
 * offline: every request outside loopback is blocked and recorded, and must not happen. The page
 * must render the proxy's operations and run one ("Try it out" on the health route). Leaves a
 * screenshot (docs/openapi-page.png with UPDATE_SCREENSHOTS=1).
 *
 * Run with `npm run test:browser` (not part of `npm test`). Needs Chromium: `.ci/setup-chromium.sh`
 * installs Debian's; CHROMIUM_PATH overrides /usr/bin/chromium.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feature, startHarness, type Harness } from '../support/harness.js';
import { screenshotPath } from './screenshots.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

let h: Harness | undefined;
let context: BrowserContext | undefined;
let profile: string | undefined;
/** Requests the page tried to make outside loopback (all blocked). */
const external: string[] = [];
/** Uncaught errors and console errors of the page. */
const pageErrors: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: run .ci/setup-chromium.sh, or set CHROMIUM_PATH`);
  h = await startHarness({
    features: [feature('new-checkout')],
    options: { enableOAS: true, proxyBasePath: '/flags', enableAllEndpoint: true },
  });
  profile = mkdtempSync(path.join(tmpdir(), 'flag-proxy-chromium-'));
  context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: ARGS, headless: true, viewport: { width: 1280, height: 1400 } });
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === 'data:' || LOOPBACK.has(url.hostname)) return route.continue();
    external.push(url.href);
    return route.abort();
  });
}, 60_000);

afterAll(async () => {
  await context?.close().catch(() => undefined);
  if (profile) rmSync(profile, { recursive: true, force: true });
  await h?.close();
});

async function open(pagePath: string): Promise<Page> {
  const page = await context!.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') pageErrors.push(message.text());
  });
  const response = await page.goto(`${h!.base}${pagePath}`);
  expect(response?.status()).toBe(200);
  await page.locator('.opblock-summary-path').first().waitFor({ timeout: 20_000 });
  return page;
}

describe('the OpenAPI page in headless Chromium', () => {
  it('renders every operation offline, from assets the proxy serves, and leaves a screenshot', async () => {
    const page = await open('/docs/openapi');
    const paths = await page.locator('.opblock-summary-path').allInnerTexts();
    const cleaned = paths.map((p) => p.replace(/\u200b/g, '').trim());
    for (const route of ['/proxy', '/proxy/all', '/proxy/client/metrics', '/proxy/client/register', '/proxy/client/features', '/proxy/health', '/proxy/internal-backstage/prometheus', '/ofrep/v1/evaluate/flags', '/ofrep/v1/evaluate/flags/{key}', '/ofrep/v1/sse']) {
      expect(cleaned).toContain(route);
    }
    expect(await page.locator('.info .title').innerText()).toContain('flag-proxy');
    expect(await page.locator('.servers select, .servers').first().innerText()).toContain('/flags');
    const screenshot = screenshotPath('openapi-page.png');
    await page.screenshot({ path: screenshot });
    expect(readFileSync(screenshot).subarray(1, 4).toString()).toBe('PNG');
    expect(external).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);

  it('runs an operation with "Try it out" against the proxy itself', async () => {
    const page = await open('/docs/openapi/');
    const operation = page.locator('#operations-Operations-getHealth');
    await operation.locator('.opblock-summary').click();
    await operation.locator('button.try-out__btn').click();
    await operation.locator('button.execute').click();
    const live = operation.locator('.live-responses-table');
    await live.waitFor({ timeout: 20_000 });
    const answer = live.locator('tbody .response');
    expect((await answer.locator('.response-col_status').innerText()).trim()).toBe('200');
    expect(await answer.locator('.response-col_description').innerText()).toMatch(/Response body\s+(?:Download\s+)?ok\s/);
    expect(external).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);
});
