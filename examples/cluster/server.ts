/**
 * Runs the flag proxy on every core with node:cluster: the primary forks one worker per core (or
 * `WORKERS`), replaces a worker that dies, and on SIGTERM lets each worker finish its requests and
 * send its last usage report before exiting. Every worker polls the upstream on its own; give
 * them a shared snapshot with `flag-proxy/redis` if new workers must start while it is down.
 *
 *   FLAG_URL=https://flags.example.com/api/ FLAG_API_TOKEN=... FLAG_PROXY_CLIENT_KEYS=browser-key \
 *   WORKERS=4 PORT=3000 npx tsx examples/cluster/server.ts
 *
 * (The CLI does the same with FLAG_PROXY_WORKERS=4.)
 */
import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { isFlagProxyError, optionsFromEnv, portFromEnv, resolveConfig } from 'flag-proxy';
import { buildApp } from './app.js';

const workers = Number(process.env.WORKERS ?? availableParallelism());

if (cluster.isPrimary) {
  // Check the configuration once, here: a worker failing on it would be restarted for ever.
  try {
    resolveConfig(optionsFromEnv(process.env));
    portFromEnv(process.env);
  } catch (error) {
    console.error(isFlagProxyError(error) ? error.message : error);
    process.exit(1);
  }
  let stopping = false;
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.values(cluster.workers ?? {}).every((w) => w === undefined || w.isDead())) process.exit(0);
      return;
    }
    console.error(`worker ${worker.process.pid} exited (${signal ?? code}); starting another`);
    cluster.fork();
  });
  const stop = (): void => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  for (let i = 0; i < workers; i++) cluster.fork();
} else {
  const { server, proxy } = buildApp(optionsFromEnv(process.env));
  // Workers listening on one port share it: the primary hands each connection to one of them.
  server.listen(portFromEnv(process.env), () => {
    console.log(`worker ${process.pid} listening on http://localhost:${(server.address() as AddressInfo).port}/proxy`);
  });
  const stop = (): void => {
    server.close(() => void proxy.close().finally(() => process.exit(0)));
    server.closeIdleConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
