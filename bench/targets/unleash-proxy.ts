/**
 * Target: `@unleash/proxy` 1.4.19 as its README shows it embedded: `createApp` (Express) in a
 * node:http server, with its own unleash-client instance (`clientMode: 'new'`).
 */
import http from 'node:http';
import { createRequire } from 'node:module';
import { serveTarget } from './serve.js';

const require = createRequire(import.meta.url);

interface UnleashProxyModule {
  createApp(options: Record<string, unknown>): http.RequestListener;
}

serveTarget(async (config) => {
  const { createApp } = require('@unleash/proxy') as UnleashProxyModule;
  // The unleash-client that @unleash/proxy itself resolves, for an in-memory backup like ours.
  const fromProxy = createRequire(require.resolve('@unleash/proxy'));
  const { InMemStorageProvider } = fromProxy('unleash-client') as { InMemStorageProvider: new () => unknown };
  const app = createApp({
    unleashUrl: config.upstreamUrl,
    unleashApiToken: config.upstreamToken,
    clientKeys: [config.clientKey],
    unleashAppName: config.appName,
    refreshInterval: config.refreshInterval,
    metricsInterval: config.metricsInterval,
    storageProvider: new InMemStorageProvider(),
    clientMode: 'new',
    logLevel: 'error',
  });
  return { server: http.createServer(app) };
});
