/**
 * Target: flag-proxy's handler in a plain node:http server. The module is loaded from the path the
 * runner gives (a fresh bundle of src/, or dist/), so this file never pins a build.
 */
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { serveTarget } from './serve.js';

type FlagProxyModule = typeof import('../../src/index.js');

serveTarget(async (config) => {
  if (!config.flagProxyModule) throw new Error('flagProxyModule is missing');
  const { createFlagProxy, InMemStorageProvider } = (await import(pathToFileURL(config.flagProxyModule).href)) as FlagProxyModule;
  const proxy = createFlagProxy({
    flagUrl: config.upstreamUrl,
    flagApiToken: config.upstreamToken,
    clientKeys: [config.clientKey],
    flagAppName: config.appName,
    refreshInterval: config.refreshInterval,
    metricsInterval: config.metricsInterval,
    storageProvider: new InMemStorageProvider(),
    logLevel: 'error',
    ...(config.maxEventStreams !== undefined ? { maxEventStreams: config.maxEventStreams } : {}),
    ...(config.refetchNoticesPerSecond !== undefined ? { ofrep: { refetchNoticesPerSecond: config.refetchNoticesPerSecond } } : {}),
  });
  const server = http.createServer(proxy);
  if (config.keepAliveTimeout !== undefined) server.keepAliveTimeout = config.keepAliveTimeout;
  return { server, close: () => proxy.close() };
});
