/**
 * A real server-side SDK (unleash-client, `new Unleash()`, never the initialize() singleton)
 * pointed at the proxy's `/proxy/client/features` with a server-side token evaluates every flag
 * of every client specification state exactly as one pointed at the flag server itself. The SDK
 * appends `client/features`, `client/register` and `client/metrics` to its URL; all three land on
 * the proxy's routes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Unleash } from 'unleash-client';
import { loadClientSpecs, serverSdk as sdk, synchronized as ready, type SpecCase } from '../support/client-spec.js';
import { eventually, feature, postJson, SERVER_TOKEN, startHarness, type Harness } from '../support/harness.js';
import { sample } from './support.js';

/**
 * What an SDK answers for one test: whether the toggle is enabled, and for variant tests the
 * variant (other tests' contexts may leave the variant to chance: no userId or sessionId).
 */
function answer(client: Unleash, test: SpecCase, variant: boolean): unknown {
  return variant ? client.getVariant(test.toggleName, test.context) : client.isEnabled(test.toggleName, test.context);
}

for (const spec of loadClientSpecs()) {
  const tests = [...spec.tests.map((test) => ({ test, variant: false })), ...spec.variantTests.map((test) => ({ test, variant: true }))];

  describe(`unleash-client through /proxy/client/features: ${spec.name}`, () => {
    let h: Harness;
    let direct: Unleash;
    let proxied: Unleash;
    beforeAll(async () => {
      h = await startHarness({
        features: spec.features,
        segments: spec.segments,
        options: { expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } },
      });
      direct = sdk(h.upstream.url, h.upstream.token, 'direct-sdk');
      proxied = sdk(`${h.base}/proxy/`, SERVER_TOKEN, 'proxied-sdk');
      await Promise.all([ready(direct), ready(proxied)]);
    });
    afterAll(async () => {
      direct?.destroy();
      proxied?.destroy();
      await h?.close();
    });

    it(`evaluates all ${tests.length} cases as the SDK pointed at the flag server does`, () => {
      const mismatches = tests
        .map(({ test, variant }) => ({ test: test.description, direct: answer(direct, test, variant), proxied: answer(proxied, test, variant) }))
        .filter((r) => JSON.stringify(r.direct) !== JSON.stringify(r.proxied));
      expect(mismatches).toEqual([]);
    });

    it('passes the specification through the proxy', () => {
      for (const test of spec.tests) expect(proxied.isEnabled(test.toggleName, test.context), test.description).toBe(test.expectedResult);
      for (const test of spec.variantTests) {
        const expected = test.expectedResult as Record<string, unknown>;
        const variant = proxied.getVariant(test.toggleName, test.context) as unknown as Record<string, unknown>;
        const actual = Object.fromEntries(Object.keys(expected).map((k) => [k, variant[k]]));
        expect(actual, test.description).toEqual(expected);
      }
    });
  });
}

describe('unleash-client registration and usage reports through the proxy', () => {
  it('are answered 200 on /proxy/client/register and /proxy/client/metrics, and the counts reach the upstream', async () => {
    const h = await startHarness({ features: [feature('server-side-a')], options: { expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } } });
    // No trailing slash: the SDK adds it before appending client/...
    const client = sdk(`${h.base}/proxy`, SERVER_TOKEN, 'reporting-sdk', 100);
    try {
      await ready(client);
      for (let i = 0; i < 3; i += 1) expect(client.isEnabled('server-side-a')).toBe(true);
      const routes = async () => h.proxy.metrics();
      await eventually(async () => {
        const text = await routes();
        expect(sample(text, 'flag_proxy_http_requests_total', { route: '/proxy/client/register', method: 'POST', status: '200' })).toBe(1);
        expect(sample(text, 'flag_proxy_http_requests_total', { route: '/proxy/client/metrics', method: 'POST', status: '200' })).toBeGreaterThanOrEqual(1);
      });
      const text = await routes();
      expect(sample(text, 'flag_proxy_http_requests_total', { route: '/proxy/client/features', method: 'GET', status: '200' })).toBe(1);
      expect(sample(text, 'flag_proxy_frontend_metrics_toggles_total')).toBeGreaterThanOrEqual(1);
    } finally {
      client.destroy();
      await h.proxy.close();
    }
    // The proxy's last report upstream carries the SDK's counts, under the proxy's own appName.
    expect(h.upstream.countsFor('server-side-a').yes).toBe(3);
    expect(h.upstream.metrics.every((m) => m.appName === 'flag-proxy')).toBe(true);
    await h.close();
  });

  it('lets another flag-proxy use this one as its upstream, with a server-side token', async () => {
    const edge = await startHarness({ features: [feature('chained'), feature('off', { enabled: false })], options: { expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } } });
    try {
      const inner = await startHarness({ upstream: edge.upstream, options: { flagUrl: `${edge.base}/proxy/`, flagApiToken: SERVER_TOKEN, metricsInterval: 60_000 } });
      try {
        expect((await (await inner.request('/proxy')).json()).toggles.map((t: { name: string }) => t.name)).toEqual(['chained']);
        await inner.request('/proxy', postJson({ toggles: ['chained'] }));
      } finally {
        await inner.close();
      }
      // The inner proxy's report went to the edge proxy, which passes it on when it closes.
      await edge.proxy.close();
      expect(edge.upstream.countsFor('chained').yes).toBe(1);
    } finally {
      await edge.close();
    }
  });

  it('is refused with a client key (401), as only server-side tokens may read definitions', async () => {
    const h = await startHarness({ features: [feature('a')], options: { expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } } });
    try {
      const res = await h.request('/proxy/client/features');
      expect(res.status).toBe(401);
    } finally {
      await h.close();
    }
  });
});
