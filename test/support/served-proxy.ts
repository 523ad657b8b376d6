/**
 * A proxy over a given upstream, served standalone on a loopback socket and ready: for tests that
 * compare what the proxy answers over HTTP with what it gives in process.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createFlagProxy, type FlagProxy } from 'flag-proxy';
import { createMemoryStorageProvider, silentLogger, type TestFlagServer } from 'flag-proxy/testing';
import { CLIENT_KEY, closeServer } from './harness.js';

export interface ServedProxy {
  upstream: TestFlagServer;
  proxy: FlagProxy;
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  base: string;
  /** Closes the proxy, then the server (the upstream stays). */
  close(): Promise<void>;
}

/** A proxy for `upstream` with the test client key, a memory backup, no usage reports and no logs; `options` win. */
export function testProxy(upstream: TestFlagServer, options: Record<string, unknown> = {}): FlagProxy {
  return createFlagProxy({
    flagUrl: upstream.url,
    flagApiToken: upstream.token,
    clientKeys: [CLIENT_KEY],
    storageProvider: createMemoryStorageProvider(),
    metricsInterval: 0,
    logger: silentLogger,
    ...options,
  });
}

/**
 * Serves {@link testProxy} on loopback, as the whole server or inside the request listener `host`
 * makes of it.
 */
export async function serveProxy(
  upstream: TestFlagServer,
  options: Record<string, unknown> = {},
  host?: (proxy: FlagProxy) => http.RequestListener,
): Promise<ServedProxy> {
  const proxy = testProxy(upstream, options);
  const server = http.createServer(host ? host(proxy) : proxy);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  await proxy.ready;
  return {
    upstream,
    proxy,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      await proxy.close();
      await closeServer(server);
    },
  };
}
