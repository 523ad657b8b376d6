/**
 * The host servers the contract suite runs in when FLAG_PROXY_TEST_MOUNT names an adapter: each
 * mounts the proxy under /api/flags next to a host 404 and a host error handler, the way an
 * application would. Loaded only when the suite runs mounted (see test/support/harness.ts), and
 * each framework only for its own mount, so a worker imports one framework, not four.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ErrorRequestHandler } from 'express';
import type { FlagProxy, FlagProxyOptions } from 'flag-proxy';

/** Every adapter the contract suite runs through. */
export const ADAPTER_MOUNTS = ['express', 'koa', 'fastify', 'fetch'] as const;
export type AdapterMount = (typeof ADAPTER_MOUNTS)[number];

/** Where the hosts mount the proxy: a non-root path, as applications do. */
export const MOUNT_PATH = '/api/flags';

export interface Host {
  proxy: FlagProxy;
  port: number;
  close(): Promise<void>;
}

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function closer(server: http.Server): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
}

/** Starts a host of the given kind serving a proxy created (by the adapter) from `options`. */
export async function startHost(mount: AdapterMount, options: FlagProxyOptions): Promise<Host> {
  switch (mount) {
    case 'express': {
      const { default: express } = await import('express');
      const { createExpressMiddleware } = await import('flag-proxy/express');
      const app = express();
      app.disable('x-powered-by');
      const flags = createExpressMiddleware(options);
      app.use(MOUNT_PATH, flags);
      app.use((_req, res) => void res.status(404).type('text/plain').send('host: not found'));
      const onError: ErrorRequestHandler = (err: { status?: number }, _req, res, _next) => void res.status(err.status ?? 500).type('text/plain').send('host error handler');
      app.use(onError);
      const server = http.createServer(app);
      return { proxy: flags.proxy, port: await listen(server), close: closer(server) };
    }
    case 'koa': {
      const { default: Koa } = await import('koa');
      const { createKoaMiddleware } = await import('flag-proxy/koa');
      const app = new Koa();
      app.silent = true; // errors reach Koa's handler; the test output stays clean
      const flags = createKoaMiddleware(options, { prefix: MOUNT_PATH });
      app.use(flags);
      const server = http.createServer(app.callback());
      return { proxy: flags.proxy, port: await listen(server), close: closer(server) };
    }
    case 'fastify': {
      const { default: Fastify } = await import('fastify');
      const { createFastifyPlugin } = await import('flag-proxy/fastify');
      const app = Fastify();
      const flags = createFastifyPlugin(options);
      await app.register(flags, { prefix: MOUNT_PATH });
      await app.listen({ port: 0, host: '127.0.0.1' });
      return {
        proxy: flags.proxy,
        port: (app.server.address() as AddressInfo).port,
        async close() {
          const closing = app.close();
          app.server.closeAllConnections();
          await closing;
        },
      };
    }
    case 'fetch': {
      const { getRequestListener } = await import('@hono/node-server');
      const { createFetchHandler } = await import('flag-proxy/fetch');
      const flags = createFetchHandler(options, { prefix: MOUNT_PATH });
      const listener = getRequestListener(
        async (request, env) => {
          try {
            return await flags(request, { remoteAddress: (env as { incoming: http.IncomingMessage }).incoming.socket.remoteAddress });
          } catch {
            return new Response('host error handler', { status: 500 });
          }
        },
        { overrideGlobalObjects: false },
      );
      const server = http.createServer(listener);
      return { proxy: flags.proxy, port: await listen(server), close: closer(server) };
    }
  }
}
