/**
 * Request tags: a stable GET answer's ETag carries a tag naming the flag set, route, key, caller
 * address and raw query, so the next poll is answered 304 from the request alone — with no answer
 * cache at all. Where a `context` hook or enrichers build the context, the tag names the built
 * context instead, and the poll is answered once it is built, before evaluating. The guards: a
 * changed flag set, another context, another key, a host-derived field, a random session or the
 * clock never get a stale 304 or another context's body.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTestFlagServer } from '../../src/testing/index.js';
import { CLIENT_KEY, evaluationCount, eventually, feature, launchAt, MOUNT, startHarness, type Harness } from '../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await h?.close();
  h = undefined;
});

const TAGGED = /^W\/"[0-9a-f]+-[A-Za-z0-9+/]{27}\.[A-Za-z0-9_-]{22}"$/;
const byUser = feature('for-alice', {
  strategies: [{ name: 'userWithId', parameters: { userIds: 'alice' }, constraints: [] }] as never,
});
const bySession = feature('half-of-sessions', {
  strategies: [{ name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'sessionId', groupId: 'g' }, constraints: [] }] as never,
});
const afterDate = feature('after-2020', {
  strategies: [{ name: 'default', parameters: {}, constraints: [{ contextName: 'currentTime', operator: 'DATE_AFTER', value: '2020-01-01T00:00:00.000Z', inverted: false }] }] as never,
});

const evaluations = (harness: Harness): Promise<number> => evaluationCount(harness.proxy);

const get = (harness: Harness, path: string, headers: Record<string, string> = {}) =>
  harness.raw(path, { headers: { authorization: CLIENT_KEY, ...headers } });
const names = (body: string) => (JSON.parse(body) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name);

/**
 * Runs `test` with a fleet's upstream: `start` starts a proxy on it (the first becomes `h`), and
 * every proxy, then the upstream, is closed afterwards.
 */
async function onOneUpstream(tokens: string[], test: (start: (options?: object) => Promise<Harness>) => Promise<void>): Promise<void> {
  const upstream = await createTestFlagServer({ features: [byUser, feature('all')], clientTokens: tokens });
  const others: Harness[] = [];
  try {
    await test(async (options = {}) => {
      const proxy = await startHarness({ upstream, options });
      if (h === undefined) h = proxy;
      else others.push(proxy);
      return proxy;
    });
  } finally {
    for (const other of others) await other.close();
    await h?.close();
    h = undefined;
    await upstream.close();
  }
}

