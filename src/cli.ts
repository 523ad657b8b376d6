#!/usr/bin/env node
/**
 * `flag-proxy`: the standalone server, configured only by environment variables. With no
 * `FLAG_URL`, it starts an embedded demo flag server so a newcomer sees it work at once.
 * `flag-proxy events ...` prints the flag server's admin event log.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createFlagProxy, type FlagProxy } from './core/create-flag-proxy.js';
import { optionsFromEnv, portFromEnv } from './config/env.js';
import { isFlagProxyError } from './errors.js';
import { createTestFlagServer, type TestFlagServer } from './testing/flag-server.js';
import { createMemoryStorageProvider } from './testing/storage.js';
import { demoFlags, DEMO_CLIENT_KEY, DEMO_UPSTREAM_TOKEN } from './demo/flags.js';
import type { FlagProxyOptions } from './config/options.js';

/** How long in-flight requests may take to finish after SIGTERM/SIGINT. */
const SHUTDOWN_GRACE_MS = 10_000;

function fatal(message: string): never {
  process.stderr.write(`flag-proxy: ${message}\n`);
  process.exit(1);
}

function demoBanner(base: string): string {
  const key = `-H 'Authorization: ${DEMO_CLIENT_KEY}'`;
  return [
    '',
    'flag-proxy is running in DEMO mode: no FLAG_URL is set, so an embedded flag server with sample flags answers.',
    `Set FLAG_URL, FLAG_API_TOKEN and FLAG_PROXY_CLIENT_KEYS to proxy a real flag server.`,
    '',
    'Try it:',
    `  curl ${base}/proxy/health`,
    `  curl ${key} '${base}/proxy?userId=1'`,
    `  curl ${key} '${base}/proxy?userId=7&properties%5Bregion%5D=eu'`,
    `  curl ${key} -H 'Content-Type: application/json' -d '{"context":{"userId":"2"},"toggles":["demo.beta-testers","demo.switched-off"]}' ${base}/proxy`,
    `  curl ${base}/proxy/internal-backstage/prometheus`,
    '',
  ].join('\n');
}

async function serve(): Promise<void> {
  let options: FlagProxyOptions;
  let port: number;
  try {
    options = optionsFromEnv(process.env);
    port = portFromEnv(process.env);
  } catch (error) {
    fatal(isFlagProxyError(error) ? error.message : String(error));
  }

  let demo: TestFlagServer | undefined;
  if (options.flagUrl === undefined) {
    demo = await createTestFlagServer({ features: demoFlags, clientTokens: [DEMO_UPSTREAM_TOKEN] });
    options = {
      ...options,
      flagUrl: demo.url,
      flagApiToken: DEMO_UPSTREAM_TOKEN,
      clientKeys: options.clientKeys ?? [DEMO_CLIENT_KEY],
      // The demo must not leave a backup file behind that a real run could start from.
      storageProvider: createMemoryStorageProvider(),
    };
  }

  let proxy: FlagProxy;
  try {
    proxy = createFlagProxy(options);
  } catch (error) {
    await demo?.close();
    fatal(isFlagProxyError(error) ? error.message : String(error));
  }

  const server = http.createServer(proxy);
  server.on('error', (error: NodeJS.ErrnoException) => {
    fatal(error.code === 'EADDRINUSE' ? `port ${port} is already in use (set PORT)` : error.message);
  });
  server.listen(port, () => {
    const { port: bound } = server.address() as AddressInfo;
    const base = `http://localhost:${bound}${proxy.config.basePath}`;
    process.stdout.write(`flag-proxy listening on ${base}/proxy\n`);
    if (demo) process.stdout.write(`${demoBanner(base)}\n`);
  });

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`flag-proxy: ${signal} received, shutting down\n`);
    const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    force.unref();
    // Stop accepting; idle keep-alive sockets are closed, in-flight requests finish.
    server.close(() => {
      void proxy
        .close()
        .then(() => demo?.close())
        .finally(() => process.exit(0));
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'events') {
    const { runEventsCommand } = await import('./admin-events/cli.js');
    process.exitCode = await runEventsCommand(argv.slice(1), process.env, process.stdout, process.stderr);
    return;
  }
  if (argv[0] === '--help' || argv[0] === '-h') {
    process.stdout.write(
      'Usage: flag-proxy            start the proxy (configured by environment variables; see README)\n' +
        '       flag-proxy events [--project P] [--toggle T] [--all] [--json]   print the admin event log\n',
    );
    return;
  }
  await serve();
}

main(process.argv.slice(2)).catch((error: unknown) => fatal(error instanceof Error ? error.message : String(error)));
