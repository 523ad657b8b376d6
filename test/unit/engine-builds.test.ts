/**
 * A flag set is built into a snapshot (compiled, planned) once per flag set the repository adopts.
 * Building one costs as much as the set is large (at 5,000 flags some 28 MB allocated, most of it
 * kept until the next set), so building it twice on arrival doubled the startup's garbage and
 * V8's old generation, and made the proxy ready later.
 *
 * A changed set is built from what the last one left wherever it can: a toggle whose definition
 * (with its segments) is the same is not compiled again, and the definition already held stands
 * for the copy just fetched. At 5000 flags, compiling every toggle took 45–92 ms of each change.
 * What must never happen: an answer from a toggle compiled against a segment, a parent or a
 * definition that has since changed.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import type { Context } from 'unleash-client';
import { compileFlagSet, type CompiledFlagSet } from '../../src/evaluation/compiled.js';
import { planSnapshot } from '../../src/evaluation/plan.js';
import type { Engine, EngineSettings } from '../../src/evaluation/engine.js';
import { withSegmentData } from '../../src/evaluation/repository.js';
import type { FeatureDefinition } from '../../src/evaluation/types.js';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { contextFor, createRandom, generateFlags } from '../../bench/flags.js';
import { engineFor, engineSettings, startEngine } from '../support/engine.js';

const FLAG = { name: 'checkout', enabled: true, strategies: [{ name: 'default', parameters: {} }] };

type Flag = Record<string, unknown> & { name: string };
type SegmentLike = { id: number; constraints: Array<Record<string, unknown>> };

const on = (name: string, extra: Record<string, unknown> = {}): Flag => ({ name, enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [] }], ...extra });
const forUsers = (name: string, segment: number): Flag => ({
  name,
  enabled: true,
  strategies: [{ name: 'default', parameters: {}, constraints: [], segments: [segment] }],
});
const usersIn = (id: number, ...userIds: string[]): SegmentLike => ({ id, constraints: [{ contextName: 'userId', operator: 'IN', values: userIds, inverted: false, caseInsensitive: false }] });

/** Settings for an engine of `url`, fetching at start, then only when asked (refresh()) within a test. */
function settings(url: string, token: string, overrides: Partial<EngineSettings> = {}): EngineSettings {
  return engineSettings({ url, token, appName: 'builds', refreshInterval: 3_600_000, ...overrides });
}

/** Starts an engine, closed after the test. */
async function started(settingsOfEngine: EngineSettings): Promise<Engine> {
  const engine = await startEngine(settingsOfEngine);
  open.push(engine);
  return engine;
}

const open: Engine[] = [];
let upstream: TestFlagServer | undefined;
afterEach(async () => {
  await Promise.all(open.splice(0).map((engine) => engine.close()));
  await upstream?.close();
  upstream = undefined;
});

describe('building a flag set into a snapshot', () => {
  it('builds the first set from the upstream once, and each changed set once more', async () => {
    upstream = await createTestFlagServer({ features: [FLAG] });
    const engine = await started(settings(upstream.url, upstream.token));
    const first = engine.snapshot();
    expect(first.revision).toBe(1);
    expect(first.compiled.has('checkout')).toBe(true);

    upstream.setEnabled('checkout', false);
    await engine.refresh();
    expect(engine.snapshot().revision).toBe(2);
    expect(engine.snapshot().compiled.isOn('checkout', {})).toBe(false);

    // An unchanged set is not rebuilt.
    await engine.refresh();
    expect(engine.snapshot().revision).toBe(2);
  });

  it('builds a bootstrapped set once', async () => {
    const engine = await engineFor([FLAG], []);
    open.push(engine);
    expect(engine.snapshot().revision).toBe(1);
    expect(engine.snapshot().compiled.isOn('checkout', {})).toBe(true);
  });

  it('builds a set read from the backup (which announces no change) once, and evaluates it', async () => {
    const storageProvider = createMemoryStorageProvider();
    await storageProvider.set('builds', { version: 2, features: [FLAG], segments: [] } as never);
    // No upstream answers: the backup is all there is.
    const engine = await started(settings('http://127.0.0.1:9/api/', 't', { storageProvider }));
    expect(engine.snapshot().revision).toBe(1);
    expect(engine.snapshot().compiled.isOn('checkout', {})).toBe(true);
  });
});

/** An engine on a test flag server holding `features` and `segments`, fetching only when asked. */
async function engineOn(features: Flag[], segments: SegmentLike[] = []): Promise<Engine> {
  upstream = await createTestFlagServer({ features: features as never, segments: segments as never });
  return started(settings(upstream.url, upstream.token));
}

const user = (userId: string): Context => ({ userId, properties: {} }) as Context;

