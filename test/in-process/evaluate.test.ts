/**
 * In-process evaluation (`proxy.evaluate`, `isEnabled`, `getVariant`, `contextFromRequest`): the
 * same answers as the HTTP routes for the same context, the client specification's expectations
 * and `unleash-client`'s own answers, usage reported upstream, and a clear error before ready.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFlagProxy, isFlagProxyError, Strategy } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { contextFor, generateFlags, namedToggles, queryFor } from '../../bench/flags.js';
import { loadClientSpecs, serverSdk, synchronized } from '../support/client-spec.js';
import { serveProxy, type ServedProxy } from '../support/served-proxy.js';
import { CLIENT_KEY, eventually, feature, launchAt, postJson, refetchSameFlags, startHarness } from '../support/harness.js';

/** A response's JSON body, untyped as the wire is. */
const jsonOf = (res: Response): Promise<any> => res.json();

const silent = { debug() {}, info() {}, warn() {}, error() {}, fatal() {} };

describe('proxy.evaluate', () => {
  let served: ServedProxy;
  const { features, segments } = generateFlags(200);
  beforeAll(async () => {
    served = await serveProxy(await createTestFlagServer({ features, segments }), { enableAllEndpoint: true });
  });
  afterAll(async () => {
    await served.close();
    await served.upstream.close();
  });

  // Every generated context carries a sessionId and an address, so nothing in the answer is random
  // and the caller's own address does not enter the HTTP side.
  const contexts = Array.from({ length: 150 }, (_, n) => ({ ...contextFor(n * 7919), remoteAddress: `10.0.${n % 256}.${(n * 13) % 256}` }));

  it('equals the parsed body of GET /proxy for the same context, over many contexts', async () => {
    for (const context of contexts) {
      const res = await fetch(`${served.base}/proxy?${queryFor(context)}&remoteAddress=${context.remoteAddress}`, {
        headers: { authorization: CLIENT_KEY },
      });
      expect(res.status).toBe(200);
      expect(served.proxy.evaluate(context)).toEqual((await jsonOf(res)).toggles);
    }
  });

  it('equals the parsed body of GET /proxy/all with { all: true }', async () => {
    for (const context of contexts.slice(0, 50)) {
      const res = await fetch(`${served.base}/proxy/all?${queryFor(context)}&remoteAddress=${context.remoteAddress}`, {
        headers: { authorization: CLIENT_KEY },
      });
      const body = await jsonOf(res);
      expect(body.toggles.length).toBeGreaterThan(served.proxy.evaluate(context).length);
      expect(served.proxy.evaluate(context, { all: true })).toEqual(body.toggles);
    }
  });

  it('equals the parsed body of a POST with a toggles list, unknown names included', async () => {
    const toggles = [...namedToggles(features), 'no-such-toggle'];
    for (const context of contexts.slice(0, 50)) {
      const res = await fetch(`${served.base}/proxy`, postJson({ context, toggles }, { authorization: CLIENT_KEY }));
      expect(served.proxy.evaluate(context, { toggles })).toEqual((await jsonOf(res)).toggles);
    }
  });

  it('answers the same through withContext, the context prepared once', () => {
    for (const context of contexts.slice(0, 50)) {
      const flags = served.proxy.withContext(context);
      expect(flags.evaluate()).toEqual(served.proxy.evaluate(context));
      for (const { name } of features.slice(0, 40)) {
        expect(flags.isEnabled(name), name).toBe(served.proxy.isEnabled(name, context));
        expect(flags.getVariant(name), name).toEqual(served.proxy.getVariant(name, context));
      }
    }
  });

  it('takes numbers and Dates as the wire would give them', () => {
    const asWire = served.proxy.evaluate({ ...contexts[0], userId: '42', currentTime: '2030-01-01T00:00:00.000Z' });
    expect(served.proxy.evaluate({ ...contexts[0], userId: 42, currentTime: new Date('2030-01-01T00:00:00.000Z') })).toEqual(asWire);
  });
});

