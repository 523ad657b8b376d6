/**
 * Prometheus metrics of one proxy: the only importer of prom-client. Each proxy registers in its
 * own registry unless one is injected; nothing is registered at import.
 *
 * The per-request metrics (requests, latency, evaluations, answer cache) are counted in plain
 * numbers on the hot path and handed to prom-client only when the registry is scraped: a
 * prom-client label lookup costs about a microsecond per call, a plain increment nothing.
 */
import { Counter, Gauge, Histogram, Registry, type Aggregator } from 'prom-client';

/**
 * One value of the `route` label of the request metrics: the route as written below the proxy's
 * base path (`/proxy`, `/proxy/all`, `/docs/openapi.json`, …), as each surface declares it.
 * `unmatched` is a request the proxy answered 404 (standalone) or a preflight on no route.
 */
export type RouteLabel = string;

/** Upper bounds (seconds) of the request latency histogram. */
export const LATENCY_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Records the requests of one route; created once per route, used per request. */
export interface RouteRecorder {
  /** One answered request: its method, final status and duration in seconds. */
  record(method: string, status: number, seconds: number): void;
}

/** How one upstream flag fetch ended. */
export type FetchOutcome = 'changed' | 'unchanged' | 'error';

/** The metrics one proxy keeps. */
export interface ProxyMetrics {
  readonly registry: Registry;
  /** Prometheus text exposition of the registry. */
  render(): Promise<string>;
  /** The recorder of one route's requests. */
  route(label: RouteLabel): RouteRecorder;
  /** An upstream fetch ended (`changed` also covers bootstrap data loaded at start). */
  fetched(outcome: FetchOutcome): void;
  strategyError(): void;
  /** An evaluation answer was served from the cache, computed and cached, or not cacheable. */
  answerCache(result: 'hit' | 'miss' | 'uncacheable'): void;
  /** `toggles` toggles were evaluated for one computed answer. */
  evaluated(toggles: number): void;
  /** A frontend SDK's usage report with `toggles` toggles was accepted. */
  frontendReport(toggles: number): void;
  /** A usage report to the upstream was sent, or failed (and is kept for the next one). */
  usageReport(sent: boolean): void;
  /** An event stream of a surface opened, closed, or was refused at the bound. */
  eventStream(surface: string, change: 'opened' | 'closed' | 'refused'): void;
  /** Removes this proxy's metrics from the registry. */
  close(): void;
}

/** Content type of the Prometheus answer, as the predecessor sent it. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; charset=utf-8; version=0.0.4';

/** A series counted in a plain number, handed to its prom-client counter when scraped. */
interface Tally<L extends string> {
  readonly labels: Partial<Record<L, string | number>>;
  n: number;
  reported: number;
}

/** A prom-client counter whose series are counted outside it and published (as deltas) on scrape. */
function deferredCounter<L extends string>(
  registers: Registry[],
  name: string,
  help: string,
  labelNames: readonly L[],
  series: () => Iterable<Tally<L>>,
): Counter<L> {
  return new Counter<L>({
    name,
    help,
    labelNames,
    registers,
    collect() {
      for (const tally of series()) {
        if (tally.n === tally.reported) continue;
        const delta = tally.n - tally.reported;
        tally.reported = tally.n;
        if (labelNames.length === 0) this.inc(delta);
        else this.inc(tally.labels, delta);
      }
    },
  });
}

const HISTOGRAM_NAME = 'flag_proxy_http_request_duration_seconds';
const HISTOGRAM_HELP = 'Time from receiving a request to handing its answer to the socket, by route.';

/** Latency of one route, in the histogram's buckets (not cumulative). */
interface Latency {
  readonly route: RouteLabel;
  readonly buckets: Float64Array;
  sum: number;
  count: number;
}

/** One exported sample: `labels` first in the text format, then `sharedLabels` (as prom-client writes). */
interface Sample {
  labels: Record<string, string | number>;
  sharedLabels: Record<string, string>;
  value: number;
  metricName: string;
}

/** What the base class's `get()` resolves to. */
type HistogramData = Awaited<ReturnType<Histogram<'route'>['get']>>;

/**
 * `flag_proxy_http_request_duration_seconds`: a prom-client Histogram whose values are read from
 * the per-route tallies at scrape time instead of being observed one call at a time. The registry
 * reads `getForPromString()` for the text format and `get()` for JSON and cluster aggregation.
 */
class RouteLatencyHistogram extends Histogram<'route'> {
  private readonly latencies: () => Iterable<Latency>;

  constructor(registers: Registry[], latencies: () => Iterable<Latency>) {
    super({
      name: HISTOGRAM_NAME,
      help: HISTOGRAM_HELP,
      labelNames: ['route'],
      buckets: [...LATENCY_BUCKETS],
      registers,
    });
    this.latencies = latencies;
  }

