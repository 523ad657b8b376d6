/**
 * Server-side rendering in headless Chromium: the Express SSR example (examples/express-ssr) paints
 * the signed-in user's flags before any script runs, and the browser SDK, started from the
 * page's bootstrap, never changes them: no DOM mutation in the flag list while it starts, does
 * its first fetch (answered with the very toggles it was bootstrapped with) and polls (304).
 * Started without the bootstrap, the same page flickers, so the check can fail.
 *
 * Also: `bootstrapScript` with hostile flag names and payloads, parsed by Chromium's HTML parser
 * under a nonce CSP.
 *
 * Run with `npm run test:browser` (Chromium: `.ci/setup-chromium.sh`, or CHROMIUM_PATH).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapScript, createFlagProxy, type FeatureDefinition, type FlagBootstrap, type FlagProxy } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer } from 'flag-proxy/testing';
import { exampleFlags, type ExampleFlags } from '../../examples/demo.js';
import { buildApp } from '../../examples/express-ssr/app.js';
import { launchChromium, type Browser } from './chromium.js';

/** What an example page's flag list shows: flag name → `on` / `off` and its text. */
type FlagView = Record<string, { state: string; text: string }>;

/** What the page records from before its first script runs (installed with addInitScript). */
interface Recorder {
  flagMutations: string[];
}

let browser: Browser | undefined;
beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

// Page-side code as source text: this project type-checks without the DOM library.
const readView = (page: Page): Promise<FlagView> =>
  page.evaluate(`Object.fromEntries([...document.querySelectorAll('[data-flag]')].map((item) => [item.dataset.flag, { state: item.className, text: item.textContent }]))`);

/**
 * Records every change to the flag list from before the page's first script: text replaced,
 * class changed. The parser's own insertions (nothing removed) are not changes.
 */
const RECORDER = `
  window.recorder = { flagMutations: [] };
  new MutationObserver((records) => {
    for (const record of records) {
      const item = (record.target instanceof Element ? record.target : record.target.parentElement)?.closest('[data-flag]');
      if (!item) continue;
      if (record.type === 'childList' && record.removedNodes.length === 0) continue;
      window.recorder.flagMutations.push(item.dataset.flag + ' ' + record.type + ' → ' + item.className + ': ' + item.textContent);
    }
  }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
`;

