/**
 * The Next.js example (examples/nextjs, App Router) in headless Chromium: built with `next build`
 * and served by `next start` on loopback, its page paints the signed-in user's flags before any
 * script runs (a server component asking the proxy in process, and a client component rendered
 * on the server from the bootstrap), and `@unleash/proxy-client-react` never changes them while
 * it hydrates, starts and does its first fetch through the route handler (the fetch adapter),
 * which answers the very toggles it was bootstrapped with.
 *
 * The build takes most of this file's time (about a minute on two cores). Next's webpack build
 * is used: it maps the repository's `./x.js` imports to `./x.ts` (Turbopack cannot).
 *
 * Run with `npm run test:browser` (Chromium: `.ci/setup-chromium.sh`, or CHROMIUM_PATH).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FlagBootstrap } from 'flag-proxy';
import { launchChromium, type Browser } from './chromium.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const app = path.join(root, 'examples/nextjs');
const nextBin = createRequire(import.meta.url).resolve('next/dist/bin/next');
// No telemetry, and CI mode: Next.js then never installs packages on its own.
const env: NodeJS.ProcessEnv = { ...process.env, NEXT_TELEMETRY_DISABLED: '1', CI: '1' };
delete env.FLAG_URL;

type FlagView = Record<string, { state: string; text: string }>;

/** Runs `next <args>` in the example; resolves with its output when it exits 0. */
function next(args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [nextBin, ...args], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`next ${args.join(' ')} exited ${code}:\n${output}`));
    });
  });
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const readView = (page: Page): Promise<FlagView> =>
  page.evaluate(`Object.fromEntries([...document.querySelectorAll('[data-flag], #server-flag')].map((item) => [item.dataset.flag ?? item.id, { state: item.className, text: item.textContent }]))`);

/** Records every change to the flag elements from before the first script (see express-ssr.test.ts). */
const RECORDER = `
  window.recorder = { flagMutations: [] };
  new MutationObserver((records) => {
    for (const record of records) {
      const item = (record.target instanceof Element ? record.target : record.target.parentElement)?.closest('[data-flag], #server-flag');
      if (!item) continue;
      if (record.type === 'childList' && record.removedNodes.length === 0) continue;
      window.recorder.flagMutations.push((item.dataset.flag ?? item.id) + ' ' + record.type + ' → ' + item.className + ': ' + item.textContent);
    }
  }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
`;

let browser: Browser | undefined;
let server: ChildProcess | undefined;
let base = '';

beforeAll(async () => {
  const started = Date.now();
  await next(['build', '--webpack'], 170_000);
  const port = await freePort();
  server = spawn(process.execPath, [nextBin, 'start', '-p', String(port), '-H', '127.0.0.1'], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  server.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  server.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  base = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 30_000; !/Ready in/.test(output); ) {
    if (Date.now() > deadline || server.exitCode !== null) throw new Error(`next start did not get ready:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // "Ready" is printed before the app and its proxy answer: the first page must be a 200 before
  // the browser asks (under load a page asked at once answered 404 once).
  for (const deadline = Date.now() + 30_000; ; ) {
    const status = await fetch(`${base}/`).then((res) => res.status, () => 0);
    if (status === 200) break;
    if (Date.now() > deadline) throw new Error(`next start never answered / with 200 (last: ${status}):\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  browser = await launchChromium();
  process.stdout.write(`next build + start: ${Math.round((Date.now() - started) / 1000)} s\n`);
}, 240_000);
afterAll(async () => {
  await browser?.close();
  if (server?.exitCode === null) {
    const exited = new Promise((resolve) => server!.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
});

describe('the Next.js example in Chromium', () => {
  const signIn = async (session: string): Promise<void> => {
    await browser!.context.clearCookies();
    await browser!.context.addCookies([{ name: 'session', value: session, url: base }]);
  };

  const on = (text: string) => ({ state: 'on', text });
  const off = (text: string) => ({ state: 'off', text });
  const expected: Record<string, FlagView> = {
    alice: {
      'server-flag': on('You are a beta tester (server component)'),
      'demo.welcome-banner': on('Welcome to the new look!'),
      'demo.beta-testers': on('Beta features: on'),
      'demo.eu-only': off('EU offers: none'),
    },
    bob: {
      'server-flag': off('Not a beta tester (server component)'),
      'demo.welcome-banner': on('Welcome to the new look!'),
      'demo.beta-testers': off('Beta features: off'),
      'demo.eu-only': off('EU offers: none'),
    },
  };

  it.each(['alice', 'bob'])('paints %s’s flags first, and the React SDK never changes them', async (session) => {
    await signIn(session);

    // The first paint: the server's HTML with scripts disabled.
    const still = await browser!.open(`${base}/`, {
      before: async (p) => {
        const cdp = await browser!.context.newCDPSession(p);
        await cdp.send('Emulation.setScriptExecutionDisabled', { value: true });
      },
    });
    expect(await readView(still)).toEqual(expected[session]);
    expect(await still.evaluate('typeof window.flagsPanel')).toBe('undefined');
    await still.close();

    // With scripts: hydration, the SDK's start and its first fetch change nothing.
    const errorsBefore = browser!.errors.length;
    const answers: Array<{ status: number; body: string }> = [];
    const page = await browser!.open(`${base}/`, {
      before: async (p) => {
        // Listening before the page loads: the SDK's first fetch may finish before open() returns.
        p.on('response', (response) => {
          if (new URL(response.url()).pathname !== '/api/flags/proxy') return;
          // Kept in the order the answers arrived: a 304's empty body must not overtake a slower 200's.
          const answer = { status: response.status(), body: '' };
          answers.push(answer);
          void response.text().then(
            (body) => void (answer.body = body),
            () => undefined,
          );
        });
        await p.addInitScript({ content: RECORDER });
      },
    });
    await expect.poll(() => answers.length, { timeout: 15_000 }).toBeGreaterThan(0);
    await page.waitForTimeout(2000);
    const bootstrap = (await page.evaluate('window.flagsPanel.bootstrap')) as FlagBootstrap;
    expect(await page.evaluate('window.recorder.flagMutations')).toEqual([]);
    expect(await readView(page)).toEqual(expected[session]);
    expect(await page.textContent('#sdk-state')).toBe('ready');
    expect(answers[0]!.status).toBe(200);
    expect(answers[0]!.body).toBe(JSON.stringify({ toggles: bootstrap.toggles }));
    expect(bootstrap.context).toMatchObject({ appName: 'flag-proxy', userId: session === 'alice' ? '1' : '42' });
    // No hydration mismatch or other error, and nothing left loopback.
    expect(browser!.errors.slice(errorsBefore)).toEqual([]);
    expect(browser!.external).toEqual([]);
    await page.close();
  });

  it('flickers when the React SDK starts without the bootstrap (the check above can fail)', async () => {
    await signIn('alice');
    const page = await browser!.open(`${base}/?bootstrap=off`, { before: async (p) => void (await p.addInitScript({ content: RECORDER })) });
    // Rendered without flags on the server, then changed once the SDK has fetched them.
    await expect.poll(() => readView(page), { timeout: 15_000 }).toEqual(expected.alice);
    const mutations = (await page.evaluate('window.recorder.flagMutations')) as string[];
    expect(mutations).toContain('demo.welcome-banner attributes → on: Welcome to the new look!');
    await page.close();
  });
});
