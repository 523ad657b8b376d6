/**
 * Prometheus metrics of one proxy: the only importer of prom-client. Each proxy registers in its
 * own registry unless one is injected; nothing is registered at import.
 *
 * Every metric is counted in plain numbers and handed to prom-client when the registry is scraped:
 * a prom-client label lookup costs about a microsecond per call, a plain increment nothing. So
 * prom-client (about 12 MB of RSS with its dependencies) is loaded, and the proxy's own registry
 * built, at the first scrape; an injected registry gets the metrics at creation, as it may be
 * scraped without the proxy.
 */
import type { Aggregator, Counter, Histogram, Registry } from 'prom-client';
import { loadOnDemand } from './load-on-demand.js';

/** prom-client's module, loaded on demand. */
type PromClient = typeof import('prom-client');

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
  /** How to read a surface's streams that a paced notice has not reached yet, read at each scrape. */
  pendingNotices(surface: string, read: () => number): void;
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
  { Counter }: PromClient,
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
    collect(this: Counter<L>) {
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
function routeLatencyHistogram({ Histogram }: PromClient, registers: Registry[], latencies: () => Iterable<Latency>): Histogram<'route'> {
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
  return new RouteLatencyHistogram(registers, latencies);
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

/**
 * A family of metrics: its part of the {@link ProxyMetrics} interface, counting in plain numbers,
 * and `register`, which creates its prom-client metrics over those numbers (once) and returns them.
 */
interface Family<K extends keyof ProxyMetrics> {
  api: Pick<ProxyMetrics, K>;
  register(prom: PromClient, registers: Registry[]): unknown[];
}

/** A tally without labels. */
const tally = (): Tally<never> => ({ labels: {}, n: 0, reported: 0 });

/** The tallies of a one-label counter, one per value, in the order given (the order of their series). */
function talliesOf<L extends string, V extends string>(label: L, values: readonly V[]): Record<V, Tally<L>> {
  return Object.fromEntries(values.map((value) => [value, { labels: { [label]: value }, n: 0, reported: 0 }])) as unknown as Record<V, Tally<L>>;
}

/** Creates the series of each tally at zero: present from the first scrape, so rate() and alerts see a zero rather than no series. */
function zeroSeries<L extends string>(counter: Counter<L>, tallies: Iterable<Tally<L>>): void {
  for (const t of tallies) counter.labels(t.labels).inc(0);
}

/** The upstream's side: liveness, fetch outcomes, and the age of the flag set. */
function upstreamMetrics(): Family<'fetched' | 'usageReport'> {
  const createdAt = Date.now();
  let lastSuccess: number | undefined;
  let lastUpdateAt: number | undefined;
  const fetchTallies = talliesOf('outcome', ['changed', 'unchanged', 'error'] as const);
  const usageTallies = talliesOf('result', ['sent', 'failed'] as const);
  return {
    api: {
      fetched(outcome) {
        fetchTallies[outcome].n += 1;
        if (outcome === 'error') return;
        const now = Date.now();
        lastSuccess = now;
        if (outcome === 'changed') lastUpdateAt = now;
      },
      usageReport(sent) {
        usageTallies[sent ? 'sent' : 'failed'].n += 1;
      },
    },
    register(prom, registers) {
      const { Counter, Gauge } = prom;
      const up = new Counter({ name: 'flag_proxy_up', help: 'Set to 1 while the proxy runs.', registers });
      const lastUpdate = new Gauge({
        name: 'last_metrics_update_epoch_timestamp_ms',
        help: 'Epoch milliseconds when the proxy last received a feature update.',
        registers,
        collect() {
          if (lastUpdateAt !== undefined) this.set(lastUpdateAt);
        },
      });
      const lastFetch = new Gauge({
        name: 'last_metrics_fetch_epoch_timestamp_ms',
        help: 'Epoch milliseconds when the proxy last checked for updates.',
        registers,
        collect() {
          if (lastSuccess !== undefined) this.set(lastSuccess);
        },
      });
      const fetches = deferredCounter(
        prom,
        registers,
        'flag_proxy_upstream_fetches_total',
        'Flag fetches from the upstream by outcome: changed (a new flag set, or bootstrap data at start), unchanged (same set or 304), error.',
        ['outcome'],
        () => Object.values(fetchTallies),
      );
      const snapshotAge = new Gauge({
        name: 'flag_proxy_flag_snapshot_age_seconds',
        help: 'Seconds since the upstream last answered a flag fetch (changed or unchanged); since the proxy started while it never has.',
        registers,
        collect() {
          this.set((Date.now() - (lastSuccess ?? createdAt)) / 1000);
        },
      });
      const usageReports = deferredCounter(
        prom,
        registers,
        'flag_proxy_upstream_usage_reports_total',
        'Usage reports sent to the upstream, by result: sent, or failed (the counts are kept for the next report).',
        ['result'],
        () => Object.values(usageTallies),
      );
      up.inc(1);
      zeroSeries(fetches, Object.values(fetchTallies));
      zeroSeries(usageReports, Object.values(usageTallies));
      return [up, lastUpdate, lastFetch, fetches, snapshotAge, usageReports];
    },
  };
}

/** Requests and latency per route: a tally per (method, status) seen, created on first sight. */
function requestMetrics(): Family<'route'> {
  const routeTallies = new Map<RouteLabel, Map<number, Tally<'route' | 'method' | 'status'>>>();
  const latencies = new Map<RouteLabel, Latency>();
  const recorders = new Map<RouteLabel, RouteRecorder>();
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
        let t = tallies.get(key);
        if (t === undefined) {
          t = { labels: { route, method: METHODS[m] ?? 'other', status: String(status) }, n: 0, reported: 0 };
          tallies.set(key, t);
        }
        t.n += 1;
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
    register(prom, registers) {
      const requests = deferredCounter(
        prom,
        registers,
        'flag_proxy_http_requests_total',
        'Requests the proxy answered, by route, method and final status.',
        ['route', 'method', 'status'],
        function* () {
          for (const tallies of routeTallies.values()) yield* tallies.values();
        },
      );
      const duration = routeLatencyHistogram(prom, registers, () => latencies.values());
      return [requests, duration];
    },
  };
}

/** Evaluation: the answer cache's outcomes, toggles evaluated, strategies that threw. */
function evaluationMetrics(): Family<'answerCache' | 'evaluated' | 'strategyError'> {
  const strategyErrors = tally();
  const cacheTallies = talliesOf('result', ['hit', 'miss', 'uncacheable'] as const);
  const evaluations = tally();
  return {
    api: {
      strategyError() {
        strategyErrors.n += 1;
      },
      answerCache(result) {
        cacheTallies[result].n += 1;
      },
      evaluated(toggles) {
        evaluations.n += toggles;
      },
    },
    register(prom, registers) {
      return [
        deferredCounter(
          prom,
          registers,
          'flag_proxy_strategy_errors_total',
          'Evaluations in which an activation strategy threw; the toggle counted as disabled.',
          [],
          () => [strategyErrors],
        ),
        deferredCounter(
          prom,
          registers,
          'flag_proxy_answer_cache_total',
          'Evaluation answers by cache outcome: hit, miss (computed and cached), uncacheable (depends on a random session, randomness or the clock).',
          ['result'],
          () => Object.values(cacheTallies),
        ),
        deferredCounter(
          prom,
          registers,
          'flag_proxy_toggle_evaluations_total',
          'Toggles evaluated for computed answers (one per toggle per answer; answers from the answer cache and 304s evaluate none).',
          [],
          () => [evaluations],
        ),
      ];
    },
  };
}

/** What SDKs send and hold: their usage reports, and the event streams open to them. */
function clientMetrics(): Family<'frontendReport' | 'eventStream' | 'pendingNotices'> {
  const reports = tally();
  const reportedToggles = tally();
  /** Streams open now, by surface, in the order the surfaces were first seen. */
  const open = new Map<string, number>();
  const refused = new Map<string, Tally<'surface'>>();
  const pending = new Map<string, () => number>();
  return {
    api: {
      pendingNotices(surface, read) {
        pending.set(surface, read);
      },
      frontendReport(toggles) {
        reports.n += 1;
        reportedToggles.n += toggles;
      },
      eventStream(surface, change) {
        if (change === 'refused') {
          let t = refused.get(surface);
          if (t === undefined) {
            t = { labels: { surface }, n: 0, reported: 0 };
            refused.set(surface, t);
          }
          t.n += 1;
        } else open.set(surface, (open.get(surface) ?? 0) + (change === 'opened' ? 1 : -1));
      },
    },
    register(prom, registers) {
      const frontendReports = deferredCounter(
        prom,
        registers,
        'flag_proxy_frontend_metrics_reports_total',
        'Usage reports accepted from frontend and server SDKs on /proxy/client/metrics.',
        [],
        () => [reports],
      );
      const frontendToggles = deferredCounter(
        prom,
        registers,
        'flag_proxy_frontend_metrics_toggles_total',
        'Toggles listed in the accepted SDK usage reports.',
        [],
        () => [reportedToggles],
      );
      const openStreams = new prom.Gauge({
        name: 'flag_proxy_event_streams',
        help: 'Server-sent event streams open now, by surface.',
        labelNames: ['surface'],
        registers,
        collect() {
          for (const [surface, n] of open) this.set({ surface }, n);
        },
      });
      const refusedStreams = deferredCounter(
        prom,
        registers,
        'flag_proxy_event_streams_refused_total',
        'Event streams refused because maxEventStreams were open, by surface.',
        ['surface'],
        () => refused.values(),
      );
      const pendingNotices = new prom.Gauge({
        name: 'flag_proxy_event_stream_notices_pending',
        help: 'Open event streams that a paced change notice has not reached yet, by surface (OFREP: ofrep.refetchNoticesPerSecond).',
        labelNames: ['surface'],
        registers,
        collect() {
          for (const [surface, read] of pending) this.set({ surface }, read());
        },
      });
      return [frontendReports, frontendToggles, openStreams, refusedStreams, pendingNotices];
    },
  };
}

/**
 * Creates the metrics of one proxy, family by family. With an injected registry they are
 * registered in it now; otherwise prom-client and the proxy's own registry wait for the first
 * {@link ProxyMetrics.render} (or read of {@link ProxyMetrics.registry}).
 */
export function createProxyMetrics(injected: Registry | undefined): ProxyMetrics {
  const families = [upstreamMetrics(), evaluationMetrics(), requestMetrics(), clientMetrics()] as const;
  const [upstream, evaluation, requests, clients] = families;
  let registry: Registry | undefined;
  let names: string[] = [];
  let closed = false;
  const materialize = (): Registry => {
    if (registry !== undefined) return registry;
    const prom = loadOnDemand('prom-client') as PromClient;
    registry = injected ?? new prom.Registry();
    // Closed before anything was registered: an empty registry, as close() would have left it.
    if (!closed) {
      const registers = [registry];
      names = families.flatMap((family) => family.register(prom, registers).map((m) => (m as { name: string }).name));
    }
    return registry;
  };
  if (injected !== undefined) materialize();
  return {
    get registry() {
      return materialize();
    },
    render: () => materialize().metrics(),
    ...upstream.api,
    ...evaluation.api,
    ...requests.api,
    ...clients.api,
    close() {
      closed = true;
      if (registry === undefined) return;
      for (const name of names) registry.removeSingleMetric(name);
      names = [];
    },
  };
}
