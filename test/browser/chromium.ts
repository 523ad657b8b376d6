/**
 * Headless Chromium for the SDK browser tests: Debian's (or CHROMIUM_PATH), driven by
 * playwright-core, with a fresh profile that is removed on close. Nothing is downloaded.
 *
 * No request interception (`route()`): with it, Playwright answers CORS preflights itself and the
 * server never sees them. Instead, every host name but localhost resolves to nothing, so a page
 * cannot reach a CDN, and the requests pages make are recorded for the tests to check.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1',
];

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** A browser and what its pages did. */
export interface Browser {
  context: BrowserContext;
  /** Opens a page that records its errors, its requests outside loopback, and its responses. */
  open(url: string, options?: { viewport?: { width: number; height: number }; before?: (page: Page) => Promise<void> }): Promise<Page>;
  /** Requests any page made outside loopback (there must be none). */
  external: string[];
  /**
   * Uncaught errors and console errors, with the page URL (and the URL of a resource that failed
   * to load). Not the favicon Chromium asks for by itself.
   */
  errors: string[];
  /** Every response any page received: method, URL, status. */
  responses: Array<{ method: string; url: string; status: number }>;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: run .ci/setup-chromium.sh, or set CHROMIUM_PATH`);
  const profile = mkdtempSync(path.join(tmpdir(), 'flag-proxy-sdk-chromium-'));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true, timeout: 30_000 });
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    throw error;
  }
  const external: string[] = [];
  const errors: string[] = [];
  const responses: Browser['responses'] = [];
  context.on('request', (request) => {
    const url = new URL(request.url());
    if (url.protocol !== 'data:' && !LOOPBACK.has(url.hostname)) external.push(url.href);
  });
  context.on('response', (response) => responses.push({ method: response.request().method(), url: response.url(), status: response.status() }));
  return {
    context,
    external,
    errors,
    responses,
    async open(url, options = {}) {
      const page = await context.newPage();
      if (options.viewport) await page.setViewportSize(options.viewport);
      await options.before?.(page);
      page.on('pageerror', (error) => errors.push(`${url}: ${error.message}`));
      page.on('console', (message) => {
        if (message.type() !== 'error') return;
        // A resource that failed to load is named by its URL (the text does not say which).
        const resource = message.location().url;
        // Chromium asks for /favicon.ico by itself, once per profile, whenever it gets to it:
        // not the page's doing, and a site without one is not at fault.
        if (resource && resource !== url && URL.canParse(resource) && new URL(resource).pathname === '/favicon.ico') return;
        errors.push(`${url}: ${message.text()}${resource && resource !== url ? ` (${resource})` : ''}`);
      });
      const response = await page.goto(url);
      if (response?.status() !== 200) throw new Error(`${url} answered ${response?.status()}`);
      return page;
    },
    async close() {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