describe('request tags', () => {
  it('answer a repeated poll 304 from the request alone, with the answer cache off', async () => {
    h = await startHarness({ features: [byUser, feature('all')], options: { answerCacheBytes: 0 } });
    const first = await get(h, '/proxy?userId=alice');
    const etag = String(first.headers.etag);
    expect(etag).toMatch(TAGGED);
    const again = await get(h, '/proxy?userId=alice', { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.headers.etag).toBe(etag);
    // With no-cache the client asks for the body.
    expect((await get(h, '/proxy?userId=alice', { 'if-none-match': etag, 'cache-control': 'no-cache' })).status).toBe(200);
  });

  it("never give another context, another route or another key a 304 for a body that differs", async () => {
    h = await startHarness({ features: [byUser, feature('all')], options: { clientKeys: [CLIENT_KEY, 'second-key'], enableAllEndpoint: true } });
    const alice = String((await get(h, '/proxy?userId=alice')).headers.etag);
    const bob = await get(h, '/proxy?userId=bob', { 'if-none-match': alice });
    expect(bob.status).toBe(200);
    expect(names(bob.body)).toEqual(['all']);
    const all = await get(h, '/proxy/all?userId=bob', { 'if-none-match': String(bob.headers.etag) });
    expect(all.status).toBe(200);
    // Another key's tag differs: the same body, with that key's tag, which its next poll then sends.
    const second = await h.raw('/proxy?userId=alice', { headers: { authorization: 'second-key', 'if-none-match': alice } });
    expect(second.status).toBe(200);
    expect(names(second.body)).toEqual(['for-alice', 'all']);
    expect(second.headers.etag).not.toBe(alice);
    expect(String(second.headers.etag).replace(/\.[^.]+"$/, '"')).toBe(alice.replace(/\.[^.]+"$/, '"'));
    expect((await h.raw('/proxy?userId=alice', { headers: { authorization: 'second-key', 'if-none-match': String(second.headers.etag) } })).status).toBe(304);
    // An ETag without a tag (the predecessor's form) is still compared by body.
    expect((await h.raw('/proxy?userId=alice', { headers: { authorization: 'second-key', 'if-none-match': alice.replace(/\.[^.]+"$/, '"') } })).status).toBe(304);
  });

  it('miss once the flag set changes: 200 with the new body, or the same body with a new tag that the next poll sends', async () => {
    h = await startHarness({ features: [byUser], options: { refreshInterval: 100 } });
    const alice = String((await get(h, '/proxy?userId=alice')).headers.etag);
    const bob = String((await get(h, '/proxy?userId=bob')).headers.etag);
    h.upstream.upsertFeature(feature('new-one'));
    await eventually(async () => {
      const res = await get(h!, '/proxy?userId=alice', { 'if-none-match': alice });
      expect(res.status).toBe(200);
      expect(names(res.body)).toEqual(['for-alice', 'new-one']);
    });
    // Bob's answer changed too (new-one is on for everyone); a flag off for him would not change it.
    h.upstream.upsertFeature(feature('off-for-all', { enabled: false }));
    const now = String((await get(h, '/proxy?userId=bob')).headers.etag);
    expect(now).not.toBe(bob);
    h.upstream.upsertFeature(feature('off-for-all-2', { enabled: false }));
    // Bob's body is as it was, but his tag names the old flag set: a 200, since SDKs keep the ETag
    // of their last 200 and ignore a 304's, so a 304 would leave him evaluated on every poll.
    let renewed = '';
    await eventually(async () => {
      const res = await get(h!, '/proxy?userId=bob', { 'if-none-match': now });
      expect(res.status).toBe(200);
      expect(names(res.body)).toEqual(['new-one']);
      renewed = String(res.headers.etag);
    });
    expect(renewed).not.toBe(now);
    expect(renewed.replace(/\.[^.]+"$/, '"')).toBe(now.replace(/\.[^.]+"$/, '"'));
    const before = await evaluations(h);
    const again = await get(h, '/proxy?userId=bob', { 'if-none-match': renewed });
    expect(again.status).toBe(304);
    expect(await evaluations(h)).toBe(before);
  });

  it('are the same in every proxy of a fleet with one upstream and token, and differ under another token', () =>
    onOneUpstream(['token-one', 'token-two'], async (start) => {
      const first = await start();
      const twin = await start();
      const otherToken = await start({ flagApiToken: 'token-two' });
      const etag = String((await get(first, '/proxy?userId=alice')).headers.etag);
      expect(etag).toMatch(TAGGED);
      // A poll that a load balancer sends to another proxy of the fleet: the same tag, 304.
      const atTwin = await get(twin, '/proxy?userId=alice', { 'if-none-match': etag });
      expect(atTwin.status).toBe(304);
      expect(atTwin.headers.etag).toBe(etag);
      // Under another token the tag differs: the same body, with that proxy's tag.
      const atOther = await get(otherToken, '/proxy?userId=alice', { 'if-none-match': etag });
      expect(atOther.status).toBe(200);
      expect(atOther.headers.etag).not.toBe(etag);
      expect(String(atOther.headers.etag).replace(/\.[^.]+"$/, '"')).toBe(etag.replace(/\.[^.]+"$/, '"'));
      // Another query is another tag in every proxy.
      expect((await get(twin, '/proxy?userId=bob', { 'if-none-match': etag })).status).toBe(200);
    }));

  it('answer 304 only to a key the proxy takes: a removed key, another key or a guessed tag gets its 401', () =>
    onOneUpstream(['token-one'], async (start) => {
      const first = await start({ clientKeys: [CLIENT_KEY, 'second-key'], enableAllEndpoint: true });
      const given = String((await first.raw('/proxy?userId=alice', { headers: { authorization: 'second-key' } })).headers.etag);
      expect(given).toMatch(TAGGED);
      expect((await first.raw('/proxy?userId=alice', { headers: { authorization: 'second-key', 'if-none-match': given } })).status).toBe(304);
      // The same fleet once 'second-key' is revoked: its tag is not a pass for it.
      const revoked = await start({ clientKeys: [CLIENT_KEY], enableAllEndpoint: true });
      const atRevoked = await revoked.raw('/proxy?userId=alice', { headers: { authorization: 'second-key', 'if-none-match': given } });
      expect(atRevoked.status).toBe(401);
      // A key the proxy never took, with a tag given to a key it does, or with any tag of the right shape.
      for (const sent of [given, given.replace(/\.[^.]+"$/, `.${'A'.repeat(22)}"`), `${given}, ${given.replace(/\.[^.]+"$/, `.${'B'.repeat(22)}"`)}`]) {
        const guessed = await first.raw('/proxy?userId=alice', { headers: { authorization: 'not-a-key', 'if-none-match': sent } });
        expect(guessed.status).toBe(401);
      }
      // A proxy of the fleet whose all endpoint is off answers its 501 to the tag of one whose is on.
      const all = String((await get(first, '/proxy/all?userId=alice')).headers.etag);
      expect((await get(first, '/proxy/all?userId=alice', { 'if-none-match': all })).status).toBe(304);
      const allOff = await start({ clientKeys: [CLIENT_KEY, 'second-key'] });
      expect((await get(allOff, '/proxy/all?userId=alice', { 'if-none-match': all })).status).toBe(501);
    }));

  it('are not given to answers that depend on a random session, even those that hold until a date', async () => {
    h = await startHarness({ features: [bySession, afterDate, launchAt(Date.now() + 3_600_000)] });
    expect(String((await get(h, '/proxy?userId=x')).headers.etag)).not.toMatch(TAGGED);
    expect(String((await get(h, '/proxy?userId=x&sessionId=s1&currentTime=2030-01-01T00:00:00.000Z')).headers.etag)).toMatch(TAGGED);
  });

  it('tag an answer that holds until a date by that instant: 304 from the request alone before it, the new answer from it on', async () => {
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    const at = Date.now() + 60_000;
    h = await startHarness({ features: [byUser, launchAt(at), feature('all')], options: { answerCacheBytes: 0 } });
    const first = await get(h, '/proxy?userId=alice');
    expect(names(first.body)).toEqual(['for-alice', 'all']);
    const etag = String(first.headers.etag);
    expect(etag).toMatch(TAGGED);
    const before = await evaluations(h);
    for (let i = 0; i < 3; i += 1) {
      const again = await get(h, '/proxy?userId=alice', { 'if-none-match': etag });
      expect(again.status).toBe(304);
      expect(again.headers.etag).toBe(etag);
    }
    expect(await evaluations(h)).toBe(before);
    // Another query is another tag; a context with its own clock holds for good (the plain tag).
    expect((await get(h, '/proxy?userId=bob', { 'if-none-match': etag })).status).toBe(200);
    const fixedClock = String((await get(h, `/proxy?userId=alice&currentTime=${new Date(at - 1).toISOString()}`)).headers.etag);
    expect(fixedClock).toMatch(TAGGED);
    expect(fixedClock).not.toBe(etag);
    // Shortly before the instant the tag still holds.
    const beforeInstant = await evaluations(h);
    vi.setSystemTime(at - 1000);
    expect((await get(h, '/proxy?userId=alice', { 'if-none-match': etag })).status).toBe(304);
    expect(await evaluations(h)).toBe(beforeInstant);
    vi.setSystemTime(at + 1);
    const after = await get(h, '/proxy?userId=alice', { 'if-none-match': etag });
    expect(after.status).toBe(200);
    expect(names(after.body)).toEqual(['for-alice', 'launch', 'all']);
    // No instant ahead any more: the answer now holds as long as the flag set, and its poll is a 304.
    const now = String(after.headers.etag);
    expect(now).toMatch(TAGGED);
    const counted = await evaluations(h);
    expect((await get(h, '/proxy?userId=alice', { 'if-none-match': now })).status).toBe(304);
    expect(await evaluations(h)).toBe(counted);
  });

  it('never answer from a tag that names another instant of the flag set', async () => {
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    const start = Date.now();
    const early = launchAt(start + 60_000);
    const late = launchAt(start + 120_000, 'late');
    h = await startHarness({ features: [early, late, feature('all')], options: { answerCacheBytes: 0 } });
    const beforeBoth = String((await get(h, '/proxy?userId=alice')).headers.etag);
    vi.setSystemTime(start + 90_000);
    const between = await get(h, '/proxy?userId=alice', { 'if-none-match': beforeBoth });
    expect(between.status).toBe(200);
    expect(names(between.body)).toEqual(['launch', 'all']);
    const tagged = String(between.headers.etag);
    expect(tagged).toMatch(TAGGED);
    expect((await get(h, '/proxy?userId=alice', { 'if-none-match': tagged })).status).toBe(304);
    vi.setSystemTime(start + 120_001);
    const after = await get(h, '/proxy?userId=alice', { 'if-none-match': tagged });
    expect(after.status).toBe(200);
    expect(names(after.body)).toEqual(['launch', 'late', 'all']);
  });

});

describe('request tags and host-derived context', () => {

  it('tag the answer of a context a hook builds by that context: 304 without evaluating, with the answer cache off', async () => {
    // A session-style hook: who the caller is comes from a header the query does not show.
    h = await startHarness({
      features: [byUser, feature('all')],
      options: { answerCacheBytes: 0, context: (req) => ({ userId: String(req.headers['x-session-user'] ?? 'anonymous') }) },
    });
    const first = await get(h, '/proxy', { 'x-session-user': 'alice' });
    const etag = String(first.headers.etag);
    expect(etag).toMatch(TAGGED);
    expect(names(first.body)).toEqual(['for-alice', 'all']);
    const before = await evaluations(h);
    for (let i = 0; i < 3; i += 1) {
      const again = await get(h, '/proxy', { 'x-session-user': 'alice', 'if-none-match': etag });
      expect(again.status).toBe(304);
      expect(again.headers.etag).toBe(etag);
    }
    expect(await evaluations(h)).toBe(before);
    // Another caller sending alice's ETag: another built context, so another tag, and its own body.
    const bob = await get(h, '/proxy', { 'x-session-user': 'bob', 'if-none-match': etag });
    expect(bob.status).toBe(200);
    expect(names(bob.body)).toEqual(['all']);
    expect(String(bob.headers.etag)).toMatch(TAGGED);
    expect(bob.headers.etag).not.toBe(etag);
    // With no-cache the client asks for the body.
    expect((await get(h, '/proxy', { 'x-session-user': 'alice', 'if-none-match': etag, 'cache-control': 'no-cache' })).status).toBe(200);
  });

  it('never answer a derived field that changed from the tag: 200 with the new body', async () => {
    let user = 'alice';
    h = await startHarness({ features: [byUser, feature('all')], options: { context: () => ({ userId: user }) } });
    const first = await get(h, '/proxy');
    expect(String(first.headers.etag)).toMatch(TAGGED);
    user = 'bob';
    const res = await get(h, '/proxy', { 'if-none-match': String(first.headers.etag) });
    expect(res.status).toBe(200);
    expect(names(res.body)).toEqual(['all']);
  });

  it('tag what enrichers build the same way, and miss once the flag set changes', async () => {
    h = await startHarness({
      features: [byUser],
      options: { answerCacheBytes: 0, refreshInterval: 100, expCustomEnrichers: [(context) => ({ ...context, userId: 'alice' })] },
    });
    const etag = String((await get(h, '/proxy?userId=zed')).headers.etag);
    expect(etag).toMatch(TAGGED);
    expect((await get(h, '/proxy?userId=zed', { 'if-none-match': etag })).status).toBe(304);
    h.upstream.upsertFeature(feature('new-one'));
    await eventually(async () => {
      const res = await get(h!, '/proxy?userId=zed', { 'if-none-match': etag });
      expect(res.status).toBe(200);
      expect(names(res.body)).toEqual(['for-alice', 'new-one']);
    });
  });

  it('tag a built context whose answer holds until a date by that instant too', async () => {
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    const at = Date.now() + 60_000;
    h = await startHarness({ features: [launchAt(at), feature('all')], options: { answerCacheBytes: 0, context: () => ({ userId: 'alice' }) } });
    const etag = String((await get(h, '/proxy')).headers.etag);
    expect(etag).toMatch(TAGGED);
    const before = await evaluations(h);
    const again = await get(h, '/proxy', { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.headers.etag).toBe(etag);
    expect(await evaluations(h)).toBe(before);
    vi.setSystemTime(at + 1);
    const after = await get(h, '/proxy', { 'if-none-match': etag });
    expect(after.status).toBe(200);
    expect(names(after.body)).toEqual(['launch', 'all']);
  });

  it('are not given to a derived answer that depends on a random session', async () => {
    h = await startHarness({ features: [bySession], options: { context: () => ({ userId: 'x' }) } });
    expect(String((await get(h, '/proxy')).headers.etag)).not.toMatch(TAGGED);
    expect(String((await get(h, '/proxy?sessionId=s1')).headers.etag)).toMatch(TAGGED);
  });
});