describe('proxy.isEnabled and proxy.getVariant against the client specification and unleash-client', () => {
  for (const spec of loadClientSpecs()) {
    if (spec.tests.length === 0 && spec.variantTests.length === 0) continue;
    it(spec.name, async () => {
      const upstream = await createTestFlagServer({ features: spec.features, segments: spec.segments });
      const served = await serveProxy(upstream);
      const sdk = serverSdk(upstream.url, upstream.token, 'in-process-spec');
      try {
        await synchronized(sdk);
        for (const test of spec.tests) {
          const ours = served.proxy.isEnabled(test.toggleName, test.context);
          expect(ours, test.description).toBe(test.expectedResult);
          expect(ours, test.description).toBe(sdk.isEnabled(test.toggleName, test.context));
          expect(served.proxy.withContext(test.context).isEnabled(test.toggleName), test.description).toBe(ours);
        }
        for (const test of spec.variantTests) {
          const ours = served.proxy.getVariant(test.toggleName, test.context);
          const expected = test.expectedResult as Record<string, unknown>;
          const picked: Record<string, unknown> = { name: ours.name, enabled: ours.enabled };
          if ('payload' in expected) picked.payload = ours.payload;
          if ('feature_enabled' in expected) picked.feature_enabled = ours.feature_enabled;
          if ('featureEnabled' in expected) picked.featureEnabled = ours.featureEnabled;
          expect(picked, test.description).toEqual(expected);
          expect(ours, test.description).toEqual(sdk.getVariant(test.toggleName, test.context));
          expect(served.proxy.withContext(test.context).getVariant(test.toggleName), test.description).toEqual(ours);
        }
      } finally {
        sdk.destroy();
        await served.close();
        await upstream.close();
      }
    });
  }
});

describe('proxy.isEnabled', () => {
  it('answers as unleash-client\'s isEnabled, which never picks the toggle\'s variant, even where picking one would throw', async () => {
    // A variant sticky on `properties`: picking it reads the proxy's prototype-less properties
    // object as a string, which throws (getVariant answers off); isEnabled never picks it.
    const features = [
      {
        name: 'sticky-on-properties',
        enabled: true,
        strategies: [{ name: 'default', parameters: {}, constraints: [] }],
        variants: [{ name: 'v', weight: 1000, weightType: 'variable', stickiness: 'properties' }],
      },
    ] as never;
    const upstream = await createTestFlagServer({ features });
    const served = await serveProxy(upstream);
    const sdk = serverSdk(upstream.url, upstream.token, 'in-process-is-enabled');
    try {
      await synchronized(sdk);
      const context = { userId: 'alice', properties: { plan: 'pro' } };
      expect(sdk.isEnabled('sticky-on-properties', context)).toBe(true);
      expect(served.proxy.isEnabled('sticky-on-properties', context)).toBe(true);
      expect(served.proxy.withContext(context).isEnabled('sticky-on-properties')).toBe(true);
      const req = { headers: {}, socket: { remoteAddress: '127.0.0.1' } } as unknown as http.IncomingMessage;
      expect(served.proxy.isEnabled('sticky-on-properties', await served.proxy.contextFromRequest(req, context))).toBe(true);
      expect(served.proxy.getVariant('sticky-on-properties', context).feature_enabled).toBe(false);
    } finally {
      sdk.destroy();
      await served.close();
      await upstream.close();
    }
  });
});

describe('usage of in-process calls', () => {
  it('is counted and reported to the upstream metrics endpoint', async () => {
    const upstream = await createTestFlagServer({
      features: [
        { name: 'on', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [] }], variants: [] },
        { name: 'off', enabled: false, strategies: [{ name: 'default', parameters: {}, constraints: [] }], variants: [] },
      ] as never,
    });
    const served = await serveProxy(upstream);
    for (let i = 0; i < 3; i += 1) expect(served.proxy.isEnabled('on', { userId: String(i) })).toBe(true);
    expect(served.proxy.isEnabled('off')).toBe(false);
    expect(served.proxy.getVariant('off').feature_enabled).toBe(false);
    const bound = served.proxy.withContext({ userId: 'bound' });
    expect(bound.isEnabled('on')).toBe(true);
    expect(bound.isEnabled('off')).toBe(false);
    // close() flushes the last report.
    await served.close();
    expect(upstream.countsFor('on')).toMatchObject({ yes: 4, no: 0 });
    expect(upstream.countsFor('off')).toMatchObject({ yes: 0, no: 3 });
    await upstream.close();
  });
});

