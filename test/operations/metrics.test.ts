/**
 * The operator's metrics, on the proxy's own registry (or an injected one): requests by route,
 * method and status, latency, evaluations, answer cache, upstream fetch outcomes, snapshot age,
 * SDK usage reports received, and usage reports sent upstream.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { CLIENT_KEY, feature, eventually, postJson, refetchSameFlags, startHarness, type Harness } from '../support/harness.js';
import { sample, samples } from './support.js';
import { LATENCY_BUCKETS } from '../../src/metrics.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const requests = (text: string, route: string, method: string, status: string) =>
  sample(text, 'flag_proxy_http_requests_total', { route, method, status });

const now = () => new Date().toISOString();

describe('flag_proxy_http_requests_total and flag_proxy_http_request_duration_seconds', () => {
  it('count every answered request by route, method and final status, and time it', async () => {
    h = await startHarness({ features: [feature('a')] });
    expect((await h.request('/proxy')).status).toBe(200);
    const first = await h.raw('/proxy', { headers: { authorization: CLIENT_KEY } });
    expect((await h.raw('/proxy', { headers: { authorization: CLIENT_KEY, 'if-none-match': first.headers.etag! } })).status).toBe(304);
    expect((await h.request('/proxy', { key: null })).status).toBe(401);
    expect((await h.request('/proxy/all')).status).toBe(501);
    expect((await h.request('/proxy', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{oops' })).status).toBe(400);
    expect((await h.request('/proxy/health')).status).toBe(200);
    expect((await h.request('/proxy/unknown')).status).toBe(404);
    expect((await h.raw('/proxy', { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' } })).status).toBe(204);

    const text = await h.proxy.metrics();
    expect(requests(text, '/proxy', 'GET', '200')).toBe(2);
    expect(requests(text, '/proxy', 'GET', '304')).toBe(1);
    expect(requests(text, '/proxy', 'GET', '401')).toBe(1);
    expect(requests(text, '/proxy', 'POST', '400')).toBe(1);
    expect(requests(text, '/proxy', 'OPTIONS', '204')).toBe(1);
    expect(requests(text, '/proxy/all', 'GET', '501')).toBe(1);
    expect(requests(text, '/proxy/health', 'GET', '200')).toBe(1);
    expect(requests(text, 'unmatched', 'GET', '404')).toBe(1);

    const histogram = 'flag_proxy_http_request_duration_seconds';
    expect(sample(text, `${histogram}_count`, { route: '/proxy' })).toBe(6);
    expect(sample(text, `${histogram}_bucket`, { route: '/proxy', le: '+Inf' })).toBe(6);
    expect(sample(text, `${histogram}_sum`, { route: '/proxy' })).toBeGreaterThan(0);
    const buckets = LATENCY_BUCKETS.map((le) => sample(text, `${histogram}_bucket`, { route: '/proxy', le: String(le) }) as number);
    expect(buckets.every((n, i) => n >= (buckets[i - 1] ?? 0))).toBe(true);
    expect(text).toContain(`# TYPE ${histogram} histogram`);
    expect(text).toContain('# TYPE flag_proxy_http_requests_total counter');
  });

  it('counts a scrape over HTTP, and keeps counting across scrapes (deltas, never double)', async () => {
    h = await startHarness({ features: [feature('a')] });
    await h.request('/proxy');
    expect(requests(await h.proxy.metrics(), '/proxy', 'GET', '200')).toBe(1);
    await h.request('/proxy');
    await h.request('/proxy');
    const scraped = await (await h.request('/proxy/internal-backstage/prometheus')).text();
    expect(requests(scraped, '/proxy', 'GET', '200')).toBe(3);
    expect(requests(await h.proxy.metrics(), '/proxy/internal-backstage/prometheus', 'GET', '200')).toBe(1);
  });

  it('counts 503s before the first sync under their route', async () => {
    const { createTestFlagServer } = await import('flag-proxy/testing');
    const upstream = await createTestFlagServer();
    // After afterEach has closed the harness's proxy, which does not close an upstream it was given.
    onTestFinished(() => upstream.close());
    upstream.setFault({ status: 500, routes: 'features' });
    h = await startHarness({ upstream, noWait: true });
    expect((await h.request('/proxy')).status).toBe(503);
    expect(requests(await h.proxy.metrics(), '/proxy', 'GET', '503')).toBe(1);
  });
});

describe('flag_proxy_toggle_evaluations_total and flag_proxy_answer_cache_total', () => {
  it('count toggles evaluated for computed answers; a cached answer evaluates none', async () => {
    h = await startHarness({ features: [feature('a'), feature('b'), feature('c')] });
    const evaluations = async () => sample(await h!.proxy.metrics(), 'flag_proxy_toggle_evaluations_total');
    expect(await evaluations()).toBe(0);
    await h.request('/proxy?userId=1');
    expect(await evaluations()).toBe(3);
    // Asked again, it is evaluated again; the third time, evaluated and kept; from then on it is read from the cache.
    await h.request('/proxy?userId=1');
    expect(await evaluations()).toBe(6);
    await h.request('/proxy?userId=1');
    expect(await evaluations()).toBe(9);
    await h.request('/proxy?userId=1');
    expect(await evaluations()).toBe(9);
    const text = await h.proxy.metrics();
    expect(sample(text, 'flag_proxy_answer_cache_total', { result: 'miss' })).toBe(3);
    expect(sample(text, 'flag_proxy_answer_cache_total', { result: 'hit' })).toBe(1);
    await h.request('/proxy', postJson({ context: { userId: '2' }, toggles: ['a', 'unknown'] }));
    expect(await evaluations()).toBe(11);
  });
});

describe('flag_proxy_upstream_fetches_total and flag_proxy_flag_snapshot_age_seconds', () => {
  it('count changed, unchanged and failed fetches, and show the snapshot aging while the upstream fails', async () => {
    h = await startHarness({ features: [feature('a')], options: { refreshInterval: 50 } });
    const fetches = async (outcome: string) => sample(await h!.proxy.metrics(), 'flag_proxy_upstream_fetches_total', { outcome });
    await eventually(async () => expect(await fetches('unchanged')).toBeGreaterThanOrEqual(1));
    expect(await fetches('changed')).toBe(1);
    expect(await fetches('error')).toBe(0);
    const age = async () => sample(await h!.proxy.metrics(), 'flag_proxy_flag_snapshot_age_seconds') as number;
    expect(await age()).toBeLessThan(0.5);

    h.upstream.setFault({ status: 500, routes: 'features' });
    // Each failed fetch counts at once; the snapshot keeps aging while they go on.
    await eventually(async () => expect(await fetches('error')).toBeGreaterThanOrEqual(1), 2000);
    await eventually(async () => expect(await age()).toBeGreaterThan(0.25), 2000);
    expect(await fetches('error')).toBeGreaterThanOrEqual(3);

    h.upstream.setFault(undefined);
    h.upstream.upsertFeature(feature('b'));
    await eventually(async () => expect(await fetches('changed')).toBe(2), 5000);
    expect(await age()).toBeLessThan(0.25);
  });

  it('counts the same flag set fetched again under a new ETag as unchanged', async () => {
    h = await startHarness({ features: [feature('a')], options: { refreshInterval: 50 } });
    const fetches = async (outcome: string) => sample(await h!.proxy.metrics(), 'flag_proxy_upstream_fetches_total', { outcome });
    await eventually(async () => expect(await fetches('unchanged')).toBeGreaterThanOrEqual(1));
    expect(await fetches('changed')).toBe(1);
    await refetchSameFlags(h);
    expect(await fetches('changed')).toBe(1);
  });

  it('counts a refused connection as an error, and ages from the start while no fetch ever succeeded', async () => {
    const { createMemoryStorageProvider } = await import('flag-proxy/testing');
    const storage = createMemoryStorageProvider({ 'flag-proxy': { version: 2, features: [feature('from-backup')] } });
    // Port 2: nothing listens there, and fetch does not refuse it as it does port 1. A port freed
    // by closing a server can be handed to a server another test file starts meanwhile, and then
    // the fetch succeeds (seen in CI, stop 44).
    const flagUrl = 'http://127.0.0.1:2/api/';
    h = await startHarness({ noWait: true, options: { flagUrl, storageProvider: storage, refreshInterval: 50 } });
    await h.proxy.ready;
    await new Promise((r) => setTimeout(r, 300));
    const text = await h.proxy.metrics();
    expect(sample(text, 'flag_proxy_flag_snapshot_age_seconds')).toBeGreaterThan(0.25);
    expect(sample(text, 'flag_proxy_upstream_fetches_total', { outcome: 'changed' })).toBe(0);
    await eventually(async () => expect(sample(await h!.proxy.metrics(), 'flag_proxy_upstream_fetches_total', { outcome: 'error' })).toBeGreaterThanOrEqual(1), 10_000);
  });
});

describe('SDK usage reports received, and usage reports sent upstream', () => {
  it('count accepted reports and their toggles; rejected reports are not counted', async () => {
    h = await startHarness({ features: [feature('a')], options: { metricsInterval: 100 } });
    const report = (toggles: Record<string, unknown>) => postJson({ appName: 'web', instanceId: 'w1', bucket: { start: now(), stop: now(), toggles } });
    expect((await h.request('/proxy/client/metrics', report({ a: { yes: 1, no: 0 }, b: { yes: 0, no: 2 } }))).status).toBe(200);
    expect((await h.request('/proxy/client/metrics', report({ a: { yes: -1, no: 0 } }))).status).toBe(400);
    expect((await h.request('/proxy/client/metrics', { ...report({ a: { yes: 1, no: 0 } }), key: null })).status).toBe(401);
    let text = await h.proxy.metrics();
    expect(sample(text, 'flag_proxy_frontend_metrics_reports_total')).toBe(1);
    expect(sample(text, 'flag_proxy_frontend_metrics_toggles_total')).toBe(2);

    await eventually(async () => expect(sample(await h!.proxy.metrics(), 'flag_proxy_upstream_usage_reports_total', { result: 'sent' })).toBe(1));
    h.upstream.setFault({ status: 500, routes: 'metrics' });
    await h.request('/proxy', postJson({ toggles: ['a'] }));
    await eventually(async () => expect(sample(await h!.proxy.metrics(), 'flag_proxy_upstream_usage_reports_total', { result: 'failed' })).toBeGreaterThanOrEqual(1));
    text = await h.proxy.metrics();
    expect(sample(text, 'flag_proxy_upstream_usage_reports_total', { result: 'sent' })).toBe(1);
  });
});

describe('metricsRegistry', () => {
  it('registers every metric in an injected registry, readable as JSON too, and removes them on close', async () => {
    const registry = new Registry();
    h = await startHarness({ features: [feature('a')], options: { metricsRegistry: registry } });
    await h.request('/proxy');
    const names = (await registry.getMetricsAsJSON()).map((m) => m.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'flag_proxy_up',
        'last_metrics_update_epoch_timestamp_ms',
        'last_metrics_fetch_epoch_timestamp_ms',
        'flag_proxy_strategy_errors_total',
        'flag_proxy_http_requests_total',
        'flag_proxy_http_request_duration_seconds',
        'flag_proxy_toggle_evaluations_total',
        'flag_proxy_answer_cache_total',
        'flag_proxy_upstream_fetches_total',
        'flag_proxy_flag_snapshot_age_seconds',
        'flag_proxy_frontend_metrics_reports_total',
        'flag_proxy_frontend_metrics_toggles_total',
        'flag_proxy_upstream_usage_reports_total',
      ]),
    );
    const histogram = (await registry.getMetricsAsJSON()).find((m) => m.name === 'flag_proxy_http_request_duration_seconds')!;
    expect(histogram.type).toBe('histogram');
    expect(histogram.values).toContainEqual(expect.objectContaining({ metricName: 'flag_proxy_http_request_duration_seconds_count', labels: { route: '/proxy' }, value: 1 }));
    expect(histogram.values).toContainEqual(expect.objectContaining({ labels: { le: '+Inf', route: '/proxy' }, value: 1 }));
    // Two scrapes, so leave out the one sample computed at scrape time (the snapshot's age).
    const stable = (text: string) => text.split('\n').filter((l) => !l.startsWith('flag_proxy_flag_snapshot_age_seconds ')).join('\n');
    expect(stable(await registry.metrics())).toBe(stable(await h.proxy.metrics()));
    await h.proxy.close();
    expect(samples(await registry.metrics()).filter((s) => s.name.startsWith('flag_proxy_'))).toEqual([]);
  });
});
