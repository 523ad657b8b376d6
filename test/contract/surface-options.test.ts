/**
 * Each API surface can be turned off (`proxyApi`, `frontendApi`, `clientApi`, `backstageProbes`,
 * `ofrepApi`):
 * its paths are then not the proxy's (404 standalone, the host's own answer when mounted), and the
 * other surfaces answer as before.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CLIENT_KEY, SERVER_TOKEN, feature, startHarness, type Harness } from '../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const start = (options: Record<string, unknown>) =>
  startHarness({ features: [feature('a')], options: { expServerSideSdkConfig: { tokens: [SERVER_TOKEN] }, ...options } });

describe('API surface options', () => {
  it('serves every surface by default', async () => {
    h = await start({});
    expect((await h.request('/proxy')).status).toBe(200);
    expect((await h.request('/api/frontend')).status).toBe(200);
    expect((await h.request('/api/proxy')).status).toBe(200);
    expect((await h.request('/api/client/features', { key: SERVER_TOKEN })).status).toBe(200);
    expect((await h.request('/internal-backstage/ready', { key: null })).status).toBe(200);
    expect((await h.request('/ofrep/v1/evaluate/flags', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_KEY}` }, body: '{"context":{}}', key: null })).status).toBe(200);
  });

  it('frontendApi: false drops /api/frontend and /api/proxy only', async () => {
    h = await start({ frontendApi: false });
    expect((await h.request('/api/frontend')).status).toBe(404);
    expect((await h.request('/api/proxy/features/a')).status).toBe(404);
    expect((await h.request('/proxy')).status).toBe(200);
    expect((await h.request('/api/client/features', { key: SERVER_TOKEN })).status).toBe(200);
  });

  it('clientApi: false drops /api/client, even with server-side tokens', async () => {
    h = await start({ clientApi: false });
    expect((await h.request('/api/client/features', { key: SERVER_TOKEN })).status).toBe(404);
    expect((await h.request('/api/frontend')).status).toBe(200);
    expect((await h.request('/proxy/client/features', { key: SERVER_TOKEN })).status).toBe(200);
  });

  it('backstageProbes: false drops /internal-backstage', async () => {
    h = await start({ backstageProbes: false });
    expect((await h.request('/internal-backstage/health', { key: null })).status).toBe(404);
    expect((await h.request('/proxy/health', { key: null })).status).toBe(200);
  });

  it('ofrepApi: false drops everything below /ofrep, and the other surfaces still answer', async () => {
    h = await start({ ofrepApi: false });
    const bulk = { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer k' }, body: '{"context":{}}', key: null };
    expect((await h.request('/ofrep/v1/evaluate/flags', bulk)).status).toBe(404);
    expect((await h.request('/ofrep/v1/evaluate/flags/a', bulk)).status).toBe(404);
    expect((await h.request('/ofrep/v1/sse?t=x', { key: null })).status).toBe(404);
    expect((await h.request('/proxy')).status).toBe(200);
    expect((await h.request('/api/frontend')).status).toBe(200);
  });

  it('proxyApi: false drops everything below /proxy, and the frontend API still answers', async () => {
    h = await start({ proxyApi: false });
    expect((await h.request('/proxy')).status).toBe(404);
    expect((await h.request('/proxy/health', { key: null })).status).toBe(404);
    expect((await h.request('/api/frontend')).status).toBe(200);
  });
});