  async getForPromString(): Promise<{ name: string; help: string; type: 'histogram'; values: Sample[]; aggregator: Aggregator }> {
    const name = HISTOGRAM_NAME;
    const values: Sample[] = [];
    for (const latency of this.latencies()) {
      if (latency.count === 0) continue;
      const sharedLabels = { route: latency.route };
      let cumulative = 0;
      LATENCY_BUCKETS.forEach((bound, i) => {
        cumulative += latency.buckets[i] ?? 0;
        values.push({ labels: { le: bound }, sharedLabels, value: cumulative, metricName: `${name}_bucket` });
      });
      values.push({ labels: { le: '+Inf' }, sharedLabels, value: latency.count, metricName: `${name}_bucket` });
      values.push({ labels: {}, sharedLabels, value: latency.sum, metricName: `${name}_sum` });
      values.push({ labels: {}, sharedLabels, value: latency.count, metricName: `${name}_count` });
    }
    return { name, help: HISTOGRAM_HELP, type: 'histogram', values, aggregator: 'sum' };
  }

  override async get(): Promise<HistogramData> {
    const data = await this.getForPromString();
    const values = data.values.map(({ sharedLabels, labels, value, metricName }) => ({ value, metricName, labels: { ...labels, ...sharedLabels } }));
    return { ...data, values } as unknown as HistogramData;
  }
}

const METHODS = ['GET', 'HEAD', 'POST', 'OPTIONS'] as const;

function methodIndex(method: string): number {
  switch (method) {
    case 'GET':
      return 0;
    case 'HEAD':
      return 1;
    case 'POST':
      return 2;
    case 'OPTIONS':
      return 3;
    default:
      return 4;
  }
}

/** A family of metrics: what it registered, and its part of the {@link ProxyMetrics} interface. */
interface Family<K extends keyof ProxyMetrics> {
  registered: unknown[];
  api: Pick<ProxyMetrics, K>;
}

/** The upstream's side: liveness, fetch outcomes, and the age of the flag set. */
function upstreamMetrics(registers: Registry[]): Family<'fetched' | 'usageReport'> {
  const createdAt = Date.now();
  let lastSuccess: number | undefined;
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
  const fetches = new Counter({
    name: 'flag_proxy_upstream_fetches_total',
    help: 'Flag fetches from the upstream by outcome: changed (a new flag set, or bootstrap data at start), unchanged (same set or 304), error.',
    labelNames: ['outcome'],
    registers,
  });
  const snapshotAge = new Gauge({
    name: 'flag_proxy_flag_snapshot_age_seconds',
    help: 'Seconds since the upstream last answered a flag fetch (changed or unchanged); since the proxy started while it never has.',
    registers,
    collect() {
      this.set((Date.now() - (lastSuccess ?? createdAt)) / 1000);
    },
  });
  const usageReports = new Counter({
    name: 'flag_proxy_upstream_usage_reports_total',
    help: 'Usage reports sent to the upstream, by result: sent, or failed (the counts are kept for the next report).',
    labelNames: ['result'],
    registers,
  });
  up.inc(1);
  // Present from the first scrape, so rate() and alerts see a zero rather than no series.
  for (const outcome of ['changed', 'unchanged', 'error']) fetches.labels(outcome).inc(0);
  for (const result of ['sent', 'failed']) usageReports.labels(result).inc(0);
  return {
    registered: [up, lastUpdate, lastFetch, fetches, snapshotAge, usageReports],
    api: {
      fetched(outcome) {
        fetches.labels(outcome).inc();
        if (outcome === 'error') return;
        const now = Date.now();
        lastSuccess = now;
        lastFetch.set(now);
        if (outcome === 'changed') lastUpdate.set(now);
      },
      usageReport: (sent) => usageReports.labels(sent ? 'sent' : 'failed').inc(),
    },
  };
}

/** Requests and latency per route: a tally per (method, status) seen, created on first sight. */
function requestMetrics(registers: Registry[]): Family<'route'> {
  const routeTallies = new Map<RouteLabel, Map<number, Tally<'route' | 'method' | 'status'>>>();
  const latencies = new Map<RouteLabel, Latency>();
  const recorders = new Map<RouteLabel, RouteRecorder>();
  const requests = deferredCounter(
    registers,
    'flag_proxy_http_requests_total',
    'Requests the proxy answered, by route, method and final status.',
    ['route', 'method', 'status'],
    function* () {
      for (const tallies of routeTallies.values()) yield* tallies.values();
    },
  );
  const duration = new RouteLatencyHistogram(registers, () => latencies.values());
  const createRecorder = (route: RouteLabel): RouteRecorder => {
    const tallies = new Map<number, Tally<'route' | 'method' | 'status'>>();
    routeTallies.set(route, tallies);
    const latency: Latency = { route, buckets: new Float64Array(LATENCY_BUCKETS.length), sum: 0, count: 0 };
    latencies.set(route, latency);
    const bounds = LATENCY_BUCKETS;
    const last = bounds.length;
    return {
      record(method, status, seconds) {
        const m = methodIndex(method);
        const key = m * 1000 + status;
        let tally = tallies.get(key);
        if (tally === undefined) {
          tally = { labels: { route, method: METHODS[m] ?? 'other', status: String(status) }, n: 0, reported: 0 };
          tallies.set(key, tally);
        }
        tally.n += 1;
        let i = 0;
        while (i < last && seconds > (bounds[i] as number)) i += 1;
        // Beyond the last bound only +Inf (the count) holds it.
        if (i < last) latency.buckets[i] = (latency.buckets[i] as number) + 1;
        latency.sum += seconds;
        latency.count += 1;
      },
    };
  };
  return {
    registered: [requests, duration],
    api: {
      route(label) {
        let recorder = recorders.get(label);
        if (recorder === undefined) {
          recorder = createRecorder(label);
          recorders.set(label, recorder);
        }
        return recorder;
      },
    },
  };
}