describe('building a changed flag set', () => {
  it('compiles only the toggle that changed', async () => {
    const engine = await engineOn([on('a'), on('b'), on('c')]);
    expect(engine.snapshot().compiled.reused).toBe(0);

    upstream?.setEnabled('b', false);
    await engine.refresh();
    const { compiled } = engine.snapshot();
    expect(compiled.reused).toBe(2);
    expect(['a', 'b', 'c'].map((name) => compiled.isOn(name, user('u')))).toEqual([true, false, true]);
  });

  it('compiles again a toggle whose segment changed, which then answers by the new segment', async () => {
    const engine = await engineOn([forUsers('beta', 1), on('plain')], [usersIn(1, 'alice')]);
    expect(engine.snapshot().compiled.isOn('beta', user('alice'))).toBe(true);
    expect(engine.snapshot().compiled.isOn('beta', user('bob'))).toBe(false);

    upstream?.setSegments([usersIn(1, 'bob')] as never);
    await engine.refresh();
    const { compiled } = engine.snapshot();
    // The toggle's own definition is unchanged (it names segment 1): only its segment differs.
    expect(compiled.reused).toBe(1);
    expect(compiled.isOn('beta', user('alice'))).toBe(false);
    expect(compiled.isOn('beta', user('bob'))).toBe(true);
  });

  it('compiles again a toggle whose segment appears or goes', async () => {
    const engine = await engineOn([forUsers('beta', 2)], [usersIn(1, 'alice')]);
    // A missing segment fails the strategy closed.
    expect(engine.snapshot().compiled.isOn('beta', user('alice'))).toBe(false);

    upstream?.setSegments([usersIn(1, 'alice'), usersIn(2, 'alice')] as never);
    await engine.refresh();
    expect(engine.snapshot().compiled.reused).toBe(0);
    expect(engine.snapshot().compiled.isOn('beta', user('alice'))).toBe(true);

    upstream?.setSegments([usersIn(1, 'alice')] as never);
    await engine.refresh();
    expect(engine.snapshot().compiled.reused).toBe(0);
    expect(engine.snapshot().compiled.isOn('beta', user('alice'))).toBe(false);
  });

  it('checks an unchanged toggle against its changed parent', async () => {
    const engine = await engineOn([on('parent'), on('child', { dependencies: [{ feature: 'parent' }] }), on('inverse', { dependencies: [{ feature: 'parent', enabled: false }] })]);
    expect(['child', 'inverse'].map((name) => engine.snapshot().compiled.isOn(name, user('u')))).toEqual([true, false]);

    upstream?.setEnabled('parent', false);
    await engine.refresh();
    const { compiled } = engine.snapshot();
    expect(compiled.reused).toBe(2);
    expect(['parent', 'child', 'inverse'].map((name) => compiled.isOn(name, user('u')))).toEqual([false, false, true]);
  });

  it('plans only the toggle that changed, and what answers depend on follows its segments', async () => {
    const dated = (id: number): SegmentLike => ({ id, constraints: [{ contextName: 'currentTime', operator: 'DATE_AFTER', value: '2030-01-01T00:00:00.000Z', inverted: false, caseInsensitive: false }] });
    const engine = await engineOn([forUsers('beta', 1), on('a', { strategies: [{ name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'default', groupId: 'a' }, constraints: [] }] }), on('b')], [usersIn(1, 'alice')]);
    const before = engine.snapshot().plan;
    expect(before.sensitivity).toMatchObject({ time: false, sessionUnlessUser: true, dateThresholds: [] });

    upstream?.setSegments([dated(1)] as never);
    await engine.refresh();
    const after = engine.snapshot().plan;
    expect(after.toggles[1]).toBe(before.toggles[1]);
    expect(after.toggles[2]).toBe(before.toggles[2]);
    expect(after.toggles[0]).not.toBe(before.toggles[0]);
    expect(after.sensitivity).toMatchObject({ time: true, sessionUnlessUser: true, dateThresholds: [Date.parse('2030-01-01T00:00:00.000Z')] });

    upstream?.setEnabled('a', false);
    await engine.refresh();
    const last = engine.snapshot().plan;
    expect(last.toggles[0]).toBe(after.toggles[0]);
    expect(last.toggles[1]).not.toBe(after.toggles[1]);
    const served = upstream?.features() as FeatureDefinition[];
    expect(last).toEqual(planSnapshot(served, withSegmentData(served, new Map([[1, dated(1)]]) as never) as FeatureDefinition[], new Set()));
  });

  it('lets the last snapshot go: what a build reuses is taken out of it, not kept with it', async () => {
    const engine = await engineOn([on('parent'), on('child', { dependencies: [{ feature: 'parent' }] }), forUsers('beta', 1)], [usersIn(1, 'alice')]);
    const first = new WeakRef(engine.snapshot());
    const parts = [new WeakRef(engine.snapshot().compiled), new WeakRef(engine.snapshot().plan)];
    upstream?.setEnabled('parent', false);
    await engine.refresh();
    expect(engine.snapshot().compiled.reused).toBe(2);
    v8.setFlagsFromString('--expose-gc');
    const collect = vm.runInNewContext('gc') as () => void;
    for (let i = 0; i < 3 && first.deref() !== undefined; i += 1) {
      await new Promise((resolve) => setImmediate(resolve));
      collect();
    }
    expect([first, ...parts].map((ref) => ref.deref() === undefined)).toEqual([true, true, true]);
    expect(engine.snapshot().compiled.isOn('child', user('u'))).toBe(false);
  });

  it('keeps the definitions it holds for the toggles that did not change', async () => {
    const engine = await engineOn([on('a'), on('b'), on('c')]);
    const before = new Map(engine.snapshot().features.map((feature) => [feature.name, feature]));

    upstream?.setEnabled('b', false);
    await engine.refresh();
    const after = new Map(engine.snapshot().features.map((feature) => [feature.name, feature]));
    expect(after.get('a')).toBe(before.get('a'));
    expect(after.get('c')).toBe(before.get('c'));
    expect(after.get('b')).not.toBe(before.get('b'));
    expect(after.get('b')?.enabled).toBe(false);
    // What the repository holds (and unleash-client would evaluate) is the same object.
    expect(engine.definition('a')).toBe(before.get('a'));
    expect(engine.definition('b')).toBe(after.get('b'));
    expect(engine.snapshot().features.map((feature) => feature.name)).toEqual(['a', 'b', 'c']);
  });

  it('answers every toggle as a set compiled from scratch would, over a run of random changes', async () => {
    const { features, segments } = generateFlags(200);
    const flags = structuredClone(features) as unknown as Flag[];
    const segs = structuredClone(segments) as unknown as SegmentLike[];
    const engine = await engineOn(flags, segs);
    const rnd = createRandom(20261126);
    const pick = <T>(list: T[]): T => list[Math.floor(rnd() * list.length)] as T;
    const contexts = Array.from({ length: 120 }, (_, n) => contextFor(n * 7919) as unknown as Context);

    for (let round = 0; round < 6; round += 1) {
      for (let change = 0; change < 4; change += 1) {
        const flag = pick(flags);
        const strategy = (flag.strategies as Array<{ name: string; parameters?: Record<string, string>; constraints?: Array<Record<string, unknown>> }>)[0];
        const what = Math.floor(rnd() * 3);
        if (what === 0 || strategy === undefined) flag.enabled = !flag.enabled;
        else if (what === 1 && strategy.name === 'flexibleRollout') strategy.parameters = { ...strategy.parameters, rollout: String(Math.floor(rnd() * 101)) };
        else strategy.constraints = [{ contextName: 'userId', operator: 'STR_ENDS_WITH', values: [String(Math.floor(rnd() * 10))], inverted: rnd() < 0.5, caseInsensitive: false }];
        upstream?.upsertFeature(structuredClone(flag) as never);
      }
      if (rnd() < 0.7) {
        const segment = pick(segs);
        segment.constraints = [{ contextName: 'userId', operator: 'STR_ENDS_WITH', values: [String(Math.floor(rnd() * 10))], inverted: false, caseInsensitive: false }];
        upstream?.setSegments(structuredClone(segs) as never);
      }
      await engine.refresh();

      const served = upstream?.features() as FeatureDefinition[];
      const servedWithSegments = withSegmentData(served, new Map(segs.map((s) => [s.id, s])) as never) as FeatureDefinition[];
      const fresh = compileFlagSet(servedWithSegments, { customStrategyNames: new Set() });
      const { compiled, plan } = engine.snapshot();
      expect(compiled.reused).toBeGreaterThan(100);
      expect(differences(compiled, fresh, served, contexts)).toEqual([]);
      // The plan is the one made from scratch: the same entries, and what answers depend on.
      expect(plan).toEqual(planSnapshot(served, servedWithSegments, new Set()));
    }
  });
});

/** Where two compiled sets answer differently (toggle, context number, both answers); at most five. */
function differences(incremental: CompiledFlagSet, fresh: CompiledFlagSet, features: FeatureDefinition[], contexts: Context[]): string[] {
  const found: string[] = [];
  for (const { name } of features) {
    if (incremental.has(name) !== fresh.has(name)) found.push(`${name}: compiled ${incremental.has(name)} vs ${fresh.has(name)}`);
    if (!fresh.has(name)) continue;
    contexts.forEach((context, n) => {
      const got = JSON.stringify(incremental.variant(name, context));
      const want = JSON.stringify(fresh.variant(name, context));
      if (got !== want || incremental.isOn(name, context) !== fresh.isOn(name, context)) found.push(`${name} #${n}: ${got} vs ${want}`);
    });
    if (found.length >= 5) break;
  }
  return found.slice(0, 5);
}
