/**
 * The answer cache never changes what is answered: different contexts never share an answer, a 304
 * is never sent for a body that changed, flag changes show at once, usage is counted on hits, and
 * answers that depend on a random session are never cached.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CLIENT_KEY, eventually, feature, postJson, refetchSameFlags, startHarness, type Harness } from '../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const byRegion = feature('eu', {
  strategies: [{ name: 'default', parameters: {}, constraints: [{ contextName: 'region', operator: 'IN', values: ['eu'], inverted: false }] }] as never,
});
const names = (body: { toggles: Array<{ name: string }> }) => body.toggles.map((t) => t.name);
const cacheCount = async (harness: Harness, result: string) =>
  Number(new RegExp(`^flag_proxy_answer_cache_total\\{result="${result}"\\} (\\d+)`, 'm').exec(await harness.proxy.metrics())?.[1] ?? 0);

describe('answer cache', () => {
  it('serves repeated contexts from the cache and never shares an answer between different contexts', async () => {
    h = await startHarness({ features: [byRegion, feature('all')] });
    // An answer is kept from its context's third request on, and served from the fourth.
    for (let i = 0; i < 4; i += 1) expect(names(await (await h.request('/proxy?region=eu')).json())).toEqual(['eu', 'all']);
    expect(await cacheCount(h, 'hit')).toBe(1);
    expect(names(await (await h.request('/proxy?region=us')).json())).toEqual(['all']);
    expect(names(await (await h.request('/proxy?properties%5Bregion%5D=us')).json())).toEqual(['all']);
    expect(names(await (await h.request('/proxy', postJson({ context: { properties: { region: 'eu' } } }))).json())).toEqual(['eu', 'all']);
  });

  it('keeps its answers when the upstream sends the same flag set again under a new ETag', async () => {
    // The flag server's revision moves with flags this key never sees: the set fetched is the same.
    h = await startHarness({ features: [byRegion, feature('all')] });
    for (let i = 0; i < 4; i += 1) expect(names(await (await h.request('/proxy?region=eu')).json())).toEqual(['eu', 'all']);
    expect(await cacheCount(h, 'hit')).toBe(1);
    await refetchSameFlags(h);
    expect(names(await (await h.request('/proxy?region=eu')).json())).toEqual(['eu', 'all']);
    expect(await cacheCount(h, 'hit')).toBe(2);
    // A real change still shows at once.
    h.upstream.setEnabled('all', false);
    await eventually(async () => expect(names(await (await h!.request('/proxy?region=eu')).json())).toEqual(['eu']));
  });

  it('answers 200 with the new body, never 304, to an old ETag after a flag change, within one refresh interval', async () => {
    h = await startHarness({ features: [byRegion], options: { refreshInterval: 100 } });
    const first = await h.raw('/proxy?region=eu', { headers: { authorization: CLIENT_KEY } });
    const old = String(first.headers.etag);
    expect((await h.raw('/proxy?region=eu', { headers: { authorization: CLIENT_KEY, 'if-none-match': old } })).status).toBe(304);
    h.upstream.upsertFeature(feature('new-one'));
    await eventually(async () => {
      const res = await h!.raw('/proxy?region=eu', { headers: { authorization: CLIENT_KEY, 'if-none-match': old } });
      expect(res.status).toBe(200);
      expect(names(JSON.parse(res.body))).toEqual(['eu', 'new-one']);
      expect(res.headers.etag).not.toBe(old);
    }, 2000);
  });

  it('answers 304 from the ETag alone when the body no longer fits the budget', async () => {
    h = await startHarness({ features: Array.from({ length: 40 }, (_, i) => ({ ...byRegion, name: `flag-${i}` })), options: { answerCacheBytes: 8000 } });
    const tags: string[] = [];
    for (let i = 0; i < 5; i += 1) tags.push(String((await h.raw(`/proxy?region=eu&userId=${i}`, { headers: { authorization: CLIENT_KEY } })).headers.etag));
    const misses = await cacheCount(h, 'miss');
    for (let i = 0; i < 5; i += 1) {
      const res = await h.raw(`/proxy?region=eu&userId=${i}`, { headers: { authorization: CLIENT_KEY, 'if-none-match': tags[i]! } });
      expect(res.status).toBe(304);
      expect(res.headers.etag).toBe(tags[i]);
      expect(res.headers.vary).toBeUndefined();
    }
    expect(await cacheCount(h, 'miss')).toBe(misses);
  });

  it('counts usage upstream for named lookups served from the cache', async () => {
    h = await startHarness({ features: [feature('a')], options: { metricsInterval: 100 } });
    for (let i = 0; i < 4; i += 1) await h.request('/proxy', postJson({ context: { userId: '1' }, toggles: ['a', 'zz'] }));
    expect(await cacheCount(h, 'hit')).toBe(1);
    await eventually(() => {
      expect(h!.upstream.countsFor('a')).toMatchObject({ yes: 4, no: 0 });
      expect(h!.upstream.countsFor('zz')).toMatchObject({ yes: 0, no: 4 });
    });
  });

  it('never caches an answer that depends on the random session of a request without sessionId', async () => {
    const half = feature('half', {
      strategies: [{ name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'sessionId', groupId: 'g' }, constraints: [] }] as never,
    });
    h = await startHarness({ features: [half] });
    const seen = new Set<number>();
    for (let i = 0; i < 30; i += 1) seen.add((await (await h.request('/proxy')).json()).toggles.length);
    expect(seen).toEqual(new Set([0, 1]));
    expect(await cacheCount(h, 'hit')).toBe(0);
    expect(await cacheCount(h, 'uncacheable')).toBe(30);
    // With a sessionId the answer is fixed, so it is cached.
    for (let i = 0; i < 4; i += 1) await h.request('/proxy?sessionId=abc');
    expect(await cacheCount(h, 'hit')).toBe(1);
  });

  it('caches answers over date constraints until the date passes, then evaluates again', async () => {
    const launch = new Date(Date.now() + 1500).toISOString();
    const launched = feature('launched', {
      strategies: [{ name: 'default', parameters: {}, constraints: [{ contextName: 'currentTime', operator: 'DATE_AFTER', value: launch }] }] as never,
    });
    h = await startHarness({ features: [launched, feature('always')] });
    for (let i = 0; i < 4; i += 1) expect(names(await (await h.request('/proxy?userId=1')).json())).toEqual(['always']);
    expect(await cacheCount(h, 'hit')).toBe(1);
    await new Promise((r) => setTimeout(r, Date.parse(launch) - Date.now() + 50));
    expect(names(await (await h.request('/proxy?userId=1')).json())).toEqual(['launched', 'always']);
    expect(await cacheCount(h, 'hit')).toBe(1);
  });

  it('caches nothing when answerCacheBytes is 0', async () => {
    h = await startHarness({ features: [feature('a')], options: { answerCacheBytes: 0 } });
    for (let i = 0; i < 4; i += 1) await h.request('/proxy?userId=1');
    expect(await cacheCount(h, 'hit')).toBe(0);
  });
});
