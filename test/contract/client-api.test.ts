/**
 * The client API for server SDKs and other proxies (`/api/client/…`): server-side tokens only (401
 * to everyone when none are configured), the definitions with their segments, filtered by
 * `namePrefix` and `project`, ETag/304, one flag's definition (404 when unknown), and usage
 * reports in both the server SDK's and the browser's format, answered 202 and forwarded upstream.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestSegment } from 'flag-proxy/testing';
import { CLIENT_KEY, SERVER_TOKEN, eventually, feature, postJson, startHarness, type Harness } from '../support/harness.js';

const SEGMENTS: TestSegment[] = [
  { id: 1, constraints: [{ contextName: 'region', operator: 'IN', values: ['eu'], inverted: false }] },
  { id: 2, constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'], inverted: false }] },
];
const segmented = (segment: number) => [{ name: 'default', parameters: {}, constraints: [], segments: [segment] }] as never;
const FEATURES = [
  feature('web.banner', { project: 'web', strategies: segmented(1) }),
  feature('web.footer', { project: 'web' }),
  feature('api.limits', { project: 'api', strategies: segmented(2) }),
  feature('plain'),
];
const now = () => new Date().toISOString();
const token = { headers: { authorization: SERVER_TOKEN } };
const names = (body: { features: Array<{ name: string }> }) => body.features.map((f) => f.name);

describe('/api/client with server-side tokens', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ features: FEATURES, segments: SEGMENTS, options: { metricsInterval: 100, expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } } });
  });
  afterAll(() => h.close());

  it('answers GET /api/client/features with every definition, the segments they use, and an ETag', async () => {
    const res = await h.raw('/api/client/features', token);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers.etag).toMatch(/^W\/"/);
    const body = JSON.parse(res.body);
    expect(Object.keys(body)).toEqual(['version', 'features', 'query', 'segments']);
    expect(body.version).toBe(2);
    expect(names(body)).toEqual(['web.banner', 'web.footer', 'api.limits', 'plain']);
    expect(body.features[0]).toMatchObject({ name: 'web.banner', project: 'web', strategies: [{ name: 'default', segments: [1] }] });
    expect(body.query).toEqual({});
    expect(body.segments).toEqual(SEGMENTS);
  });

  it('filters by namePrefix and project (repeated or comma-separated), with only the segments still used', async () => {
    const byPrefix = JSON.parse((await h.raw('/api/client/features?namePrefix=web.', token)).body);
    expect(names(byPrefix)).toEqual(['web.banner', 'web.footer']);
    expect(byPrefix.query).toEqual({ namePrefix: 'web.' });
    expect(byPrefix.segments.map((s: { id: number }) => s.id)).toEqual([1]);
    const byProject = JSON.parse((await h.raw('/api/client/features?project=api', token)).body);
    expect(names(byProject)).toEqual(['api.limits']);
    expect(byProject.query).toEqual({ project: ['api'] });
    expect(byProject.segments.map((s: { id: number }) => s.id)).toEqual([2]);
    expect(names(JSON.parse((await h.raw('/api/client/features?project=api&project=default', token)).body))).toEqual(['api.limits', 'plain']);
    expect(names(JSON.parse((await h.raw('/api/client/features?project=web,api&namePrefix=api', token)).body))).toEqual(['api.limits']);
    expect(names(JSON.parse((await h.raw('/api/client/features?project=none', token)).body))).toEqual([]);
  });

  it('answers 304 to a matching If-None-Match, per filter, and 200 again once the flag set changed', async () => {
    const first = await h.raw('/api/client/features?namePrefix=web.', token);
    const etag = String(first.headers.etag);
    const again = await h.raw('/api/client/features?namePrefix=web.', { headers: { authorization: SERVER_TOKEN, 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers.etag).toBe(etag);
    const other = await h.raw('/api/client/features', { headers: { authorization: SERVER_TOKEN, 'if-none-match': etag } });
    expect(other.status).toBe(200);
    h.upstream.upsertFeature(feature('web.new', { project: 'web' }));
    await eventually(async () => {
      const changed = await h.raw('/api/client/features?namePrefix=web.', { headers: { authorization: SERVER_TOKEN, 'if-none-match': etag } });
      expect(changed.status).toBe(200);
      expect(names(JSON.parse(changed.body))).toEqual(['web.banner', 'web.footer', 'web.new']);
    });
  });

  it('answers 304 also when the request says Cache-Control: no-cache, as fetch adds to every If-None-Match request', async () => {
    const etag = String((await h.raw('/api/client/features?project=api', token)).headers.etag);
    const res = await h.raw('/api/client/features?project=api', {
      headers: { authorization: SERVER_TOKEN, 'if-none-match': etag, 'cache-control': 'no-cache', pragma: 'no-cache' },
    });
    expect(res.status).toBe(304);
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['content-type']).toBeUndefined();
  });

  it('answers one definition on /api/client/features/<name>, 404 when unknown', async () => {
    const res = await h.request('/api/client/features/api.limits', { key: SERVER_TOKEN });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ name: 'api.limits', project: 'api', strategies: [{ segments: [2] }] });
    const missing = await h.request('/api/client/features/nope', { key: SERVER_TOKEN });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'No flag named "nope"' });
  });

  it('answers 401 to a client key, a wrong token or none', async () => {
    for (const key of [CLIENT_KEY, 'wrong', null]) {
      expect((await h.request('/api/client/features', { key })).status).toBe(401);
      expect((await h.request('/api/client/features/plain', { key })).status).toBe(401);
    }
    const report = { appName: 'a', instanceId: 'i', bucket: { start: now(), stop: now(), toggles: {} } };
    expect((await h.request('/api/client/metrics', { ...postJson(report), key: CLIENT_KEY })).status).toBe(401);
  });

  it('takes usage reports in the server SDK format and in the browser format (202), and forwards the counts', async () => {
    const serverFormat = {
      appName: 'node-app',
      instanceId: 'node-1',
      connectionId: 'c-1',
      platformName: 'node',
      platformVersion: '20',
      yggdrasilVersion: null,
      specVersion: '5.2.0',
      bucket: { start: now(), stop: now(), toggles: { plain: { yes: 3, no: 1, variants: {} } } },
    };
    const browserFormat = { appName: 'next-app', instanceId: 'browser', impactMetrics: [], bucket: { start: now(), stop: now(), toggles: { plain: { yes: 2, no: 0, variants: { v: 2 } } } } };
    for (const report of [serverFormat, browserFormat]) {
      const res = await h.request('/api/client/metrics', { ...postJson(report), key: SERVER_TOKEN });
      expect(res.status).toBe(202);
      expect(await res.text()).toBe('');
    }
    await eventually(() => expect(h.upstream.countsFor('plain')).toEqual({ yes: 5, no: 1, variants: { v: 2 } }));
    const bad = await h.request('/api/client/metrics', { ...postJson({ ...serverFormat, bucket: { ...serverFormat.bucket, toggles: { plain: { yes: -1, no: 0 } } } }), key: SERVER_TOKEN });
    expect(bad.status).toBe(400);
  });

  it('answers registrations 202', async () => {
    const registration = { appName: 'node-app', instanceId: 'node-1', sdkVersion: 'unleash-node-sdk:6.12.1', strategies: ['default'], started: now(), interval: 15000 };
    expect((await h.request('/api/client/register', { ...postJson(registration), key: SERVER_TOKEN })).status).toBe(202);
    expect((await h.request('/api/client/register', { ...postJson(registration), key: CLIENT_KEY })).status).toBe(401);
  });
});

describe('/api/client without server-side tokens', () => {
  it('answers 401 on every route', async () => {
    const h = await startHarness({ features: FEATURES });
    try {
      expect((await h.request('/api/client/features')).status).toBe(401);
      expect((await h.request('/api/client/features', { key: '' })).status).toBe(401);
      expect((await h.request('/api/client/features/plain')).status).toBe(401);
      const registration = { appName: 'a', strategies: [], started: now(), interval: 1 };
      expect((await h.request('/api/client/register', postJson(registration))).status).toBe(401);
    } finally {
      await h.close();
    }
  });
});

describe('/api/client/features before the first sync', () => {
  it('answers 503', async () => {
    const h = await startHarness({ noWait: true, options: { refreshInterval: 60_000, expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } } });
    h.upstream.setFault({ status: 500, routes: 'features' });
    try {
      expect((await h.request('/api/client/features', { key: SERVER_TOKEN })).status).toBe(503);
    } finally {
      await h.close();
    }
  });
});
