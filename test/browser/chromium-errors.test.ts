/**
 * What the browser tests count as a page's errors. Chromium asks a site for /favicon.ico on its
 * own, once per profile and at a time of its choosing, and logs a console error when there is
 * none: counted as the page's, it failed whichever test's page happened to load first (the
 * Next.js example's test, now and then). A resource the page itself asks for and does not get
 * is still an error, named by its URL.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, type Browser } from './chromium.js';

let server: http.Server;
let base: string;
let browser: Browser | undefined;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const page = (body: string) => {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(`<!doctype html><html><head><title>t</title></head><body>${body}</body></html>`);
    };
    if (req.url === '/') return page('<p>no favicon here</p>');
    if (req.url === '/with-missing-image') return page('<img src="/missing.png" alt="">');
    res.statusCode = 404;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => server.close(resolve));
});

describe('errors recorded from Chromium pages', () => {
  it('does not count the favicon Chromium asks for by itself', async () => {
    const page = await browser!.open(`${base}/`);
    // The favicon request and its console error come after the load.
    await page.waitForTimeout(1000);
    await page.close();
    expect(browser!.errors).toEqual([]);
  });

  it('counts a resource the page asks for and does not get, with its URL', async () => {
    const page = await browser!.open(`${base}/with-missing-image`);
    await expect.poll(() => browser!.errors.length, { timeout: 5000 }).toBeGreaterThan(0);
    await page.close();
    expect(browser!.errors).toEqual([`${base}/with-missing-image: Failed to load resource: the server responded with a status of 404 (Not Found) (${base}/missing.png)`]);
  });
});
