/**
 * `createFlagProxy`, the composition root: resolve config → build the engine, usage reporter,
 * metrics and evaluation service → mount the route table → return the handler with its lifecycle
 * and the in-process API.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { defaultStrategyNames } from './evaluation/strategies.js';
import { createFileStorageProvider } from './evaluation/file-storage.js';
import { createEngine } from './evaluation/engine.js';
import { createUsageReporter } from './evaluation/usage-reporter.js';
import { FlagProxyError } from './errors.js';
import { Strategy } from './evaluation/types.js';
import { createProxyMetrics } from './metrics.js';
import { resolveConfig, type FlagProxyConfig } from './config/resolve.js';
import { weakSecretWarnings } from './config/secrets-view.js';
import type { CustomStrategy, FlagProxyOptions } from './config/options.js';
import { createHandler, type FlagProxyHandler } from './core/handler.js';
import { createKeyChecker } from './core/parts.js';
import { createAnswerCache } from './core/answer-cache.js';
import { createEvaluationService } from './core/service.js';
import { createInProcessApi, type InProcessApi } from './in-process.js';
import { createSsrApi, type SsrApi } from './ssr.js';
import { holdTickShape } from './tick-shape.js';
import { routeTable } from './surfaces/index.js';
import { createLifecycle, type ProxyLifecycle } from './core/lifecycle.js';

/** A running proxy: a Connect-style handler `(req, res, next?)` with its lifecycle. */
export interface FlagProxy extends FlagProxyHandler, InProcessApi, ProxyLifecycle, SsrApi {
  /** Resolves on the first successful sync (or load from backup/bootstrap); rejects if closed first. */
  readonly ready: Promise<void>;
  /** True once `ready` has resolved. */
  isReady(): boolean;
  /** Stops polling and timers, sends the last usage report, and resolves when done. Idempotent. */
  close(): Promise<void>;
  /**
   * Ends every open event stream (OFREP's, the client API's streaming) and refuses new ones with
   * 503 and `Retry-After`, while every other route keeps answering. Clients reconnect, to another
   * proxy behind a load balancer. For graceful shutdown: an open stream is an in-flight request to
   * node's `server.close()`, which would wait for it; call this when your server stops accepting,
   * then `close()` once the server has closed. `close()` ends them too. Idempotent.
   *
   * @example
   * ```ts
   * server.close(() => void proxy.close());
   * proxy.closeStreams();
   * ```
   */
  closeStreams(): void;
  /** The validated configuration. Code reads the real secrets; `util.inspect` and JSON show `[redacted]`. */
  readonly config: Readonly<FlagProxyConfig>;
  /** Prometheus text of this proxy's metrics. */
  metrics(): Promise<string>;
}

/** How long a usage report may take before it counts as failed. */
const UPSTREAM_TIMEOUT_MS = 10_000;
/** Most distinct toggle names one usage report holds. */
const MAX_REPORTED_TOGGLES = 10_000;
/** Most distinct names of toggles not in the flag set one usage report holds, besides those. */
const MAX_REPORTED_UNKNOWN_TOGGLES = 1000;

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
 * A `Strategy` for the evaluation client. Instances (of any copy of the class) are used as they
 * are; a plain `{ name, isEnabled }` object is wrapped, so constraints, segments and strategy
 * variants still apply before its `isEnabled` is asked, and a strategy file needs to import nothing.
 */
function asStrategy(given: CustomStrategy): Strategy {
  const candidate = given as Partial<Strategy>;
  if (typeof candidate.getResult === 'function' && typeof candidate.isEnabledWithConstraints === 'function') return given as Strategy;
  return new (class extends Strategy {
    constructor() {
      super(given.name);
    }
    override isEnabled(...[parameters, context]: Parameters<Strategy['isEnabled']>): boolean {
      return given.isEnabled.call(given, parameters, context);
    }
  })();
}

/**
 * A short name for "this upstream, this token, these filters": proxies differing in any of them
 * must never share a backup. The token only enters hashed.
 */
function upstreamScope(config: FlagProxyConfig): string {
  const identity = [config.flagUrl, config.flagApiToken, config.projectName, config.namePrefix, JSON.stringify(config.tags ?? [])];
  return createHash('sha256').update(identity.join('\0')).digest('hex').slice(0, 16);
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
// Over ~80 lines: the composition root, wiring each part to the next in the order they depend on;
// each part is built in its own module.
export function createFlagProxy(options: FlagProxyOptions): FlagProxy {
  const config = resolveConfig(options);
  const { logger } = config;
  for (const warning of weakSecretWarnings(config)) logger.warn(warning);
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
    maxUnknownToggles: MAX_REPORTED_UNKNOWN_TOGGLES,
    timeoutMs: UPSTREAM_TIMEOUT_MS,
    logger,
    onSent: (ok) => metrics.usageReport(ok),
  });

  // A full collection between polls must not take the class of node's tick objects (tick-shape.ts).
  const tickShape = holdTickShape();
  const strategyErrorLog = createRateLimit(STRATEGY_ERROR_LOG_INTERVAL_MS);
  // Set once the service exists; the engine starts fetching before that.
  let notifyChanged: () => void = () => undefined;
  // The content the listeners last heard of. The flag server's ETag follows its revision, which
  // moves with flags this token never sees (another project or environment): the same set fetched
  // again is no change, and telling every stream of it would send each browser to fetch again.
  let announced: string | undefined;
  /** Tells the listeners of the current flag set unless they heard of its content; whether it did. */
  const announce = (): boolean => {
    const { digest } = engine.snapshot();
    if (digest === announced) return false;
    announced = digest;
    notifyChanged();
    return true;
  };
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
      strategies: config.customStrategies.map(asStrategy),
      storageProvider: config.storageProvider ?? createFileStorageProvider(upstreamScope(config)),
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
        announce();
      },
      onFetch(outcome) {
        // The set last announced, fetched again under a new ETag, is no change (see `announce`).
        metrics.fetched(outcome === 'changed' && ready && !announce() ? 'unchanged' : outcome);
      },
      onFetchError: () => metrics.fetched('error'),
      onStrategyError(toggle, error) {
        metrics.strategyError();
        if (strategyErrorLog.allow(toggle)) {
          logger.error(`Activation strategy of toggle "${toggle}" threw; evaluated as disabled`, error);
        }
      },
    },
  );

  const { service, changed, close: closeService, closeStreams } = createEvaluationService({
    config,
    engine,
    usage,
    metrics,
    keys: createKeyChecker(config),
    cache: config.answerCacheBytes > 0 ? createAnswerCache(config.answerCacheBytes) : undefined,
  });
  notifyChanged = changed;
  const handler = createHandler(service, routeTable(config));

  const proxy = Object.assign(handler, createInProcessApi(service), createSsrApi(service), {
    ready: readyPromise,
    isReady: () => ready && !engine.isClosed(),
    ...createLifecycle({ engine, ready: readyPromise, isReady: () => ready && !engine.isClosed(), flagUrl: config.flagUrl }),
    config,
    metrics: () => metrics.render(),
    closeStreams,
    close(): Promise<void> {
      closed ??= (async () => {
        const stopping = engine.close();
        closeService();
        tickShape.release();
        if (!ready) markClosed(new FlagProxyError('NOT_READY', 'The proxy was closed before it became ready', { status: 503 }));
        await Promise.all([usage.close(), stopping]);
        metrics.close();
      })();
      return closed;
    },
  });
  return proxy;
}
