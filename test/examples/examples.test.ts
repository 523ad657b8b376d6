/**
 * Every examples/<server>/app.ts: buildApp() started on loopback (demo flags, no FLAG_URL) and
 * called as examples/README.md says. servers.test.ts runs each server.ts as a process.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { afterEach, describe, expect, it } from 'vitest';
import type { FlagProxy } from 'flag-proxy';
import { DEMO_CLIENT_KEY, exampleFlags, type ExampleFlags } from '../../examples/demo.js';
import { buildApp as buildExpress } from '../../examples/express/app.js';
import { buildApp as buildExpressSsr } from '../../examples/express-ssr/app.js';
import { buildApp as buildFastify } from '../../examples/fastify/app.js';
import { buildApp as buildHono } from '../../examples/hono/app.js';
import { buildApp as buildKoa } from '../../examples/koa/app.js';
import { buildApp as buildNodeHttp } from '../../examples/node-http/app.js';
import { checkExample } from './support.js';

let flags: ExampleFlags | undefined;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await flags?.close();
  flags = undefined;
});

/** Listens on loopback, waits for the proxy, and returns the base URL. */
async function serve(server: http.Server, proxy: FlagProxy): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    await proxy.close();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  });
  await proxy.ready;
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('examples', () => {
  it('node-http serves its own route and the proxy under /api/flags, with the userId bound to the session', async () => {
    flags = await exampleFlags({});
    const { server, proxy } = buildNodeHttp(flags.options);
    await checkExample(await serve(server, proxy));
  });

  it('express serves its own route and the proxy under /api/flags, with the userId bound to the session', async () => {
    flags = await exampleFlags({});
    const { app, proxy } = buildExpress(flags.options);
    await checkExample(await serve(http.createServer(app), proxy));
  });

  it('express-ssr serves its own route and the proxy under /api/flags, and its page with the session user’s flags', async () => {
    flags = await exampleFlags({});
    const { app, proxy } = buildExpressSsr(flags.options);
    const base = await serve(http.createServer(app), proxy);
    await checkExample(base);
    // The page is rendered with the flags: Alice (user 1) is a beta tester, a stranger is not.
    const page = async (cookie?: string): Promise<string> => {
      const res = await fetch(`${base}/`, { headers: cookie ? { cookie } : {} });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]+'/);
      return res.text();
    };
    expect(await page('session=alice')).toContain('class="on">Beta features: on</li>');
    expect(await page()).toContain('class="off">Beta features: off</li>');
    // Its script, bundled with the browser SDK.
    const script = await fetch(`${base}/assets/ssr.js`);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await script.text()).toContain('__FLAG_PROXY_BOOTSTRAP__');
  });

  it('koa serves its own route and the proxy under /api/flags, with the userId bound to the session', async () => {
    flags = await exampleFlags({});
    const { app, proxy } = buildKoa(flags.options);
    await checkExample(await serve(http.createServer(app.callback()), proxy));
  });

  it('fastify serves its own route and the proxy under /api/flags, with the userId bound to the session', async () => {
    flags = await exampleFlags({});
    const { app, proxy } = await buildFastify(flags.options);
    cleanups.push(() => app.close()); // closes the proxy too
    await app.listen({ port: 0, host: '127.0.0.1' });
    await proxy.ready;
    await checkExample(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`);
  });

  it('hono serves its own route and the proxy under /api/flags, with the userId bound to the session', async () => {
    flags = await exampleFlags({});
    const { app, proxy } = buildHono(flags.options);
    const base = await serve(createAdaptorServer({ fetch: app.fetch, overrideGlobalObjects: false }) as http.Server, proxy);
    await checkExample(base);
    // And with no server at all: Hono's own app.request().
    expect((await app.request('/api/flags/proxy', { headers: { authorization: DEMO_CLIENT_KEY } })).status).toBe(200);
  });
});
