/** Unleash Edge's probe paths: `/internal-backstage/health` (liveness) and `/ready` (503 until the first sync). */
import { describe, expect, it } from 'vitest';
import { eventually, feature, startHarness } from '../support/harness.js';

describe('GET /internal-backstage/health and /internal-backstage/ready', () => {
  it('answers health OK at once, ready 503 NOTREADY until the first sync and READY after, without a key', async () => {
    const h = await startHarness({ features: [feature('a')], noWait: true, options: { refreshInterval: 100 } });
    h.upstream.setFault({ status: 500, routes: 'features' });
    try {
      const health = await h.request('/internal-backstage/health', { key: null });
      expect(health.status).toBe(200);
      expect(health.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(await health.json()).toEqual({ status: 'OK' });
      const notReady = await h.request('/internal-backstage/ready', { key: null });
      expect(notReady.status).toBe(503);
      expect(await notReady.json()).toEqual({
        error: 'The flag proxy has not connected to the flag API and is not ready to accept requests yet.',
        status: 'NOTREADY',
      });
      h.upstream.setFault(undefined);
      await eventually(async () => {
        const ready = await h.request('/internal-backstage/ready', { key: null });
        expect(ready.status).toBe(200);
        expect(await ready.json()).toEqual({ status: 'READY' });
      });
      expect((await h.raw('/internal-backstage/ready', { method: 'HEAD' })).status).toBe(200);
      expect((await h.request('/internal-backstage/ready', { key: null })).headers.get('cache-control')).toBe('no-store');
    } finally {
      await h.close();
    }
  });

  it('answers ready 503 once the proxy is closing, while health stays OK', async () => {
    const h = await startHarness({ features: [feature('a')] });
    try {
      expect((await h.request('/internal-backstage/ready', { key: null })).status).toBe(200);
      const closing = h.proxy.close();
      expect((await h.request('/internal-backstage/ready', { key: null })).status).toBe(503);
      expect((await h.request('/internal-backstage/health', { key: null })).status).toBe(200);
      await closing;
    } finally {
      await h.close();
    }
  });
});