/** Evaluation: the answer cache's outcomes, toggles evaluated, strategies that threw. */
function evaluationMetrics(registers: Registry[]): Family<'answerCache' | 'evaluated' | 'strategyError'> {
  const strategyErrors = new Counter({
    name: 'flag_proxy_strategy_errors_total',
    help: 'Evaluations in which an activation strategy threw; the toggle counted as disabled.',
    registers,
  });
  const cacheTallies = {
    hit: { labels: { result: 'hit' }, n: 0, reported: 0 },
    miss: { labels: { result: 'miss' }, n: 0, reported: 0 },
    uncacheable: { labels: { result: 'uncacheable' }, n: 0, reported: 0 },
  };
  const cacheLookups = deferredCounter(
    registers,
    'flag_proxy_answer_cache_total',
    'Evaluation answers by cache outcome: hit, miss (computed and cached), uncacheable (depends on a random session, randomness or the clock).',
    ['result'],
    () => Object.values(cacheTallies),
  );
  const evaluations: Tally<never> = { labels: {}, n: 0, reported: 0 };
  const evaluationCounter = deferredCounter(
    registers,
    'flag_proxy_toggle_evaluations_total',
    'Toggles evaluated for computed answers (one per toggle per answer; answers from the answer cache and 304s evaluate none).',
    [],
    () => [evaluations],
  );
  return {
    registered: [strategyErrors, cacheLookups, evaluationCounter],
    api: {
      strategyError: () => strategyErrors.inc(),
      answerCache(result) {
        cacheTallies[result].n += 1;
      },
      evaluated(toggles) {
        evaluations.n += toggles;
      },
    },
  };
}

/** What SDKs send and hold: their usage reports, and the event streams open to them. */
function clientMetrics(registers: Registry[]): Family<'frontendReport' | 'eventStream'> {
  const frontendReports = new Counter({
    name: 'flag_proxy_frontend_metrics_reports_total',
    help: 'Usage reports accepted from frontend and server SDKs on /proxy/client/metrics.',
    registers,
  });
  const frontendToggles = new Counter({
    name: 'flag_proxy_frontend_metrics_toggles_total',
    help: 'Toggles listed in the accepted SDK usage reports.',
    registers,
  });
  const openStreams = new Gauge({
    name: 'flag_proxy_event_streams',
    help: 'Server-sent event streams open now, by surface.',
    labelNames: ['surface'],
    registers,
  });
  const refusedStreams = new Counter({
    name: 'flag_proxy_event_streams_refused_total',
    help: 'Event streams refused because maxEventStreams were open, by surface.',
    labelNames: ['surface'],
    registers,
  });
  return {
    registered: [frontendReports, frontendToggles, openStreams, refusedStreams],
    api: {
      frontendReport(toggles) {
        frontendReports.inc();
        frontendToggles.inc(toggles);
      },
      eventStream(surface, change) {
        if (change === 'opened') openStreams.labels(surface).inc();
        else if (change === 'closed') openStreams.labels(surface).dec();
        else refusedStreams.labels(surface).inc();
      },
    },
  };
}

/** Creates and registers the metrics of one proxy, family by family. */
export function createProxyMetrics(injected: Registry | undefined): ProxyMetrics {
  const registry = injected ?? new Registry();
  const registers = [registry];
  const upstream = upstreamMetrics(registers);
  const evaluation = evaluationMetrics(registers);
  const requests = requestMetrics(registers);
  const clients = clientMetrics(registers);
  const names = [upstream, evaluation, requests, clients].flatMap((family) => family.registered.map((m) => (m as { name: string }).name));
  return {
    registry,
    render: () => registry.metrics(),
    ...upstream.api,
    ...evaluation.api,
    ...requests.api,
    ...clients.api,
    close() {
      for (const name of names) registry.removeSingleMetric(name);
    },
  };
}
