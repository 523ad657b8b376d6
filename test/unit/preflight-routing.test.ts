/**
 * Preflights are matched to the route they ask about: answered where the proxy owns the path,
 * recorded on that route, and handed to the host (mounted) where the path is not the proxy's.
 * Preflights on the route table's own paths take a table made when the proxy is created; these
 * tests hold that table to what matching each request would give.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createFlagProxy, type FlagProxy } from '../../src/index.js';
import { createTestFlagServer, type TestFlagServer } from '../../src/testing/index.js';

let closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.reverse()) await close();
  closing = [];
});

/** A proxy in a node:http server, mounted (a host that answers 418 to what it is handed) or standalone. */
async function serve(mounted: boolean): Promise<{ base: string; proxy: FlagProxy }> {
  const upstream: TestFlagServer = await createTestFlagServer({ features: [] });
  const proxy = createFlagProxy({ flagUrl: upstream.url, flagApiToken: upstream.token, clientKeys: ['key'], logLevel: 'error', enableOAS: true });
  const server = http.createServer((req, res) =>
    mounted
      ? proxy(req, res, () => {
          res.statusCode = 418;
          res.end('host');
        })
      : proxy(req, res),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closing.push(() => upstream.close(), () => proxy.close(), () => new Promise<void>((resolve) => server.close(() => resolve())));
  await proxy.ready;
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, proxy };
}

const preflight = (base: string, path: string): Promise<Response> =>
  fetch(`${base}${path}`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' } });

const recorded = (text: string, route: string): number => {
  const line = text.split('\n').find((l) => l.startsWith('flag_proxy_http_requests_total{') && l.includes(`route="${route}"`) && l.includes('method="OPTIONS"'));
  return line === undefined ? 0 : Number(line.split(' ').pop());
};

describe('preflights', () => {
  it('mounted: answers those on its own paths, recorded on their routes, and hands the others to the host', async () => {
    const { base, proxy } = await serve(true);
    for (const path of ['/proxy/client/features', '/proxy', '/proxy/health', '/api/client/metrics', '/Proxy/Client/Features/', '/proxy//client/features']) {
      const res = await preflight(base, path);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
    }
    // A path the proxy serves without owning a prefix there (its docs), and paths of no route.
    for (const path of ['/docs/openapi.json', '/elsewhere', '/docs']) {
      const res = await preflight(base, path);
      expect(res.status, path).toBe(418);
      expect(await res.text()).toBe('host');
    }
    const text = await proxy.metrics();
    expect(recorded(text, '/proxy/client/features')).toBe(3);
    expect(recorded(text, '/proxy')).toBe(1);
    expect(recorded(text, '/proxy/health')).toBe(1);
    expect(recorded(text, '/api/client/metrics')).toBe(1);
  });

  it('standalone: answers every path, those of no route recorded as unmatched', async () => {
    const { base, proxy } = await serve(false);
    for (const path of ['/proxy/client/features', '/docs/openapi.json', '/elsewhere']) expect((await preflight(base, path)).status, path).toBe(204);
    const text = await proxy.metrics();
    expect(recorded(text, '/proxy/client/features')).toBe(1);
    expect(recorded(text, '/docs/openapi.json')).toBe(1);
    expect(recorded(text, 'unmatched')).toBe(1);
  });
});
