/** Readiness, close(), independence of proxies, mounting with next(), masked errors, secrets in logs. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createFlagProxy, isFlagProxyError, Strategy, type FlagProxyOptions, type Logger } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, silentLogger } from 'flag-proxy/testing';
import { CLIENT_KEY, MOUNTED, SERVER_TOKEN, eventually, feature, postJson, rawRequest, startHarness, type Harness } from '../support/harness.js';

const harnesses: Harness[] = [];
async function start(...args: Parameters<typeof startHarness>): Promise<Harness> {
  const h = await startHarness(...args);
  harnesses.push(h);
  return h;
}
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

describe('readiness', () => {
  it('answers 503 with the not-ready sentence on every gated route until the first sync, then 200', async () => {
    const upstream = await createTestFlagServer({ features: [feature('a')] });
    upstream.setFault({ status: 500, routes: 'features' });
    const h = await start({ upstream, noWait: true, options: { refreshInterval: 50, expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } } });
    try {
      const gated = ['/proxy', '/proxy/all', '/proxy/health', '/proxy/internal-backstage/prometheus', '/proxy/client/features'];
      for (const path of gated) {
        for (const key of [CLIENT_KEY, null]) {
          const res = await h.request(path, { key });
          expect(res.status).toBe(503);
          expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
          expect(await res.text()).toBe('The flag proxy has not connected to the flag API and is not ready to accept requests yet.');
        }
      }
      expect(h.proxy.isReady()).toBe(false);
      upstream.setFault(undefined);
      await h.proxy.ready;
      expect(h.proxy.isReady()).toBe(true);
      expect((await h.request('/proxy/health')).status).toBe(200);
    } finally {
      await h.close();
      harnesses.splice(harnesses.indexOf(h), 1);
      await upstream.close();
    }
  });

  it('keeps serving the last flag set with health 200 when the upstream fails after ready', async () => {
    const h = await start({ features: [feature('a')], options: { refreshInterval: 50 } });
    h.upstream.setFault({ status: 500, routes: 'features' });
    await new Promise((r) => setTimeout(r, 200));
    expect((await h.request('/proxy/health')).status).toBe(200);
    expect((await (await h.request('/proxy')).json()).toggles.map((t: { name: string }) => t.name)).toEqual(['a']);
  });

  it('shows an upstream change within one refresh interval', async () => {
    const h = await start({ features: [feature('a')], options: { refreshInterval: 100 } });
    h.upstream.upsertFeature(feature('b'));
    await eventually(async () => {
      const names = (await (await h.request('/proxy')).json()).toggles.map((t: { name: string }) => t.name);
      expect(names).toEqual(['a', 'b']);
    }, 2000);
  });
});

describe('close()', () => {
  it('stops polling, sends the last usage report, and is idempotent', async () => {
    const h = await start({ features: [feature('a')], options: { refreshInterval: 50, metricsInterval: 60_000 } });
    await h.request('/proxy', postJson({ toggles: ['a', 'a', 'a'] }));
    await h.proxy.close();
    await h.proxy.close();
    expect(h.upstream.countsFor('a')).toMatchObject({ yes: 3, no: 0 });
    const fetches = () => h.upstream.requests.filter((r) => r.path === '/api/client/features').length;
    const after = fetches();
    await new Promise((r) => setTimeout(r, 250));
    expect(fetches()).toBe(after);
  });

  it('rejects ready when closed before the first sync', async () => {
    const upstream = await createTestFlagServer();
    upstream.setFault({ status: 500 });
    const proxy = createFlagProxy({ flagUrl: upstream.url, flagApiToken: upstream.token, clientKeys: ['k'], storageProvider: createMemoryStorageProvider(), logger: silentLogger });
    await proxy.close();
    await expect(proxy.ready).rejects.toMatchObject({ code: 'NOT_READY' });
    await upstream.close();
  });
});

describe('several proxies in one process', () => {
  it('keeps flags, keys and metrics registries apart', async () => {
    const one = await start({ features: [feature('only-in-one')], options: { clientKeys: ['key-one'] } });
    const two = await start({ features: [feature('only-in-two')], options: { clientKeys: ['key-two'] } });
    const a = await (await one.request('/proxy', { key: 'key-one' })).json();
    const b = await (await two.request('/proxy', { key: 'key-two' })).json();
    expect(a.toggles.map((t: { name: string }) => t.name)).toEqual(['only-in-one']);
    expect(b.toggles.map((t: { name: string }) => t.name)).toEqual(['only-in-two']);
    expect((await one.request('/proxy', { key: 'key-two' })).status).toBe(401);
    await one.proxy.close();
    expect((await two.request('/proxy/internal-backstage/prometheus')).status).toBe(200);
    expect(await two.proxy.metrics()).toMatch(/^flag_proxy_up 1$/m);
  });
});

// node:http only: these build their own node:http host around the bare handler; every adapter's
// next()/next(err) behaviour is tested in test/adapters/.
describe.skipIf(MOUNTED)('mounted in a host (with next)', () => {
  async function host(options: Partial<FlagProxyOptions>) {
    const upstream = await createTestFlagServer({ features: [feature('a')] });
    const proxy = createFlagProxy({
      flagUrl: upstream.url,
      flagApiToken: upstream.token,
      clientKeys: [CLIENT_KEY],
      storageProvider: createMemoryStorageProvider(),
      logger: silentLogger,
      ...options,
    });
    const errors: unknown[] = [];
    const server = http.createServer((req, res) => {
      proxy(req, res, (err?: unknown) => {
        if (err) {
          errors.push(err);
          res.statusCode = 599;
          res.end('host error handler');
          return;
        }
        res.statusCode = 200;
        res.end('host route');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    await proxy.ready;
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return {
      base,
      errors,
      async close() {
        await proxy.close();
        server.closeAllConnections();
        server.close();
        await upstream.close();
      },
    };
  }

  it('passes paths outside the proxy (and their preflights) to next()', async () => {
    const h = await host({});
    try {
      expect((await rawRequest(`${h.base}/api/orders`)).body).toBe('host route');
      expect((await rawRequest(`${h.base}/api/orders`, { method: 'OPTIONS' })).body).toBe('host route');
      expect((await rawRequest(`${h.base}/proxy/unknown`)).body).toBe('host route');
      expect((await rawRequest(`${h.base}/proxy`, { headers: { authorization: CLIENT_KEY } })).status).toBe(200);
    } finally {
      await h.close();
    }
  });

  it('hands unexpected errors to next(err) with status 500 and expose false', async () => {
    const h = await host({
      expCustomEnrichers: [
        () => {
          throw new Error('enricher secret detail');
        },
      ],
    });
    try {
      const res = await rawRequest(`${h.base}/proxy`, { headers: { authorization: CLIENT_KEY } });
      expect(res.status).toBe(599);
      expect(h.errors).toHaveLength(1);
      const err = h.errors[0];
      expect(isFlagProxyError(err)).toBe(true);
      expect(err).toMatchObject({ status: 500, expose: false, code: 'INTERNAL' });
    } finally {
      await h.close();
    }
  });
});

describe('unexpected errors, standalone', () => {
  // node:http only: mounted, the error goes to the host's error handler (tested per adapter in test/adapters/).
  it.skipIf(MOUNTED)('answers a throwing enricher with a masked 500 {"error":"Internal error"} and logs it', async () => {
    const logged: string[] = [];
    const logger: Logger = { ...silentLogger, error: (m, ...a) => logged.push([m, ...a.map(String)].join(' ')) };
    const h = await start({
      features: [feature('a')],
      options: {
        logger,
        expCustomEnrichers: [
          async () => {
            throw new Error('enricher secret detail');
          },
        ],
      },
    });
    const res = await h.request('/proxy');
    expect(res.status).toBe(500);
    expect(await res.text()).toBe('{"error":"Internal error"}');
    expect(logged.join('\n')).toContain('enricher secret detail');
  });

  it('evaluates a toggle whose custom strategy throws as disabled, counts it, and keeps serving', async () => {
    class Exploding extends Strategy {
      constructor() {
        super('exploding');
      }
      override isEnabled(): boolean {
        throw new Error('boom');
      }
    }
    const h = await start({
      features: [feature('a'), feature('b', { strategies: [{ name: 'exploding', parameters: {}, constraints: [] }] as never })],
      options: { customStrategies: [new Exploding()] },
    });
    const res = await h.request('/proxy', postJson({ toggles: ['a', 'b'] }));
    expect(res.status).toBe(200);
    expect((await res.json()).toggles.map((t: { enabled: boolean }) => t.enabled)).toEqual([true, false]);
    expect((await h.request('/proxy')).status).toBe(200);
    expect(await h.proxy.metrics()).toMatch(/^flag_proxy_strategy_errors_total 2$/m);
  });
});

describe('enableOAS', () => {
  it('serves the OpenAPI document and page without a key or CORS headers, and warns about nothing', async () => {
    const warnings: string[] = [];
    const h = await start({ options: { enableOAS: true, logger: { ...silentLogger, warn: (m) => warnings.push(m) } } });
    const document = await h.request('/docs/openapi.json', { key: null });
    expect(document.status).toBe(200);
    expect(document.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(document.headers.get('access-control-allow-origin')).toBeNull();
    expect((await document.json()).paths['/proxy'].get.operationId).toBe('getToggles');
    const page = await h.request('/docs/openapi', { key: null });
    expect(page.status).toBe(200);
    const script = /src="([^"]*swagger-ui-bundle\.js)"/.exec(await page.text())?.[1];
    // Relative asset URLs: they resolve below wherever the proxy is mounted.
    const bundle = await fetch(new URL(script!, `${h.base}/docs/openapi`));
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(warnings).toEqual([]);
  });

  it('serves no docs route when it is off', async () => {
    const h = await start({});
    expect((await h.request('/docs/openapi.json')).status).toBe(404);
    expect((await h.request('/docs/openapi')).status).toBe(404);
  });
});

describe('secrets', () => {
  it('never writes the upstream token, client keys or server-side tokens to the log, at any level', async () => {
    const lines: string[] = [];
    const capture = (level: string) => (message: string, ...args: unknown[]) =>
      lines.push(`${level} ${message} ${args.map((a) => (a instanceof Error ? `${a.message} ${a.stack}` : JSON.stringify(a))).join(' ')}`);
    const logger: Logger = { debug: capture('debug'), info: capture('info'), warn: capture('warn'), error: capture('error'), fatal: capture('fatal') };
    const upstream = await createTestFlagServer({ clientTokens: ['upstream-secret-token'], features: [feature('a')] });
    const h = await start({
      upstream,
      options: {
        flagApiToken: 'upstream-secret-token',
        clientKeys: [CLIENT_KEY],
        expServerSideSdkConfig: { tokens: [SERVER_TOKEN] },
        logger,
        metricsInterval: 50,
        expCustomEnrichers: [
          (ctx) => {
            // An enricher that leaks a key into an error must still not get it logged.
            throw new Error(`bad context for ${CLIENT_KEY} via upstream-secret-token`);
          },
        ],
      },
    });
    await h.request('/proxy');
    await h.request('/proxy/client/metrics', { ...postJson({ appName: 'x', instanceId: 'i', bucket: { start: new Date().toISOString(), stop: new Date().toISOString(), toggles: { a: { yes: 1, no: 0 } } } }), key: SERVER_TOKEN });
    upstream.setFault({ status: 500 });
    await new Promise((r) => setTimeout(r, 200));
    await h.close();
    harnesses.splice(harnesses.indexOf(h), 1);
    await upstream.close();
    const all = lines.join('\n');
    expect(lines.length).toBeGreaterThan(0);
    expect(all).toContain('[REDACTED]');
    for (const secret of ['upstream-secret-token', CLIENT_KEY, SERVER_TOKEN]) expect(all).not.toContain(secret);
  });
});
