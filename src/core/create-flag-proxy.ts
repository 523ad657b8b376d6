/**
 * `createFlagProxy`: resolve config → build parts → return the handler with `ready` and `close`.
 */
import { defaultStrategyNames } from '../evaluation/strategies.js';
import { createEngine } from '../evaluation/engine.js';
import { createUsageReporter } from '../evaluation/usage-reporter.js';
import { FlagProxyError } from '../errors.js';
import { createProxyMetrics } from '../metrics.js';
import { resolveConfig, type FlagProxyConfig } from '../config/resolve.js';
import type { FlagProxyOptions } from '../config/options.js';
import { createHandler, type FlagProxyHandler } from './handler.js';
import { createKeyChecker, type ProxyParts } from './parts.js';
import { createAnswerCache } from './answer-cache.js';

/** A running proxy: a Connect-style handler `(req, res, next?)` with its lifecycle. */
export interface FlagProxy extends FlagProxyHandler {
  /** Resolves on the first successful sync (or load from backup/bootstrap); rejects if closed first. */
  readonly ready: Promise<void>;
  /** True once `ready` has resolved. */
  isReady(): boolean;
  /** Stops polling and timers, sends the last usage report, and resolves when done. Idempotent. */
  close(): Promise<void>;
  /** The validated configuration (secrets included: never log it). */
  readonly config: Readonly<FlagProxyConfig>;
  /** Prometheus text of this proxy's metrics. */
  metrics(): Promise<string>;
}

/** How long a usage report may take before it counts as failed. */
const UPSTREAM_TIMEOUT_MS = 10_000;
/** Most distinct toggle names one usage report holds. */
const MAX_REPORTED_TOGGLES = 10_000;

/** A throwing strategy is logged at most once per toggle in this interval (it is counted always). */
const STRATEGY_ERROR_LOG_INTERVAL_MS = 60_000;

/** Allows one event per key per interval; remembers a bounded number of keys. */
function createRateLimit(intervalMs: number, maxKeys = 1000): { allow(key: string): boolean } {
  const last = new Map<string, number>();
  return {
    allow(key) {
      const now = Date.now();
      const previous = last.get(key);
      if (previous !== undefined && now - previous < intervalMs) return false;
      if (last.size >= maxKeys) last.clear();
      last.set(key, now);
      return true;
    },
  };
}

/**
 * Creates a feature-flag evaluation proxy. Options are validated here, once; a bad value throws
 * a FlagProxyError `INVALID_OPTION` naming the option and its environment variable.
 *
 * @example
 * ```ts
 * import http from 'node:http';
 * import { createFlagProxy } from 'flag-proxy';
 *
 * const proxy = createFlagProxy({
 *   flagUrl: 'https://flags.example.com/api/',
 *   flagApiToken: process.env.FLAG_API_TOKEN,
 *   clientKeys: ['browser-key'],
 * });
 * http.createServer(proxy).listen(3000);
 * await proxy.ready;
 * ```
 */
export function createFlagProxy(options: FlagProxyOptions): FlagProxy {
  const config = resolveConfig(options);
  const { logger } = config;
  if (config.enableOAS) {
    logger.warn('enableOAS (ENABLE_OAS) is not supported yet: the OpenAPI document and page are not served.');
  }
  const metrics = createProxyMetrics(config.metricsRegistry);
  const usage = createUsageReporter({
    url: config.flagUrl,
    token: config.flagApiToken,
    appName: config.appName,
    instanceId: config.instanceId,
    metricsInterval: config.metricsInterval,
    metricsJitter: config.metricsJitter,
    strategies: [...defaultStrategyNames, ...config.customStrategies.map((s) => s.name)],
    rejectUnauthorized: config.rejectUnauthorized,
    maxToggles: MAX_REPORTED_TOGGLES,
    timeoutMs: UPSTREAM_TIMEOUT_MS,
    logger,
    onDropped: (n) => logger.warn(`Usage report is full; counts of ${n} new toggle name(s) dropped`),
  });

  const strategyErrorLog = createRateLimit(STRATEGY_ERROR_LOG_INTERVAL_MS);
  let ready = false;
  let closed: Promise<void> | undefined;
  let markReady!: () => void;
  let markClosed!: (error: FlagProxyError) => void;
  const readyPromise = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    markClosed = reject;
  });
  // Nobody has to await `ready`; an early close must not become an unhandled rejection.
  readyPromise.catch(() => undefined);

  const engine = createEngine(
    {
      url: config.flagUrl,
      token: config.flagApiToken,
      appName: config.appName,
      instanceId: config.instanceId,
      environment: config.environment,
      refreshInterval: config.refreshInterval,
      projectName: config.projectName,
      namePrefix: config.namePrefix,
      tags: config.tags,
      strategies: config.customStrategies,
      storageProvider: config.storageProvider,
      bootstrap: config.bootstrap,
      rejectUnauthorized: config.rejectUnauthorized,
      logger,
    },
    {
      onReady() {
        if (ready || closed) return;
        ready = true;
        logger.info('Successfully synchronized with the flag API. Proxy is now ready to receive traffic.');
        usage.start();
        markReady();
      },
      onFetch: (outcome) => metrics.fetched(outcome),
      onStrategyError(toggle, error) {
        metrics.strategyError();
        if (strategyErrorLog.allow(toggle)) {
          logger.error(`Activation strategy of toggle "${toggle}" threw; evaluated as disabled`, error);
        }
      },
    },
  );

  const parts: ProxyParts = {
    config,
    engine,
    usage,
    metrics,
    keys: createKeyChecker(config),
    cache: config.answerCacheBytes > 0 ? createAnswerCache(config.answerCacheBytes) : undefined,
  };
  const handler = createHandler(parts);

  const proxy = Object.assign(handler, {
    ready: readyPromise,
    isReady: () => ready,
    config,
    metrics: () => metrics.render(),
    close(): Promise<void> {
      closed ??= (async () => {
        engine.close();
        if (!ready) markClosed(new FlagProxyError('NOT_READY', 'The proxy was closed before it became ready', { status: 503 }));
        await usage.close();
        metrics.close();
      })();
      return closed;
    },
  });
  return proxy;
}