describe('one context object asked many times', () => {
  const rule = (name: string, constraints: unknown[]) => ({
    name,
    enabled: true,
    strategies: [{ name: 'default', parameters: {}, constraints }],
    variants: [],
  });
  const features = [
    rule('for-alice', [{ contextName: 'userId', operator: 'IN', values: ['alice'], inverted: false, caseInsensitive: false }]),
    rule('in-eu', [{ contextName: 'region', operator: 'IN', values: ['eu'], inverted: false, caseInsensitive: false }]),
    rule('after-2030', [{ contextName: 'currentTime', operator: 'DATE_AFTER', value: '2030-01-01T00:00:00.000Z', inverted: false, caseInsensitive: false }]),
  ] as never;

  it('answers for what the object holds at each call, however it was changed in between', async () => {
    const upstream = await createTestFlagServer({ features });
    const served = await serveProxy(upstream);
    try {
      const context: Record<string, any> = { userId: 'alice', properties: { region: 'eu' }, currentTime: new Date('2031-01-01T00:00:00Z') };
      const ask = () => ['for-alice', 'in-eu', 'after-2030'].map((name) => served.proxy.isEnabled(name, context));
      expect(ask()).toEqual([true, true, true]);
      expect(ask()).toEqual([true, true, true]);
      context.userId = 'bob';
      expect(ask()).toEqual([false, true, true]);
      context.properties.region = 'us';
      expect(ask()).toEqual([false, false, true]);
      (context.currentTime as Date).setTime(Date.parse('2029-01-01T00:00:00Z'));
      expect(ask()).toEqual([false, false, false]);
      context.region = 'eu';
      delete context.properties.region;
      expect(ask()).toEqual([false, true, false]);
      // A new properties object: its region wins over the top-level one.
      context.properties = { region: 'us' };
      expect(served.proxy.isEnabled('in-eu', context)).toBe(false);
      context.properties = {};
      expect(served.proxy.isEnabled('in-eu', context)).toBe(true);
      delete context.region;
      expect(served.proxy.isEnabled('in-eu', context)).toBe(false);
      expect(served.proxy.getVariant('for-alice', { ...context, userId: 'alice' }).feature_enabled).toBe(true);
    } finally {
      await served.close();
      await upstream.close();
    }
  });

  it('answers for each object, new or asked again, after a long run of objects asked once', async () => {
    // A host that makes a new object per call makes the proxy remember few of them: answers must not change.
    const upstream = await createTestFlagServer({ features });
    const served = await serveProxy(upstream);
    try {
      for (let i = 0; i < 5000; i += 1) {
        const alice = i % 3 === 0;
        expect(served.proxy.isEnabled('for-alice', { userId: alice ? 'alice' : `user-${i}`, properties: { region: 'eu' } })).toBe(alice);
      }
      const context: Record<string, any> = { userId: 'alice', properties: { region: 'eu' } };
      for (let i = 0; i < 50; i += 1) {
        context.userId = i % 2 === 0 ? 'alice' : 'bob';
        context.properties.region = i % 3 === 0 ? 'eu' : 'us';
        expect([served.proxy.isEnabled('for-alice', context), served.proxy.isEnabled('in-eu', context)]).toEqual([i % 2 === 0, i % 3 === 0]);
        expect([served.proxy.isEnabled('for-alice', context), served.proxy.isEnabled('in-eu', context)]).toEqual([i % 2 === 0, i % 3 === 0]);
      }
    } finally {
      await served.close();
      await upstream.close();
    }
  });

  it('counts every call in the usage report, the repeated ones too', async () => {
    const upstream = await createTestFlagServer({ features });
    const served = await serveProxy(upstream);
    const context = { userId: 'alice' };
    for (let i = 0; i < 5; i += 1) served.proxy.isEnabled('for-alice', context);
    await served.close();
    expect(upstream.countsFor('for-alice')).toMatchObject({ yes: 5, no: 0 });
    await upstream.close();
  });

  it('hands a custom strategy a fresh context on every call', async () => {
    // A strategy that marks the context it is given: the mark never reaches a later call.
    class Marking extends Strategy {
      constructor() {
        super('marking');
      }
      override isEnabled(_parameters: unknown, context: { properties?: Record<string, unknown> }): boolean {
        const marked = context.properties?.marked === 'yes';
        if (context.properties) context.properties.marked = 'yes';
        return !marked;
      }
    }
    const upstream = await createTestFlagServer({
      features: [{ name: 'marked', enabled: true, strategies: [{ name: 'marking', parameters: {}, constraints: [] }], variants: [] }] as never,
    });
    const served = await serveProxy(upstream, { customStrategies: [new Marking()] });
    try {
      const context = { userId: 'alice', properties: { plan: 'pro' } };
      expect([1, 2, 3].map(() => served.proxy.isEnabled('marked', context))).toEqual([true, true, true]);
      expect(context.properties).toEqual({ plan: 'pro' });
    } finally {
      await served.close();
      await upstream.close();
    }
  });
});

describe('before the proxy is ready', () => {
  it('throws NOT_READY instead of answering', async () => {
    const proxy = createFlagProxy({
      flagUrl: 'http://127.0.0.1:9/api/',
      flagApiToken: 't',
      clientKeys: [CLIENT_KEY],
      storageProvider: createMemoryStorageProvider(),
      logger: silent,
    });
    try {
      let thrown: unknown;
      try {
        proxy.isEnabled('anything');
      } catch (error) {
        thrown = error;
      }
      expect(isFlagProxyError(thrown) && thrown.code).toBe('NOT_READY');
      expect(() => proxy.evaluate({})).toThrow(/not ready|Await `proxy.ready`/i);
    } finally {
      await proxy.close();
    }
  });
});

