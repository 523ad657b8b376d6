/**
 * Prometheus metrics of one proxy: the only importer of prom-client. Each proxy registers in its
 * own registry unless one is injected; nothing is registered at import.
 */
import { Counter, Gauge, Registry } from 'prom-client';

/** The metrics one proxy keeps. */
export interface ProxyMetrics {
  readonly registry: Registry;
  /** Prometheus text exposition of the registry. */
  render(): Promise<string>;
  fetched(outcome: 'changed' | 'unchanged'): void;
  strategyError(): void;
  /** An evaluation answer was served from the cache, computed and cached, or not cacheable. */
  answerCache(result: 'hit' | 'miss' | 'uncacheable'): void;
  /** Removes this proxy's metrics from the registry. */
  close(): void;
}

/** Content type of the Prometheus answer, as the predecessor sent it. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; charset=utf-8; version=0.0.4';

/** Creates and registers the metrics of one proxy. */
export function createProxyMetrics(injected: Registry | undefined): ProxyMetrics {
  const registry = injected ?? new Registry();
  const registers = [registry];
  const up = new Counter({ name: 'flag_proxy_up', help: 'Set to 1 while the proxy runs.', registers });
  const lastUpdate = new Gauge({
    name: 'last_metrics_update_epoch_timestamp_ms',
    help: 'Epoch milliseconds when the proxy last received a feature update.',
    registers,
  });
  const lastFetch = new Gauge({
    name: 'last_metrics_fetch_epoch_timestamp_ms',
    help: 'Epoch milliseconds when the proxy last checked for updates.',
    registers,
  });
  const strategyErrors = new Counter({
    name: 'flag_proxy_strategy_errors_total',
    help: 'Evaluations in which an activation strategy threw; the toggle counted as disabled.',
    registers,
  });
  const cacheLookups = new Counter({
    name: 'flag_proxy_answer_cache_total',
    help: 'Evaluation answers by cache outcome: hit, miss (computed and cached), uncacheable (depends on a random session, randomness or the clock).',
    labelNames: ['result'],
    registers,
  });
  const cacheCounters = { hit: cacheLookups.labels('hit'), miss: cacheLookups.labels('miss'), uncacheable: cacheLookups.labels('uncacheable') };
  up.inc(1);
  const names = [up, lastUpdate, lastFetch, strategyErrors, cacheLookups].map((m) => (m as unknown as { name: string }).name);
  return {
    registry,
    render: () => registry.metrics(),
    fetched(outcome) {
      const now = Date.now();
      lastFetch.set(now);
      if (outcome === 'changed') lastUpdate.set(now);
    },
    strategyError: () => strategyErrors.inc(),
    answerCache: (result) => cacheCounters[result].inc(),
    close() {
      for (const name of names) registry.removeSingleMetric(name);
    },
  };
}
