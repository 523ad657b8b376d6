/**
 * The client address a proxy puts in `remoteAddress`. A server listening on every interface
 * (`::`, Node's default and the CLI's) sees an IPv4 client as `::ffff:127.0.0.1`; IP lists name
 * `127.0.0.1`, so the address is given in its IPv4 form, from the socket and from X-Forwarded-For.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFlagProxy, type FeatureDefinition } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer, silentLogger as silent } from 'flag-proxy/testing';

const ipToggle = (name: string, ips: string): FeatureDefinition =>
  ({ name, enabled: true, strategies: [{ name: 'remoteAddress', parameters: { IPs: ips }, constraints: [] }] }) as never;


let upstream: TestFlagServer;
beforeAll(async () => {
  upstream = await createTestFlagServer({
    features: [ipToggle('loopback-v4', '127.0.0.1'), ipToggle('office-v4', '10.1.2.0/24'), ipToggle('loopback-v6', '::1')],
  });
});
afterAll(() => upstream.close());

async function serve(trustProxy: boolean): Promise<{ port: number; close(): Promise<void> }> {
  const proxy = createFlagProxy({
    flagUrl: upstream.url,
    flagApiToken: upstream.token,
    clientKeys: ['k'],
    trustProxy,
    metricsInterval: 0,
    storageProvider: createMemoryStorageProvider(),
    logger: silent,
  });
  await proxy.ready;
  const server = http.createServer(proxy);
  await new Promise<void>((r) => server.listen(0, '::', r));
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await proxy.close();
    },
  };
}

async function enabled(url: string, headers: Record<string, string> = {}): Promise<string[]> {
  const res = await fetch(url, { headers: { authorization: 'k', ...headers } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name).sort();
}

describe('remoteAddress behind a server listening on ::', () => {
  it('is the IPv4 address of an IPv4 client, so IPv4 lists match it', async () => {
    const s = await serve(false);
    try {
      expect(await enabled(`http://127.0.0.1:${s.port}/proxy`)).toEqual(['loopback-v4']);
      expect(await enabled(`http://[::1]:${s.port}/proxy`)).toEqual(['loopback-v6']);
    } finally {
      await s.close();
    }
  });

  it('is the IPv4 form of an IPv4-mapped address in X-Forwarded-For (trustProxy)', async () => {
    const s = await serve(true);
    try {
      expect(await enabled(`http://127.0.0.1:${s.port}/proxy`, { 'x-forwarded-for': '::ffff:10.1.2.3' })).toEqual(['office-v4']);
      expect(await enabled(`http://127.0.0.1:${s.port}/proxy`, { 'x-forwarded-for': '10.1.2.4' })).toEqual(['office-v4']);
    } finally {
      await s.close();
    }
  });

  it('leaves an address the caller gives as it is', async () => {
    const s = await serve(false);
    try {
      expect(await enabled(`http://127.0.0.1:${s.port}/proxy?remoteAddress=${encodeURIComponent('::ffff:127.0.0.1')}`)).toEqual([]);
    } finally {
      await s.close();
    }
  });
});