describe('proxy.contextFromRequest', () => {
  it('builds the context the HTTP routes would: address under trustProxy, the host hook, the environment', async () => {
    const upstream = await createTestFlagServer({
      features: [
        {
          name: 'for-alice',
          enabled: true,
          strategies: [{ name: 'userWithId', parameters: { userIds: 'alice' }, constraints: [] }],
          variants: [],
        },
      ] as never,
    });
    const served = await serveProxy(upstream, {
      trustProxy: true,
      environment: 'production',
      context: (req: http.IncomingMessage) => ({ userId: req.headers['x-user'] as string | undefined }),
    });
    try {
      const req = { headers: { 'x-forwarded-for': '203.0.113.7', 'x-user': 'alice' }, socket: { remoteAddress: '127.0.0.1' } } as unknown as http.IncomingMessage;
      const context = await served.proxy.contextFromRequest(req);
      expect(context).toMatchObject({ userId: 'alice', remoteAddress: '203.0.113.7', environment: 'production' });
      expect(served.proxy.isEnabled('for-alice', context)).toBe(true);
      // The same request over HTTP agrees.
      const res = await fetch(`${served.base}/proxy`, { headers: { authorization: CLIENT_KEY, 'x-user': 'alice' } });
      expect((await jsonOf(res)).toggles.map((t: { name: string }) => t.name)).toEqual(['for-alice']);
    } finally {
      await served.close();
      await upstream.close();
    }
  });
});

describe('proxy.definition and proxy.onChange', () => {
  it('give a toggle’s rules, and call the listener on every flag-set change until unsubscribed', async () => {
    const h = await startHarness({ features: [feature('a'), feature('b', { enabled: false })] });
    try {
      expect(h.proxy.definition('a')).toMatchObject({ name: 'a', enabled: true, strategies: [{ name: 'default' }] });
      expect(h.proxy.definition('missing')).toBeUndefined();
      let calls = 0;
      const off = h.proxy.onChange(() => (calls += 1));
      h.upstream.setEnabled('b', true);
      await eventually(() => expect(calls).toBe(1));
      expect(h.proxy.definition('b')?.enabled).toBe(true);
      off();
      h.upstream.setEnabled('b', false);
      await eventually(() => expect(h.proxy.definition('b')?.enabled).toBe(false));
      expect(calls).toBe(1);
    } finally {
      await h.close();
    }
  });

  it('does not call the listener when the upstream sends the same flag set again under a new ETag', async () => {
    // The flag server's ETag follows its revision, which changes with flags this token never sees
    // (another project, another environment): the proxy then fetches the very same set again.
    const h = await startHarness({ features: [feature('a'), feature('b', { enabled: false })] });
    try {
      let calls = 0;
      h.proxy.onChange(() => (calls += 1));
      await refetchSameFlags(h);
      expect(calls).toBe(0);
      h.upstream.setEnabled('b', true);
      await eventually(() => expect(calls).toBe(1));
      expect(h.proxy.isEnabled('b')).toBe(true);
    } finally {
      await h.close();
    }
  });

  it('calls the listener just after a date constraint’s instant too, the flag set unchanged, so a cache cleared by it is never stale', async () => {
    // Leads long enough for a busy machine to start the proxy before the first instant.
    const first = Date.now() + 3000;
    const second = first + 1500;
    const h = await startHarness({ features: [launchAt(first), launchAt(second, 'later')] });
    try {
      const cache = new Map<string, boolean>();
      const cached = (name: string): boolean => {
        if (!cache.has(name)) cache.set(name, h.proxy.isEnabled(name, { userId: 'ivy' }));
        return cache.get(name) as boolean;
      };
      let calls = 0;
      const off = h.proxy.onChange(() => {
        calls += 1;
        cache.clear();
      });
      expect(Date.now()).toBeLessThan(first);
      expect(cached('launch')).toBe(false);
      const definition = h.proxy.definition('launch');
      await eventually(() => expect(calls).toBe(1), first - Date.now() + 3000);
      expect(Date.now()).toBeGreaterThanOrEqual(first);
      expect(cached('launch')).toBe(true);
      expect(h.proxy.definition('launch')).toBe(definition);
      // Unsubscribed, the listener is not called at the next instant.
      off();
      await new Promise((r) => setTimeout(r, Math.max(0, second - Date.now()) + 500));
      expect(h.proxy.isEnabled('later', { userId: 'ivy' })).toBe(true);
      expect(calls).toBe(1);
    } finally {
      await h.close();
    }
  });
});
