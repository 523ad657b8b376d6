/**
 * OFREP pushes across a fleet: proxies behind one load balancer, on one upstream. A proxy learns
 * of a change from its own poll of the upstream (a shared Redis snapshot is read only at start, so
 * it carries no change between running proxies); every proxy's streams are told when it does. A
 * browser told by a proxy that saw the change first may refetch from one that has not: that proxy
 * waits (up to two seconds) for the flag set named by `flagConfigLastModified` instead of
 * answering the old one. A stream URL from one proxy is accepted by the others.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { CLIENT_KEY, postJson, startHarness, type Harness } from '../support/harness.js';
import { OFREP_FEATURES, readStream } from '../support/ofrep.js';

const BULK = '/ofrep/v1/evaluate/flags';

describe('OFREP across proxies on one upstream', () => {
  let upstream: TestFlagServer;
  let fast: Harness;
  let slow: Harness;
  beforeAll(async () => {
    upstream = await createTestFlagServer({ features: OFREP_FEATURES });
    fast = await startHarness({ upstream, options: { refreshInterval: 50 } });
    slow = await startHarness({ upstream, options: { refreshInterval: 1800 } });
  });
  afterAll(async () => {
    await fast?.close();
    await slow?.close();
    await upstream?.close();
  });

  const bulk = (h: Harness, query = '') => h.request(`${BULK}${query}`, { ...postJson({ context: { targetingKey: 'u' } }, { 'x-api-key': CLIENT_KEY }), key: null });
  const boolOn = async (res: Response): Promise<unknown> =>
    ((await res.json()) as { flags: Array<{ key: string; value?: unknown }> }).flags.find((f) => f.key === 'bool-on')?.value;

  it('accepts a stream URL another proxy with the same configuration handed out', async () => {
    const url = ((await (await bulk(fast)).json()) as { eventStreams: Array<{ url: string }> }).eventStreams[0]!.url;
    const onSlow = url.replace(fast.base, slow.base);
    expect(onSlow).not.toBe(url);
    const { status } = await readStream(onSlow, {}, () => true, 1000);
    expect(status).toBe(200);
  });

  it('waits for the flag set a refetch names when another proxy saw it first', async () => {
    // Both proxies have served the current flag set for over a second (lastModified is in seconds).
    await new Promise((r) => setTimeout(r, 1100));
    const url = ((await (await bulk(fast)).json()) as { eventStreams: Array<{ url: string }> }).eventStreams[0]!.url;
    const told = readStream(url, {}, (text) => text.includes('refetchEvaluation'), 3000);
    await new Promise((r) => setTimeout(r, 100));
    upstream.setEnabled('bool-on', false);
    const { text } = await told;
    const event = JSON.parse(/data: (.*)/.exec(text)![1]!) as { etag: string; lastModified: number };
    const started = Date.now();
    const refetched = await bulk(slow, `?flagConfigEtag=${event.etag}&flagConfigLastModified=${event.lastModified}`);
    expect(await boolOn(refetched)).toBe(false);
    expect(Date.now() - started).toBeLessThan(2100);
  });
});