describe('the Express SSR example in Chromium', () => {
  let flags: ExampleFlags;
  let proxy: FlagProxy;
  let server: http.Server;
  let base: string;

  beforeAll(async () => {
    flags = await exampleFlags({});
    const built = buildApp(flags.options);
    proxy = built.proxy;
    server = http.createServer(built.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await proxy.ready;
  });
  afterAll(async () => {
    await proxy?.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    await flags?.close();
  });

  /** Signs `session` in (or out) for the next page loads; the `sid` cookie starts afresh. */
  const signIn = async (session: string | undefined): Promise<void> => {
    await browser!.context.clearCookies();
    if (session) await browser!.context.addCookies([{ name: 'session', value: session, url: base }]);
  };

  /** The page with scripts disabled: exactly what the server rendered, the first paint. */
  const firstPaint = async (): Promise<FlagView> => {
    const page = await browser!.open(`${base}/`, {
      before: async (p) => {
        const cdp = await browser!.context.newCDPSession(p);
        await cdp.send('Emulation.setScriptExecutionDisabled', { value: true });
      },
    });
    try {
      // The page's own scripts did not run: neither the bootstrap nor the SDK.
      expect(await page.evaluate('[typeof window.__FLAG_PROXY_BOOTSTRAP__, typeof window.flagPage]')).toEqual(['undefined', 'undefined']);
      expect(await page.textContent('#sdk-state')).toBe('not started');
      return await readView(page);
    } finally {
      await page.close();
    }
  };

  /**
   * The page with scripts, watched from before its first script: every change to the flag list
   * (text replaced, class changed; the parser's own insertions are not changes), the SDK's
   * requests to the proxy and their answers, for `watchMs` after the SDK's first answer.
   */
  const withSdk = async (query: string, watchMs: number) => {
    const proxyAnswers: Array<{ status: number; body: string; ifNoneMatch: string | undefined; etag: string | undefined }> = [];
    // Listening before the page loads: the SDK's first fetch may finish before open() returns.
    const record = (p: Page): void => {
      p.on('response', (response) => {
        // The toggle fetches (not the usage reports to /api/flags/proxy/client/metrics).
        if (new URL(response.url()).pathname !== '/api/flags/proxy') return;
        const ifNoneMatch = response.request().headers()['if-none-match'];
        // Kept in the order the answers arrived: a 304's empty body must not overtake a slower 200's.
        const answer = { status: response.status(), body: '', ifNoneMatch, etag: response.headers()['etag'] };
        proxyAnswers.push(answer);
        void response.text().then(
          (body) => void (answer.body = body),
          () => undefined,
        );
      });
    };
    const page = await browser!.open(`${base}/${query}`, {
      before: async (p) => {
        record(p);
        await p.addInitScript({ content: RECORDER });
      },
    });
    // The SDK's first fetch has an answer, and then some polls.
    await expect.poll(() => proxyAnswers.length, { timeout: 10_000 }).toBeGreaterThan(0);
    await page.waitForTimeout(watchMs);
    const bootstrap = await page.evaluate(() => (globalThis as unknown as { __FLAG_PROXY_BOOTSTRAP__: FlagBootstrap }).__FLAG_PROXY_BOOTSTRAP__);
    const mutations = await page.evaluate(() => (globalThis as unknown as { recorder: Recorder }).recorder.flagMutations);
    const view = await readView(page);
    const sdkState = await page.textContent('#sdk-state');
    await page.evaluate(() => (globalThis as unknown as { flagPage: { client: { stop(): void } } }).flagPage.client.stop());
    await page.close();
    return { bootstrap, mutations, view, sdkState, proxyAnswers };
  };

  const on = (text: string) => ({ state: 'on', text });
  const off = (text: string) => ({ state: 'off', text });
  const expected: Record<string, FlagView> = {
    alice: {
      'demo.welcome-banner': on('Welcome to the new look!'),
      'demo.beta-testers': on('Beta features: on'),
      'demo.eu-only': off('EU offers: none'),
    },
    bob: {
      'demo.welcome-banner': on('Welcome to the new look!'),
      'demo.beta-testers': off('Beta features: off'),
      'demo.eu-only': off('EU offers: none'),
    },
  };

  it.each(['alice', 'bob'])('paints %s’s flags first, and the SDK never changes them', async (session) => {
    await signIn(session);
    expect(await firstPaint()).toEqual(expected[session]);

    const run = await withSdk('?refresh=1', 2500);
    expect(run.mutations).toEqual([]);
    expect(run.view).toEqual(expected[session]);
    expect(run.sdkState).toBe('ready');
    // The SDK's first request got a full answer (its ETag starts empty): the bootstrap's bytes.
    const [first, ...polls] = run.proxyAnswers;
    expect(first!.status).toBe(200);
    expect(first!.ifNoneMatch).toBeUndefined();
    expect(first!.body).toBe(JSON.stringify({ toggles: run.bootstrap.toggles }));
    // Its ETag is the bootstrap's with the tag of the context the hook built after it, so the
    // polls that send it back are answered 304 before anything is evaluated.
    expect(first!.etag).toMatch(/^W\/"[^"]+\.[A-Za-z0-9_-]{22}"$/);
    expect(first!.etag!.replace(/\.[A-Za-z0-9_-]{22}"$/, '"')).toBe(run.bootstrap.etag);
    expect(polls.length).toBeGreaterThan(0);
    for (const poll of polls) expect([poll.status, poll.ifNoneMatch]).toEqual([304, first!.etag]);
    // The nonce CSP let the bootstrap and the page script run, and nothing failed or left loopback.
    expect(browser!.errors).toEqual([]);
    expect(browser!.external).toEqual([]);
  });

  it('the user’s own context reaches the SDK: the session id it keeps and the user the server bound', async () => {
    await signIn('alice');
    const run = await withSdk('', 200);
    expect(run.bootstrap.context).toMatchObject({ appName: 'flag-proxy', userId: '1', remoteAddress: '127.0.0.1' });
    const sid = (await browser!.context.cookies(base)).find((c) => c.name === 'sid')?.value;
    expect(run.bootstrap.context.sessionId).toBe(sid);
  });

  it('flickers when the SDK starts without the bootstrap (the check above can fail)', async () => {
    await signIn('alice');
    const run = await withSdk('?bootstrap=off&refresh=1', 1000);
    expect(run.mutations.length).toBeGreaterThan(0);
    expect(run.mutations[0]).toMatch(/^demo\.welcome-banner .* → off: Welcome\.$/);
    // In the end the fetched state is the server's again.
    expect(run.view).toEqual(expected.alice);
  });

  it('still serves the app’s own route and the proxy under /api', async () => {
    expect(await (await fetch(`${base}/api/hello`, { headers: { cookie: 'session=alice' } })).json()).toEqual({ hello: 'Alice' });
    expect((await fetch(`${base}/api/flags/proxy/health`)).status).toBe(200);
  });
});

describe('bootstrapScript in Chromium', () => {
  const NONCE = 'bm9uY2UtZm9yLXRlc3Q=';
  const HOSTILE = `</script><script nonce="${NONCE}">window.pwned=1</script><!--`;
  const features = [
    { name: HOSTILE, enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [] }], variants: [] },
    {
      name: 'payload\u2028line</SCRIPT >',
      enabled: true,
      strategies: [{ name: 'default', parameters: {}, constraints: [] }],
      variants: [{ name: 'v</script>', weight: 1000, weightType: 'variable', stickiness: 'default', payload: { type: 'string', value: `${HOSTILE}\u2029&amp;<!-- -->` } }],
    },
  ] as unknown as FeatureDefinition[];

  it('keeps hostile flag names and payloads inside the element, under a nonce CSP', async () => {
    const upstream = await createTestFlagServer({ features });
    const proxy = createFlagProxy({ flagUrl: upstream.url, flagApiToken: upstream.token, clientKeys: ['k'], storageProvider: createMemoryStorageProvider(), metricsInterval: 0 });
    try {
      await proxy.ready;
      const data = proxy.bootstrap({ userId: HOSTILE, properties: { note: '\u2028</script>' } });
      expect(data.toggles.map((t) => t.name).sort()).toEqual(features.map((f) => f.name).sort());
      const html = `<!doctype html><html><head>
<meta http-equiv="Content-Security-Policy" content="script-src 'nonce-${NONCE}'">
${bootstrapScript(data, { nonce: NONCE })}
<script>window.unnonced = 1</script>
</head><body><p id="after">after</p></body></html>`;
      const page = await browser!.context.newPage();
      try {
        await page.setContent(html);
        const seen = await page.evaluate(`({
          data: window.__FLAG_PROXY_BOOTSTRAP__,
          pwned: window.pwned ?? null,
          unnonced: window.unnonced ?? null,
          scripts: document.scripts.length,
          after: document.getElementById('after')?.textContent ?? null,
          comments: document.createNodeIterator(document, NodeFilter.SHOW_COMMENT).nextNode() === null ? 0 : 1,
        })`);
        // The data arrived whole; nothing broke out (no injected script ran, no comment swallowed
        // the rest of the page); and the CSP is enforced (the script without the nonce did not run).
        expect(seen).toEqual({ data: JSON.parse(JSON.stringify(data)), pwned: null, unnonced: null, scripts: 2, after: 'after', comments: 0 });
      } finally {
        await page.close();
      }
    } finally {
      await proxy.close();
      await upstream.close();
    }
  });
});
