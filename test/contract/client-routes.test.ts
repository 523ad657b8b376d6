/** COMPATIBILITY.md §1–§3 for SDK-facing routes: usage reports, registration, server-side definitions, health, metrics. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_KEY, SERVER_TOKEN, eventually, feature, postJson, startHarness, type Harness } from '../support/harness.js';

const now = () => new Date().toISOString();
const report = (toggles: Record<string, unknown>) => ({
  appName: 'browser-app',
  instanceId: 'browser-1',
  environment: 'dev',
  bucket: { start: now(), stop: now(), toggles },
});

describe('POST /proxy/client/metrics', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      features: [feature('a'), feature('b')],
      options: { metricsInterval: 100, expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } },
    });
  });
  afterAll(() => h.close());

  it('answers 200 OK and forwards the counts upstream with the next report, under the proxy appName', async () => {
    const res = await h.request('/proxy/client/metrics', postJson(report({ a: { yes: 3, no: 1, variants: { blue: 2, disabled: 1 } } })));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).toBe('OK');
    const received = await h.upstream.waitForMetrics((m) => 'a' in m.bucket.toggles);
    expect(received.appName).toBe('flag-proxy');
    expect(received.bucket.toggles.a).toEqual({ yes: 3, no: 1, variants: { blue: 2, disabled: 1 } });
    expect(received.bucket.toggles.a).toBeDefined();
  });

  it('accepts the same report on /proxy/all/client/metrics and from a server-side token', async () => {
    expect((await h.request('/proxy/all/client/metrics', postJson(report({ b: { yes: 1, no: 0 } })))).status).toBe(200);
    expect((await h.request('/proxy/client/metrics', { ...postJson(report({ b: { yes: 1, no: 0 } })), key: SERVER_TOKEN })).status).toBe(200);
    await eventually(() => expect(h.upstream.countsFor('b').yes).toBe(2));
  });

  it('adds large counts in bulk, without work proportional to them', async () => {
    const started = performance.now();
    const res = await h.request('/proxy/client/metrics', postJson(report({ big: { yes: 2 ** 31, no: 2 ** 31 - 1 } })));
    expect(res.status).toBe(200);
    expect(performance.now() - started).toBeLessThan(1000);
    await eventually(() => expect(h.upstream.countsFor('big')).toMatchObject({ yes: 2 ** 31, no: 2 ** 31 - 1 }));
  });

  it('returns 401 without a key, after validating the body', async () => {
    expect((await h.request('/proxy/client/metrics', { ...postJson(report({ a: { yes: 1, no: 0 } })), key: null })).status).toBe(401);
    const invalid = await h.request('/proxy/client/metrics', { ...postJson({ some: 'blob' }), key: null });
    expect(invalid.status).toBe(400);
  });

  it('returns 400 naming the missing appName for an unrelated body', async () => {
    const res = await h.request('/proxy/client/metrics', postJson({ some: 'blob' }));
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const body = await res.json();
    expect(body.error).toBe('Request validation failed');
    expect(body.validation[0]).toMatchObject({ instancePath: '/body', message: "must have required property 'appName'" });
  });

  it.each([
    ['a negative count', { yes: -1, no: 0 }, 'must be >= 0'],
    ['a count above 2^31', { yes: 2 ** 31 + 1, no: 0 }, `must be <= ${2 ** 31}`],
    ['a fractional count', { yes: 1.5, no: 0 }, 'must be integer'],
    ['a string count', { yes: '5', no: 0 }, 'must be integer'],
    ['a negative variant count', { yes: 1, no: 0, variants: { v: -3 } }, 'must be >= 0'],
  ])('returns 400 for %s (predecessor: 500 or huge allocations)', async (_label, counts, message) => {
    const res = await h.request('/proxy/client/metrics', postJson(report({ a: counts })));
    expect(res.status).toBe(400);
    expect((await res.json()).validation[0].message).toBe(message);
  });

  it('returns 400 when bucket.start is not a date-time', async () => {
    const res = await h.request('/proxy/client/metrics', postJson({ appName: 'x', instanceId: 'i', bucket: { start: 'yesterday', stop: now(), toggles: {} } }));
    expect(res.status).toBe(400);
    expect((await res.json()).validation[0]).toMatchObject({ instancePath: '/body/bucket/start', message: 'must match format "date-time"' });
  });
});

describe('POST /proxy/client/metrics before the proxy is ready', () => {
  it('is not gated on readiness', async () => {
    const h = await startHarness({ noWait: true, options: { refreshInterval: 60_000 } });
    h.upstream.setFault({ status: 500, routes: 'features' });
    try {
      expect((await h.request('/proxy/client/metrics', postJson(report({ a: { yes: 1, no: 0 } })))).status).toBe(200);
    } finally {
      await h.close();
    }
  });
});

describe('POST /proxy/client/register', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ options: { expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } } });
  });
  afterAll(() => h.close());
  const registration = { appName: 'server-app', instanceId: 'i-1', strategies: ['default'], started: now(), interval: 10_000 };

  it('answers 200 OK to a client key or a server-side token', async () => {
    const res = await h.request('/proxy/client/register', postJson(registration));
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('OK');
    expect((await h.request('/proxy/client/register', { ...postJson(registration), key: SERVER_TOKEN })).status).toBe(200);
  });

  it('returns 400 when interval is missing and 401 without a key', async () => {
    const { interval: _omit, ...missing } = registration;
    const res = await h.request('/proxy/client/register', postJson(missing));
    expect(res.status).toBe(400);
    expect((await res.json()).validation[0].message).toBe("must have required property 'interval'");
    expect((await h.request('/proxy/client/register', { ...postJson(registration), key: null })).status).toBe(401);
  });
});

describe('GET /proxy/client/features', () => {
  it('returns 401 to everyone when no server-side tokens are configured', async () => {
    const h = await startHarness({ features: [feature('a')] });
    try {
      expect((await h.request('/proxy/client/features')).status).toBe(401);
    } finally {
      await h.close();
    }
  });

  it('serves the raw definitions to a server-side token, and 401 to a client key', async () => {
    const h = await startHarness({
      features: [feature('a', { strategies: [{ name: 'userWithId', parameters: { userIds: '1' }, constraints: [] }] as never })],
      options: { expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } },
    });
    try {
      const res = await h.request('/proxy/client/features', { key: SERVER_TOKEN });
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=2');
      const body = await res.json();
      expect(body.version).toBe(2);
      expect(body.features).toHaveLength(1);
      expect(body.features[0].strategies[0]).toMatchObject({ name: 'userWithId', parameters: { userIds: '1' } });
      expect((await h.request('/proxy/client/features', { key: CLIENT_KEY })).status).toBe(401);
    } finally {
      await h.close();
    }
  });
});

describe('GET /proxy/health and /proxy/internal-backstage/prometheus', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ features: [feature('a')] });
  });
  afterAll(() => h.close());

  it('answers health with 200 ok as text/html, without a key', async () => {
    const res = await h.request('/proxy/health', { key: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('etag')).toBe('W/"2-eoX0dku9ba8cNUXvu/DyeabcC+s"');
    expect(await res.text()).toBe('ok');
  });

  it('serves the three metrics of SPEC.md without a key', async () => {
    const res = await h.request('/proxy/internal-backstage/prometheus', { key: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8; version=0.0.4');
    const text = await res.text();
    expect(text).toMatch(/^flag_proxy_up 1$/m);
    const update = Number(/^last_metrics_update_epoch_timestamp_ms (\d+)/m.exec(text)?.[1]);
    const fetched = Number(/^last_metrics_fetch_epoch_timestamp_ms (\d+)/m.exec(text)?.[1]);
    expect(update).toBeGreaterThan(Date.now() - 60_000);
    expect(fetched).toBeGreaterThanOrEqual(update);
  });
});
