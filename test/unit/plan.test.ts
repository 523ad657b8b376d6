/**
 * The evaluation fast paths checked against unleash-client's own getVariant, over every state and
 * context of the client specification: constant toggles are really constant, the on/off-only path
 * agrees with the full evaluation, and a context judged cacheable really answers the same whatever
 * random session it is given.
 */
import { describe, expect, it } from 'vitest';
import type { Engine } from '../../src/evaluation/engine.js';
import { engineFor as startEngine } from '../support/engine.js';
import { cacheableUntil, instantsPassed, isCacheable, nextInstant, planSnapshot } from '../../src/evaluation/plan.js';
import { buildContext } from '../../src/core/context.js';
import { loadClientSpecs, specContexts } from '../support/client-spec.js';


const engineFor = (features: unknown[], segments: unknown[]): Promise<Engine> => startEngine(features, segments, 'plan-test');

const specs = loadClientSpecs().filter((spec) => !spec.delta);

describe('snapshot plan', () => {
  it.each(specs.map((s) => [s.name, s] as const))('agrees with getVariant over %s', async (_name, spec) => {
    const engine = await engineFor(spec.features, spec.segments);
    try {
      const { plan } = engine.snapshot();
      const contexts = specContexts(spec).map((c) => buildContext(c));
      contexts.push(buildContext({}));
      for (const context of contexts) {
        const base = engine.withStaticContext({ sessionId: 'fixed-session', ...context } as never);
        for (const toggle of plan.toggles) {
          const full = engine.evaluate(toggle.name, base);
          if (toggle.kind === 'on') {
            expect(full, toggle.name).toEqual({ name: 'disabled', enabled: false, feature_enabled: true, featureEnabled: true });
          } else if (toggle.kind === 'off') {
            expect(full.feature_enabled, toggle.name).toBe(false);
          } else if (!toggle.variants) {
            expect(engine.isOn(toggle.feature, base), toggle.name).toBe(full.feature_enabled === true);
            if (full.feature_enabled) {
              expect(full).toMatchObject({ name: 'disabled', enabled: false });
              expect(full.payload).toBeUndefined();
            }
          }
        }
        if (isCacheable(plan.sensitivity, context)) {
          // Cacheable: the answer must not change with the random session the proxy would add.
          const answer = (session: string) =>
            plan.toggles.map((t) => JSON.stringify(engine.evaluate(t.name, engine.withStaticContext({ sessionId: session, ...context } as never))));
          const first = answer(String(Math.random()));
          for (let i = 0; i < 5; i += 1) expect(answer(String(Math.random()))).toEqual(first);
        }
      }
    } finally {
      engine.close();
    }
  });

  it('notes a rule that reads a field named properties: in a constraint, a segment, a rollout or a variant', () => {
    const reads = (strategy: Record<string, unknown>, variants: unknown[] = []): boolean => {
      const feature = { name: 'f', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [], ...strategy }], variants } as never;
      return planSnapshot([feature], [feature], new Set()).sensitivity.propertiesField;
    };
    const on = (contextName: string) => ({ contextName, operator: 'IN', values: ['x'] });
    expect(reads({ constraints: [on('properties')] })).toBe(true);
    expect(reads({ segments: [{ constraints: [on('properties')] }] })).toBe(true);
    expect(reads({ name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'properties', groupId: 'g' } })).toBe(true);
    expect(reads({}, [{ name: 'a', weight: 1000, stickiness: 'properties' }])).toBe(true);
    expect(reads({ variants: [{ name: 'a', weight: 1000, stickiness: 'properties' }] })).toBe(true);
    expect(reads({ constraints: [on('region'), on('props')] }, [{ name: 'a', weight: 1000, stickiness: 'tier' }])).toBe(false);
  });

  it('marks random stickiness, random rollouts and custom strategies as never cacheable', async () => {
    const random = [{ name: 'r', enabled: true, strategies: [{ name: 'gradualRolloutRandom', parameters: { percentage: '50' }, constraints: [] }] }];
    const engine = await engineFor(random, []);
    try {
      expect(isCacheable(engine.snapshot().plan.sensitivity, { sessionId: 's', userId: 'u' })).toBe(false);
    } finally {
      engine.close();
    }
  });

  it('caches over date constraints only until the next date they compare with, when the caller sends no currentTime', async () => {
    const soon = Date.UTC(2030, 0, 1);
    const later = Date.UTC(2031, 0, 1);
    const features = [
      { name: 'a', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [{ contextName: 'currentTime', operator: 'DATE_AFTER', value: new Date(soon).toISOString() }] }] },
      { name: 'b', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [{ contextName: 'currentTime', operator: 'DATE_BEFORE', value: new Date(later).toISOString() }] }] },
      { name: 'c', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [{ contextName: 'currentTime', operator: 'DATE_AFTER', value: 'not a date' }] }] },
    ];
    const engine = await engineFor(features, []);
    try {
      const { sensitivity } = engine.snapshot().plan;
      expect(cacheableUntil(sensitivity, { userId: 'u' }, soon - 5000)).toBe(soon);
      // At the instant itself the answer may change a millisecond later: not cacheable.
      expect(cacheableUntil(sensitivity, { userId: 'u' }, soon)).toBe(soon);
      expect(cacheableUntil(sensitivity, { userId: 'u' }, soon + 1)).toBe(later);
      expect(cacheableUntil(sensitivity, { userId: 'u' }, later + 1)).toBe(Number.POSITIVE_INFINITY);
      // A caller's own currentTime pins the answer: no expiry.
      expect(cacheableUntil(sensitivity, { userId: 'u', currentTime: new Date(soon - 5000) }, soon - 5000)).toBe(Number.POSITIVE_INFINITY);
    } finally {
      engine.close();
    }
  });

  it("finds the next date among many, most of them past, as a scan of the flag set's sorted dates would", () => {
    // 2,000 date constraints, as a large flag set with a history of scheduled launches has.
    let seed = 7;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const base = Date.UTC(2026, 0, 1);
    const dateThresholds = [...new Set(Array.from({ length: 2000 }, () => base + Math.floor(random() * 1e10)))].sort((a, b) => a - b);
    const sensitivity = { random: false, session: false, sessionUnlessUser: false, time: true, dateThresholds, stickyFields: new Set<string>(), propertiesField: false };
    const probes = [base - 1, ...dateThresholds.flatMap((at) => [at - 1, at, at + 1]), base + 2e10];
    for (const now of probes) {
      expect(nextInstant(sensitivity, now)).toBe(dateThresholds.find((at) => at >= now) ?? Number.POSITIVE_INFINITY);
      expect(instantsPassed(sensitivity, now)).toBe(dateThresholds.filter((at) => at < now).length);
    }
    expect(instantsPassed({ ...sensitivity, time: false }, base + 1e12)).toBe(0);
    expect(nextInstant({ ...sensitivity, time: false }, base)).toBe(Number.POSITIVE_INFINITY);
    expect(nextInstant({ ...sensitivity, dateThresholds: [] }, base)).toBe(Number.POSITIVE_INFINITY);
  });

  it('needs userId or sessionId to cache over default stickiness', async () => {
    const features = [
      { name: 'd', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [{ contextName: 'currentTime', operator: 'DATE_AFTER', value: '2020-01-01T00:00:00Z' }] }] },
      { name: 'v', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [] }], variants: [{ name: 'a', weight: 500 }, { name: 'b', weight: 500 }] },
    ];
    const engine = await engineFor(features, []);
    try {
      const { sensitivity } = engine.snapshot().plan;
      expect(isCacheable(sensitivity, { userId: 'u', currentTime: new Date() })).toBe(true);
      expect(isCacheable(sensitivity, { currentTime: new Date() })).toBe(false);
      expect(isCacheable(sensitivity, { sessionId: 's', currentTime: new Date() })).toBe(true);
    } finally {
      engine.close();
    }
  });
});

describe('snapshot plan of malformed entries', () => {
  it('leaves out an entry without a name, so answers stay valid JSON', () => {
    // The repository rejects such a flag set whole (known-bugs BUG-1); the plan holds on its own too.
    const features = [{ enabled: true, strategies: [] }, { name: 'ok', enabled: true, strategies: [] }] as never[];
    expect(planSnapshot(features, features, new Set()).toggles.map((t) => t.name)).toEqual(['ok']);
  });

  it('is never reached by a flag set with an entry without a name: the engine does not become ready from it', async () => {
    const outcome = await Promise.race([
      engineFor([{ enabled: true, strategies: [] }, { name: 'ok', enabled: true, strategies: [] }], []).then((engine) => {
        engine.close();
        return 'ready';
      }),
      new Promise((r) => setTimeout(() => r('not ready'), 300)),
    ]);
    expect(outcome).toBe('not ready');
  });
});
