/**
 * The compiled evaluator against unleash-client 6 itself: the client specification, then
 * differential runs (fast-check contexts) over the benchmark's flag sets, every specification
 * state and a hand-written set of edge cases, comparing `variant()` (as JSON, with its key order)
 * and `isOn()` with a real `Unleash` instance's `getVariant` / `isFeatureEnabled` for every toggle.
 *
 * Random paths are compared too: Math.random is replaced by the same seeded sequence before each
 * side evaluates, so both draw the same numbers as long as they draw them at the same points.
 */
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Address4, Address6 } from 'ip-address';
import { InMemStorageProvider, Unleash, type Context } from 'unleash-client';
import { compileFlagSet, type CompiledFlagSet } from '../../src/evaluation/compiled.js';
import { hashAfter, hashPrefix, murmur32 } from '../../src/evaluation/compiled/hash.js';
import { compareVersions, createContextVersionParser, parseVersion } from '../../src/evaluation/compiled/semver.js';
import { plainIPv4 } from '../../src/evaluation/compiled/address.js';
import { LIST_LOOKUP_MAX } from '../../src/evaluation/compiled/shared.js';
import type { FeatureDefinition } from '../../src/evaluation/types.js';
import type { WireVariant } from '../../src/evaluation/engine.js';
import { generateFlags } from '../../bench/flags.js';
import { loadClientSpecs, specContexts, type ClientSpec } from '../support/client-spec.js';

const require = createRequire(import.meta.url);
const murmurhash3js = require('murmurhash3js') as { x86: { hash32(key: string, seed: number): number } };
const semver = require('semver') as { valid(v: string): string | null; compare(a: string, b: string): number };

type Ctx = Record<string, unknown>;

/** unleash-client with its evaluation client in reach (as src/evaluation/engine.ts does). */
class ReferenceUnleash extends Unleash {
  variantOf(name: string, context: Ctx): WireVariant {
    return this.client.getVariant(name, context as Context) as WireVariant;
  }
  isOn(name: string, context: Ctx): boolean {
    return this.client.isFeatureEnabled(this.getFeatureToggleDefinition(name), context as Context, () => false).enabled;
  }
  /** The host name its applicationHostname strategy compares with. */
  hostname(): string {
    return (this.client as unknown as { getStrategy(name: string): { hostname: string } }).getStrategy('applicationHostname').hostname;
  }
}

async function reference(features: unknown[], segments: unknown[]): Promise<ReferenceUnleash> {
  const unleash = new ReferenceUnleash({
    url: 'http://127.0.0.1:1/',
    appName: 'compiled-evaluator-test',
    disableMetrics: true,
    refreshInterval: 0,
    skipInstanceCountWarning: true,
    storageProvider: new InMemStorageProvider(),
    bootstrap: { data: features as FeatureDefinition[], segments: segments as never } as never,
  });
  unleash.on('error', () => {});
  unleash.on('warn', () => {});
  // An empty bootstrap never makes it ready: nothing to wait for then.
  if (features.length > 0) await new Promise<void>((resolve) => unleash.once('ready', () => resolve()));
  return unleash;
}

function compileFrom(ref: ReferenceUnleash, customStrategyNames: Iterable<string> = []): CompiledFlagSet {
  return compileFlagSet(ref.getFeatureToggleDefinitions(true) as FeatureDefinition[], {
    customStrategyNames: new Set(customStrategyNames),
    hostname: ref.hostname(),
  });
}

// ---------------------------------------------------------------------------------------------
// Seeded Math.random, so that random paths can be compared too.

const realRandom = Math.random;
let randomState = 0;
function seededRandom(): number {
  randomState = (randomState + 0x6d2b79f5) >>> 0;
  let t = randomState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
beforeAll(() => {
  Math.random = seededRandom;
});
afterAll(() => {
  Math.random = realRandom;
});

const OFF = JSON.stringify({ name: 'disabled', enabled: false, feature_enabled: false, featureEnabled: false });

/** The answer as the wire sees it, plus the key list (payload: undefined is a key unleash-client sets). */
const wire = (v: WireVariant): string => `${JSON.stringify(v)} keys=${Object.keys(v).join(',')}`;

/** unleash-client's answers, as the engine turns a throw into (the off variant, false). */
function expected(ref: ReferenceUnleash, name: string, ctx: Ctx, seed: number): { variant: string; on: boolean } {
  let variant: string;
  let on: boolean;
  randomState = seed;
  try {
    variant = wire(ref.variantOf(name, ctx));
  } catch {
    variant = `${OFF} keys=name,enabled,feature_enabled,featureEnabled`;
  }
  randomState = seed;
  try {
    on = ref.isOn(name, ctx);
  } catch {
    on = false;
  }
  return { variant, on };
}

/** Values a property may hold under a name no rule of a toggle reads: each would change an answer if it were read. */
const OTHER_VALUES: readonly unknown[] = [{}, ['x'], new Date(0), 'other', 7, true, '1.2.3', '10.0.0.1'];

/**
 * `ctx` with a value under each of `names` that `reads` leaves out, in its `properties` (a copy):
 * `undefined` when it has properties no rule reads as an object (a list, a string...).
 */
function withOthers(ctx: Ctx, names: readonly string[], reads: readonly string[], seed: number): Ctx | undefined {
  const given = ctx.properties;
  if (given !== undefined && given !== null && (typeof given !== 'object' || Array.isArray(given))) return undefined;
  const properties: Record<string, unknown> = { ...(given as Record<string, unknown> | undefined) };
  let i = seed;
  for (const name of [...names, ...Object.keys(properties)]) {
    if (!reads.includes(name)) properties[name] = OTHER_VALUES[(i += 1) % OTHER_VALUES.length];
  }
  return { ...ctx, properties };
}

function actual(compiled: CompiledFlagSet, name: string, ctx: Ctx, seed: number, others: readonly string[]): { variant: string; on: boolean } {
  randomState = seed;
  const variant = wire(compiled.variant(name, ctx as Context));
  // The shared answer answer builders serialize: the same JSON, frozen.
  randomState = seed;
  const shared = compiled.sharedVariant(name, ctx as Context);
  if (wire(shared) !== variant || !Object.isFrozen(shared)) throw new Error(`${name}: shared variant ${wire(shared)} differs from ${variant}`);
  // The bound handle answers the same three questions the same way.
  const handle = compiled.handle(name);
  if (handle !== undefined) {
    randomState = seed;
    const bound = wire(handle.variant(ctx as Context));
    randomState = seed;
    const boundShared = wire(handle.sharedVariant(ctx as Context));
    if (bound !== variant || boundShared !== variant) throw new Error(`${name}: bound variant ${bound} / ${boundShared} differs from ${variant}`);
    randomState = seed;
    const boundOn = handle.isOn(ctx as Context);
    randomState = seed;
    if (boundOn !== compiled.isOn(name, ctx as Context)) throw new Error(`${name}: bound isOn differs`);
    // Values under every name the toggle's `reads` leave out change nothing (in-process calls check only those).
    const reads = handle.reads;
    if (reads === undefined || !Object.isFrozen(reads)) throw new Error(`${name}: a compiled toggle without a frozen reads list`);
    const other = withOthers(ctx, others, reads, seed);
    if (other !== undefined) {
      randomState = seed;
      const otherVariant = wire(handle.variant(other as Context));
      randomState = seed;
      const otherOn = handle.isOn(other as Context);
      if (otherVariant !== variant || otherOn !== boundOn) {
        throw new Error(`${name} (reads ${reads.join(', ')}): ${otherVariant} on=${otherOn} with other properties, ${variant} on=${boundOn} without`);
      }
    }
  }
  randomState = seed;
  return { variant, on: compiled.isOn(name, ctx as Context) };
}

/** Compares every toggle for one context; returns the number compared, throws on the first difference. */
function compareAll(ref: ReferenceUnleash, compiled: CompiledFlagSet, names: readonly string[], ctx: Ctx, others: readonly string[]): number {
  for (let i = 0; i < names.length; i += 1) {
    const name = names[i] as string;
    const seed = (i * 2654435761) >>> 0;
    const want = expected(ref, name, ctx, seed);
    const got = actual(compiled, name, ctx, seed, others);
    if (want.variant !== got.variant || want.on !== got.on) {
      throw new Error(`${name}: expected ${want.variant} on=${want.on}, got ${got.variant} on=${got.on}`);
    }
  }
  return names.length;
}

// ---------------------------------------------------------------------------------------------
// Context generation from what a flag set refers to.

interface Vocabulary {
  /** Context fields constraints, overrides and stickiness read, with the values they name. */
  fields: Map<string, Set<string>>;
  userIds: Set<string>;
  ips: Set<string>;
}

function vocabularyOf(features: readonly FeatureDefinition[]): Vocabulary {
  const vocabulary: Vocabulary = { fields: new Map(), userIds: new Set(), ips: new Set() };
  const note = (name: unknown, values: unknown[]) => {
    if (typeof name !== 'string') return;
    const set = vocabulary.fields.get(name) ?? new Set<string>();
    for (const v of values) if (typeof v === 'string' && v !== '') set.add(v);
    vocabulary.fields.set(name, set);
  };
  const noteConstraints = (constraints: unknown) => {
    for (const c of (Array.isArray(constraints) ? constraints : []) as Array<Record<string, unknown>>) {
      if (!c) continue;
      const values = [...(Array.isArray(c.values) ? c.values : []), c.value];
      note(c.contextName, values);
      if (c.operator === 'IN_CIDR') for (const v of values) if (typeof v === 'string') vocabulary.ips.add(v.trim());
    }
  };
  const noteVariants = (variants: unknown) => {
    for (const v of (Array.isArray(variants) ? variants : []) as Array<Record<string, any>>) {
      if (typeof v?.stickiness === 'string') note(v.stickiness, []);
      for (const o of v?.overrides ?? []) note(o.contextName, o.values ?? []);
    }
  };
  for (const feature of features as unknown as Array<Record<string, any>>) {
    noteVariants(feature.variants);
    for (const s of feature.strategies ?? []) {
      noteConstraints(s.constraints);
      for (const segment of s.segments ?? []) noteConstraints(segment?.constraints);
      noteVariants(s.variants);
      const p = s.parameters ?? {};
      if (typeof p.stickiness === 'string') note(p.stickiness, []);
      if (typeof p.userIds === 'string') for (const id of p.userIds.split(/\s*,\s*/)) vocabulary.userIds.add(id);
      if (typeof p.IPs === 'string') for (const ip of p.IPs.split(/\s*,\s*/)) vocabulary.ips.add(ip);
    }
  }
  return vocabulary;
}

const pickFrom = <T>(values: readonly T[], fallback: fc.Arbitrary<T>): fc.Arbitrary<T> =>
  values.length > 0 ? fc.constantFrom(...values) : fallback;

const semverish = fc
  .tuple(
    fc.constantFrom('', '', '', 'v', ' ', '='),
    fc.nat(4),
    fc.nat(12),
    fc.nat(3),
    fc.constantFrom('', '', '', '-alpha', '-beta.1', '-rc.2', '-0', '-1', '-alpha.beta', '-01', '-beta.11', '-x-y'),
    fc.constantFrom('', '', '+build.5', '+001'),
  )
  .map(([pre, a, b, c, rel, build]) => `${pre}${a}.${b}.${c}${rel}${build}`);

const dateish = fc.oneof(
  fc.date({ min: new Date('2019-01-01'), max: new Date('2027-01-01'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom('2022-01-22T11:00:00.000Z', 'not a date', '2024-01-01', '1700000000000'),
);

function ipArbitrary(vocabulary: Vocabulary): fc.Arbitrary<string> {
  const ranges = [...vocabulary.ips]
    .map((ip) => ip.trim())
    .filter((ip) => Address4.isValid(ip))
    .map((ip) => new Address4(ip))
    .map((a) => ({ base: Number(a.bigInt()), bits: a.subnetMask }));
  const toIp = (n: number) => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
  const inside =
    ranges.length > 0
      ? fc.tuple(fc.constantFrom(...ranges), fc.nat()).map(([r, n]) => {
          const hostMask = r.bits === 0 ? 0xffffffff : r.bits === 32 ? 0 : 0xffffffff >>> r.bits;
          return toIp(((r.base & ~hostMask) | (n & hostMask)) >>> 0);
        })
      : fc.constant('10.1.2.3');
  return fc.oneof(
    { weight: 3, arbitrary: inside },
    { weight: 2, arbitrary: pickFrom([...vocabulary.ips], fc.constant('127.0.0.1')) },
    { weight: 2, arbitrary: fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join('.')) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('::1', '2001:db8::1', '2001:db8:0:0:0:0:0:2', '::ffff:10.1.2.3', 'fe80::1', '10.1.2.3/24', '010.1.2.3', ' 10.1.2.3', '256.1.1.1', '1.2.3', ''),
    },
  );
}

/** A random context for a flag set: fields it reads, with values it names or anything else. */
function contextArbitrary(vocabulary: Vocabulary, seeds: readonly Ctx[] = []): fc.Arbitrary<Ctx> {
  const names = [...vocabulary.fields.keys()];
  const ip = ipArbitrary(vocabulary);
  const anyValue = (name: string): fc.Arbitrary<unknown> => {
    const known = [...(vocabulary.fields.get(name) ?? [])];
    const options: Array<fc.WeightedArbitrary<unknown>> = [
      { weight: 2, arbitrary: fc.string({ maxLength: 10 }) },
      { weight: 1, arbitrary: fc.integer({ min: -100, max: 1000 }).map(String) },
      { weight: 1, arbitrary: fc.double({ noNaN: true, min: -1e3, max: 1e3 }).map(String) },
      { weight: 1, arbitrary: semverish },
      { weight: 1, arbitrary: dateish },
      { weight: 1, arbitrary: ip },
      { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.boolean(), fc.constant('')) },
    ];
    if (known.length > 0) {
      options.push({ weight: 8, arbitrary: fc.constantFrom(...known) });
      options.push({
        weight: 2,
        arbitrary: fc.tuple(fc.constantFrom(...known), fc.constantFrom('upper', 'lower', 'pad', 'prefix', 'suffix')).map(([v, how]) =>
          how === 'upper' ? v.toUpperCase() : how === 'lower' ? v.toLowerCase() : how === 'pad' ? ` ${v} ` : how === 'prefix' ? `x${v}` : `${v}x`,
        ),
      });
    }
    return fc.oneof(...options);
  };
  const entry = names.length > 0 ? fc.constantFrom(...names).chain((name) => fc.tuple(fc.constant(name), anyValue(name))) : fc.constant(['x', 'y'] as [string, unknown]);
  const userIds = [...vocabulary.userIds];
  const generated = fc
    .record({
      userId: fc.oneof(
        { weight: 4, arbitrary: pickFrom(userIds, fc.constant('user-1')) },
        { weight: 3, arbitrary: fc.nat(400).map((n) => `user-${n}`) },
        { weight: 2, arbitrary: fc.string({ maxLength: 8 }) },
        { weight: 1, arbitrary: fc.oneof(fc.constant(undefined), fc.constant(''), fc.integer({ min: 0, max: 500 })) },
      ),
      sessionId: fc.oneof(
        { weight: 18, arbitrary: fc.oneof(fc.nat(10_000).map(String), fc.string({ minLength: 1, maxLength: 8 })) },
        { weight: 1, arbitrary: fc.oneof(fc.constant(undefined), fc.constant('')) },
        { weight: 1, arbitrary: fc.nat(10_000) },
      ),
      remoteAddress: fc.oneof(
        { weight: 4, arbitrary: ip },
        { weight: 1, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.constantFrom(0, 10, true) },
      ),
      currentTime: fc.oneof(
        { weight: 3, arbitrary: fc.constant(undefined) },
        { weight: 3, arbitrary: fc.date({ min: new Date('2019-01-01'), max: new Date('2027-01-01'), noInvalidDate: true }) },
        { weight: 1, arbitrary: dateish },
        { weight: 1, arbitrary: fc.integer({ min: 1.5e12, max: 1.8e12 }) },
      ),
      environment: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom('production', 'staging', 'default') },
        // A missing or null standard field is read from the property of its name instead.
        { weight: 1, arbitrary: fc.constantFrom(undefined, null, 7) },
      ),
      appName: fc.oneof(
        { weight: 8, arbitrary: fc.constant('compiled-evaluator-test') },
        { weight: 1, arbitrary: fc.constantFrom(undefined, null, '', 0) },
      ),
      properties: fc.array(entry, { maxLength: 10 }),
      // The proxy builds prototype-less properties; unleash-client gets plain objects from other callers.
      propertiesKind: fc.constantFrom('plain', 'plain', 'bare', 'bare', 'none', 'null'),
      topLevel: fc.array(entry, { maxLength: 3 }),
      featureToggle: fc.option(fc.constantFrom('some-group', 'other'), { freq: 6 }),
    })
    .map((r) => {
      const ctx: Ctx = { appName: r.appName, environment: r.environment };
      for (const key of ['userId', 'sessionId', 'remoteAddress', 'currentTime', 'featureToggle'] as const) {
        if (r[key] !== undefined && r[key] !== null) ctx[key] = r[key];
      }
      if (r.propertiesKind === 'null') ctx.properties = null;
      else if (r.propertiesKind !== 'none') ctx.properties = Object.assign(r.propertiesKind === 'bare' ? Object.create(null) : {}, Object.fromEntries(r.properties));
      for (const [k, v] of r.topLevel) if (!(k in ctx)) ctx[k] = v;
      return ctx;
    });
  if (seeds.length === 0) return generated;
  return fc.oneof(
    generated,
    fc.tuple(fc.constantFrom(...seeds), generated).map(([seed, g]) => ({ ...seed, properties: { ...(g.properties as object), ...((seed.properties as object) ?? {}) } })),
  );
}

/** Runs the differential for one flag set; returns contexts × toggles compared. */
async function differential(features: unknown[], segments: unknown[], numRuns: number, seeds: readonly Ctx[] = []): Promise<number> {
  const ref = await reference(features, segments);
  try {
    const withSegments = ref.getFeatureToggleDefinitions(true) as FeatureDefinition[];
    const compiled = compileFrom(ref);
    const names = withSegments.map((f) => f.name);
    const uncompiled = names.filter((n) => !compiled.has(n)).map((n) => `${n}: ${compiled.fallbackReason(n)}`);
    expect(uncompiled).toEqual([]);
    let compared = 0;
    const vocabulary = vocabularyOf(withSegments);
    // Every name a rule of the set reads, and the standard fields (read from properties when missing at the top).
    const others = [...new Set([...vocabulary.fields.keys(), 'userId', 'sessionId', 'remoteAddress', 'appName', 'environment', 'currentTime'])];
    fc.assert(
      fc.property(contextArbitrary(vocabulary, seeds), (ctx) => {
        compared += compareAll(ref, compiled, names, ctx, others);
      }),
      { numRuns },
    );
    return compared;
  } finally {
    ref.destroy();
  }
}

// ---------------------------------------------------------------------------------------------

const specs = loadClientSpecs();

describe('compiled evaluator: client specification', () => {
  for (const spec of specs) {
    describe(spec.name, () => {
      let ref: ReferenceUnleash;
      let compiled: CompiledFlagSet;
      beforeAll(async () => {
        ref = await reference(spec.features, spec.segments);
        compiled = compileFrom(ref);
      });
      afterAll(() => ref.destroy());

      it('compiles every toggle', () => {
        const names = spec.features.map((f) => f.name);
        expect(names.filter((n) => !compiled.has(n)).map((n) => `${n}: ${compiled.fallbackReason(n)}`)).toEqual([]);
      });
      for (const test of spec.tests) {
        it(test.description, () => {
          expect(compiled.isOn(test.toggleName, test.context as Context)).toBe(test.expectedResult);
        });
      }
      for (const test of spec.variantTests) {
        it(`variant: ${test.description}`, () => {
          const want = test.expectedResult as Record<string, unknown>;
          const variant = compiled.variant(test.toggleName, test.context as Context);
          const got: Record<string, unknown> = { name: variant.name, enabled: variant.enabled };
          if ('payload' in want) got.payload = variant.payload;
          if ('feature_enabled' in want) got.feature_enabled = variant.feature_enabled;
          if ('featureEnabled' in want) got.featureEnabled = variant.featureEnabled;
          expect(got).toEqual(want);
        });
      }
    });
  }
});

/** Definitions covering the corners of unleash-client's semantics (all built-in, all compiled). */
function edgeCases(hostname: string): { features: unknown[]; segments: unknown[] } {
  const c = (contextName: string, operator: string, more: Record<string, unknown> = {}) => ({ contextName, operator, inverted: false, ...more });
  const s = (name: string, parameters: Record<string, unknown> | undefined, constraints: unknown[] = [], more: Record<string, unknown> = {}) => ({
    name,
    ...(parameters === undefined ? {} : { parameters }),
    constraints,
    ...more,
  });
  const f = (name: string, strategies: unknown[], more: Record<string, unknown> = {}) => ({ name, enabled: true, strategies, ...more });
  const v = (name: string, weight: number, more: Record<string, unknown> = {}) => ({ name, weight, weightType: 'variable', payload: { type: 'string', value: name }, ...more });
  const features = [
    f('in-spaces', [s('default', {}, [c('tenant', 'IN', { values: [' a ', '', 'b', 'C'] })])]),
    f('not-in-inverted', [s('default', {}, [c('tenant', 'NOT_IN', { values: ['a'], inverted: true })])]),
    f('in-empty', [s('default', {}, [c('tenant', 'IN', { values: [] })])]),
    f('not-in-empty', [s('default', {}, [c('tenant', 'NOT_IN', { values: [] })])]),
    f('str-ci', [s('default', {}, [c('email', 'STR_CONTAINS', { values: ['@Example.COM'], caseInsensitive: true })])]),
    f('str-start-blank', [s('default', {}, [c('email', 'STR_STARTS_WITH', { values: ['  '] })])]),
    f('str-end-ci-inv', [s('default', {}, [c('email', 'STR_ENDS_WITH', { values: ['.ORG', '.net'], caseInsensitive: true, inverted: true })])]),
    f('num-weird', [
      s('default', {}, [c('age', 'NUM_GTE', { value: ' 12 ' })]),
      s('default', {}, [c('age', 'NUM_EQ', { value: '' })]),
      s('default', {}, [c('age', 'NUM_LT', { value: '0x10' })]),
    ]),
    f('num-nan-inverted', [s('default', {}, [c('age', 'NUM_GT', { value: 'abc', inverted: true })])]),
    f('num-float', [s('default', {}, [c('age', 'NUM_LTE', { value: '3.5' })])]),
    f('date-invalid-inverted', [s('default', {}, [c('currentTime', 'DATE_AFTER', { value: 'nope', inverted: true })])]),
    f('date-any-field', [s('default', {}, [c('somethingElse', 'DATE_BEFORE', { value: '2023-06-01T00:00:00Z' })])]),
    f('semver-v-value', [s('default', {}, [c('appVersion', 'SEMVER_GTE', { value: 'v1.2.0' })])]),
    f('semver-invalid-value-inv', [s('default', {}, [c('appVersion', 'SEMVER_EQ', { value: '1.2', inverted: true })])]),
    f('semver-pre', [s('default', {}, [c('appVersion', 'SEMVER_LT', { value: '2.0.0-beta.2' }), c('appVersion', 'SEMVER_GT', { value: '1.0.0-alpha' })])]),
    f('semver-lte', [s('default', {}, [c('appVersion', 'SEMVER_LTE', { value: '1.5.0' })])]),
    f('regex', [s('default', {}, [c('email', 'REGEX', { value: '^user-\\d+@' })])]),
    f('regex-ci-inv', [s('default', {}, [c('email', 'REGEX', { value: 'EXAMPLE\\.(com|org)$', caseInsensitive: true, inverted: true })])]),
    f('regex-invalid', [s('default', {}, [c('email', 'REGEX', { value: '(unclosed' })])]),
    f('cidr', [s('default', {}, [c('remoteAddress', 'IN_CIDR', { values: ['10.0.0.0/8', ' 192.168.1.7 ', '2001:db8::/32', 'bogus', '0.0.0.0/0x'] })])]),
    f('cidr-all', [s('default', {}, [c('ip', 'IN_CIDR', { values: ['0.0.0.0/0'] })])]),
    f('unknown-operator-inverted', [s('default', {}, [c('tenant', 'SOMETHING', { values: ['a'], inverted: true })]), s('userWithId', { userIds: 'user-1' })]),
    f('null-constraint', [s('default', {}, [null])]),
    f('segments', [s('default', {}, [c('region', 'IN', { values: ['eu'] })], { segments: [1, 2] })]),
    f('missing-segment', [s('default', {}, [], { segments: [404] })]),
    f('empty-segment', [s('default', {}, [], { segments: [3] })]),
    f('remote-address', [s('remoteAddress', { IPs: '10.1.2.3, 192.168.0.0/16 ,, 2001:db8::1, 127.0.0.1/33, bogus' })]),
    f('remote-address-blank', [s('remoteAddress', { IPs: '' })]),
    f('user-with-id', [s('userWithId', { userIds: ' user-1 ,user-2,  user-3,123' })]),
    f('user-with-id-empty', [s('userWithId', {})]),
    // Lists of LIST_LOOKUP_MAX values are looked up in the list, longer ones in a Set: both sides.
    ...[LIST_LOOKUP_MAX, LIST_LOOKUP_MAX + 1].flatMap((n) => {
      const tenants = Array.from({ length: n }, (_, i) => `t${i}`);
      const users = Array.from({ length: n }, (_, i) => `user-${i}`);
      const ips = Array.from({ length: n }, (_, i) => `10.0.0.${i}`);
      return [
        f(`in-${n}`, [s('default', {}, [c('tenant', 'IN', { values: tenants })])]),
        f(`not-in-${n}`, [s('default', {}, [c('tenant', 'NOT_IN', { values: tenants })])]),
        f(`user-with-id-${n}`, [s('userWithId', { userIds: users.join(',') })]),
        f(`remote-address-${n}`, [s('remoteAddress', { IPs: ips.join(', ') })]),
        f(`overrides-${n}`, [s('default', {})], {
          variants: [v('a', 1, { overrides: [{ contextName: 'tenant', values: tenants }] }), v('b', 1, { overrides: [{ contextName: 'userId', values: users }] })],
        }),
      ];
    }),
    f('rollout-no-group', [s('flexibleRollout', { rollout: '50', stickiness: 'default' })]),
    f('rollout-custom', [s('flexibleRollout', { rollout: '40', stickiness: 'tenant', groupId: 'g' })]),
    f('rollout-session', [s('flexibleRollout', { rollout: '30', stickiness: 'sessionId', groupId: 'g' })]),
    f('rollout-random', [s('flexibleRollout', { rollout: '50', stickiness: 'random', groupId: 'g' })]),
    f('rollout-edges', [s('flexibleRollout', { rollout: '0', groupId: 'a' }), s('flexibleRollout', { rollout: 'abc', groupId: 'b' }), s('flexibleRollout', { rollout: '33.3', groupId: 'c' })]),
    f('rollout-full', [s('flexibleRollout', { rollout: '100', stickiness: 'userId', groupId: 'all' })]),
    f('gradual-user', [s('gradualRolloutUserId', { percentage: '50', groupId: 'gu' })]),
    f('gradual-session', [s('gradualRolloutSessionId', { percentage: '25' })]),
    f('gradual-random', [s('gradualRolloutRandom', { percentage: '50' })]),
    f('hostname', [s('applicationHostname', { hostNames: `some-other-host, ${hostname.toUpperCase()}` })]),
    f('hostname-other', [s('applicationHostname', { hostNames: 'some-other-host' })]),
    f('hostname-none', [s('applicationHostname', {})]),
    f('no-strategies', []),
    f('disabled', [s('default', {})], { enabled: false }),
    f('variants-custom-stickiness', [s('default', {})], {
      variants: [v('a', 1, { stickiness: 'tenant' }), v('b', 0, { stickiness: 'tenant' }), v('c', 2, { stickiness: 'tenant', overrides: [{ contextName: 'userId', values: ['user-7'] }] })],
    }),
    f('variants-zero-total', [s('default', {})], { variants: [v('a', 0), v('b', 0)] }),
    f('variants-negative', [s('default', {})], { variants: [v('a', -5), v('b', 10), v('c', 0), v('d', 5, { payload: undefined })] }),
    f('variants-fix', [s('default', {})], {
      variants: [v('fixed', 200, { weightType: 'fix', stickiness: 'default' }), v('rest', 800)],
    }),
    f('variants-empty-stickiness', [s('default', {})], { variants: [v('a', 50, { stickiness: '' }), v('b', 50)] }),
    f('variants-random-stickiness', [s('default', {})], { variants: [v('a', 50, { stickiness: 'random' }), v('b', 50)] }),
    f('variants-override-empty', [s('default', {})], {
      variants: [v('a', 50, { overrides: [{ contextName: 'tenant', values: [] }, { contextName: 'region', values: ['eu', 'us'] }] }), v('b', 50, { overrides: [] })],
    }),
    f('strategy-variants-no-group', [s('default', {}, [], { variants: [v('s1', 50), v('s2', 50)] })], { variants: [v('toggle', 100)] }),
    f('strategy-variants-custom', [
      s('flexibleRollout', { rollout: '60', stickiness: 'sessionId', groupId: 'sv' }, [], { variants: [v('s1', 30, { stickiness: 'tenant' }), v('s2', 70)] }),
      s('default', {}, [], { variants: [v('late', 100)] }),
    ]),
    f('strategy-variants-zero', [s('default', { groupId: 'z' }, [], { variants: [v('s1', 0)] })], { variants: [v('toggle', 1)] }),
    f('parent-plain', [s('flexibleRollout', { rollout: '50', groupId: 'parent' })]),
    f('parent-variants', [s('default', {})], { variants: [v('red', 50), v('blue', 50)] }),
    f('parent-off', [s('default', {})], { enabled: false }),
    f('parent-with-parent', [s('default', {})], { dependencies: [{ feature: 'parent-plain' }] }),
    f('child-plain', [s('default', {})], { dependencies: [{ feature: 'parent-plain' }] }),
    f('child-not', [s('default', {})], { dependencies: [{ feature: 'parent-plain', enabled: false }] }),
    f('child-variant', [s('default', {})], { dependencies: [{ feature: 'parent-variants', variants: ['red'] }] }),
    f('child-variant-disabled', [s('default', {})], { dependencies: [{ feature: 'parent-off', variants: ['disabled'] }] }),
    f('child-no-variants', [s('default', {})], { dependencies: [{ feature: 'parent-variants', variants: [] }] }),
    f('child-missing', [s('default', {})], { dependencies: [{ feature: 'nowhere' }] }),
    f('child-missing-not', [s('default', {})], { dependencies: [{ feature: 'nowhere', enabled: false }] }),
    f('child-grandparent', [s('default', {})], { dependencies: [{ feature: 'parent-with-parent', enabled: false }] }),
    f('child-many', [s('default', {})], { dependencies: [{ feature: 'parent-off', enabled: false }, { feature: 'parent-variants', variants: ['blue'] }] }),
    f('child-self', [s('default', {})], { dependencies: [{ feature: 'child-self' }] }),
    f('child-disabled', [s('default', {})], { enabled: false, dependencies: [{ feature: 'parent-plain' }] }),
    // Every standard field read by name: the top-level value (a string, a number, a Date), else the property of that name.
    f('field-app-name', [s('default', {}, [c('appName', 'IN', { values: ['compiled-evaluator-test', '0', 'web'] })])]),
    f('field-environment', [s('default', {}, [c('environment', 'STR_STARTS_WITH', { values: ['prod', '7'] })])]),
    f('field-session', [s('default', {}, [c('sessionId', 'NUM_LT', { value: '5000' })])]),
    f('field-user-number', [s('default', {}, [c('userId', 'NUM_GTE', { value: '100' })])]),
    f('field-address', [s('default', {}, [c('remoteAddress', 'STR_ENDS_WITH', { values: ['.3', '1'] })])]),
    f('field-time-text', [s('default', {}, [c('currentTime', 'STR_CONTAINS', { values: ['202', 'GMT', 'T'] })])]),
    f('field-time-semver', [s('default', {}, [c('currentTime', 'SEMVER_GT', { value: '1.0.0' })])]),
    f('stickiness-fields', [s('flexibleRollout', { rollout: '50', stickiness: 'remoteAddress', groupId: 'sf' })], {
      variants: [v('a', 50, { stickiness: 'appName' }), v('b', 50, { stickiness: 'appName', overrides: [{ contextName: 'environment', values: ['staging', '7'] }] })],
    }),
    f('stickiness-session', [s('default', {}, [], { variants: [v('s1', 50, { stickiness: 'sessionId' }), v('s2', 50, { stickiness: 'sessionId' })] })]),
    f('stickiness-time', [s('flexibleRollout', { rollout: '50', stickiness: 'currentTime', groupId: 'st' })]),
  ];
  const segments = [
    { id: 1, constraints: [c('plan', 'IN', { values: ['pro', 'enterprise'] })] },
    { id: 2, constraints: [c('appVersion', 'SEMVER_GTE', { value: '1.0.0' })] },
    { id: 3, constraints: [] },
  ];
  return { features, segments };
}

describe('compiled evaluator: differential against unleash-client', () => {
  const totals: Record<string, number> = {};
  afterAll(() => {
    if (process.env.COMPILED_EVALUATOR_REPORT) console.info('compared (contexts × toggles):', totals);
  });

  it.each([
    [200, 300],
    [1000, 100],
  ])('answers as unleash-client over the benchmark set of %i flags', async (count, runs) => {
    const { features, segments } = generateFlags(count);
    totals[`bench-${count}`] = await differential(features, segments, runs);
    expect(totals[`bench-${count}`]).toBe(count * runs);
  });

  it.each(specs.map((spec) => [spec.name, spec] as [string, ClientSpec]))('answers as unleash-client over spec %s', async (_name, spec) => {
    const seeds = specContexts(spec) as Ctx[];
    const compared = await differential(spec.features, spec.segments, 60, seeds);
    totals[`spec-${spec.name}`] = compared;
    expect(compared).toBe(spec.features.length * 60);
  });

  it('answers as unleash-client over the edge cases', async () => {
    const host = await reference([], []);
    const hostname = host.hostname();
    host.destroy();
    const { features, segments } = edgeCases(hostname);
    totals.edge = await differential(features, segments, 600);
    expect(totals.edge).toBe(features.length * 600);
  });
});

describe('compiled evaluator: fallbacks', () => {
  const base = [
    { name: 'plain', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [] }] },
    { name: 'custom', enabled: true, strategies: [{ name: 'my-strategy', parameters: {}, constraints: [] }] },
    { name: 'rollout', enabled: true, strategies: [{ name: 'flexibleRollout', parameters: { rollout: '100', groupId: 'r' }, constraints: [] }] },
    { name: 'child-of-custom', enabled: true, strategies: [], dependencies: [{ feature: 'custom' }] },
    { name: 'child-of-plain', enabled: true, strategies: [], dependencies: [{ feature: 'plain' }] },
    { name: 'child-of-child', enabled: true, strategies: [], dependencies: [{ feature: 'child-of-custom' }] },
  ] as unknown as FeatureDefinition[];

  it('leaves toggles with an unknown strategy, and toggles depending on them, to unleash-client', () => {
    const compiled = compileFlagSet(base, { customStrategyNames: new Set() });
    expect(['plain', 'rollout', 'child-of-plain', 'child-of-child'].filter((n) => !compiled.has(n))).toEqual([]);
    expect(compiled.has('custom')).toBe(false);
    expect(compiled.fallbackReason('custom')).toBe('unknown strategy my-strategy');
    expect(compiled.has('child-of-custom')).toBe(false);
    expect(compiled.fallbackReason('child-of-custom')).toBe('depends on custom, which is not compiled');
    // A parent that has dependencies itself is never evaluated: its child is compiled, and off.
    expect(compiled.isOn('child-of-child', {})).toBe(false);
    expect(compiled.isOn('child-of-plain', {})).toBe(true);
    expect(() => compiled.variant('custom', {})).toThrow(/not compiled/);
  });

  it('leaves toggles using a custom strategy to unleash-client, even one named like a built-in', () => {
    const compiled = compileFlagSet(base, { customStrategyNames: new Set(['default', 'my-strategy']) });
    expect(compiled.has('plain')).toBe(false);
    expect(compiled.fallbackReason('plain')).toBe('custom strategy default');
    expect(compiled.has('custom')).toBe(false);
    expect(compiled.has('child-of-plain')).toBe(false);
    expect(compiled.has('rollout')).toBe(true);
    expect(compiled.isOn('rollout', { userId: 'u' })).toBe(true);
  });

  it('answers unknown toggles as unleash-client does', () => {
    const compiled = compileFlagSet(base, { customStrategyNames: new Set() });
    expect(compiled.has('nope')).toBe(false);
    expect(compiled.variant('nope', {})).toEqual({ name: 'disabled', enabled: false, feature_enabled: false, featureEnabled: false });
    expect(compiled.isOn('nope', {})).toBe(false);
  });

  it('leaves malformed definitions and an unknown host name to unleash-client', () => {
    const malformed = [
      { name: 'no-strategies-list', enabled: true },
      { name: 'enabled-string', enabled: 'yes', strategies: [] },
      { name: 'values-missing', enabled: true, strategies: [{ name: 'default', constraints: [{ contextName: 'a', operator: 'IN' }] }] },
      { name: 'values-number', enabled: true, strategies: [{ name: 'default', constraints: [{ contextName: 'a', operator: 'IN', values: [5] }] }] },
      { name: 'rollout-no-params', enabled: true, strategies: [{ name: 'flexibleRollout', constraints: [] }] },
      { name: 'weight-string', enabled: true, strategies: [], variants: [{ name: 'a', weight: '50' }] },
      { name: 'hostname', enabled: true, strategies: [{ name: 'applicationHostname', parameters: { hostNames: 'a,b' } }] },
      { name: 'on-prototype', enabled: true, strategies: [], dependencies: [{ feature: 'constructor' }] },
    ] as unknown as FeatureDefinition[];
    const compiled = compileFlagSet(malformed, { customStrategyNames: new Set() });
    expect(Object.fromEntries(malformed.map((f) => [f.name, compiled.fallbackReason(f.name)]))).toEqual({
      'no-strategies-list': 'strategies is not a list',
      'enabled-string': 'enabled is not a boolean',
      'values-missing': 'IN constraint without a values list',
      'values-number': 'IN constraint with a non-string value',
      'rollout-no-params': 'flexibleRollout strategy without parameters',
      'weight-string': 'variant weight that is not a number',
      hostname: 'applicationHostname without a known host name',
      'on-prototype': 'dependency on constructor, which unleash-client resolves through Object.prototype',
    });
  });
});

describe('compiled evaluator: contexts unleash-client throws on', () => {
  it('answers off, as the engine does, and reports the error', async () => {
    // The proxy's contexts carry prototype-less `properties`; a constraint on a field named
    // "properties" makes unleash-client's String() throw, before a later strategy could answer on.
    const features = [
      {
        name: 'reads-properties',
        enabled: true,
        strategies: [
          { name: 'default', parameters: {}, constraints: [{ contextName: 'properties', operator: 'IN', values: ['x'], inverted: false }] },
          { name: 'default', parameters: {}, constraints: [] },
        ],
        variants: [{ name: 'v', weight: 1, weightType: 'variable' }],
      },
    ];
    const ref = await reference(features, []);
    try {
      const errors: string[] = [];
      const compiled = compileFlagSet(ref.getFeatureToggleDefinitions(true) as FeatureDefinition[], {
        customStrategyNames: new Set(),
        onError: (toggle) => errors.push(toggle),
      });
      const ctx = { appName: 'a', userId: 'u', properties: Object.create(null) as Record<string, string> };
      expect(() => ref.variantOf('reads-properties', ctx)).toThrow(TypeError);
      expect(compiled.variant('reads-properties', ctx as Context)).toEqual({ name: 'disabled', enabled: false, feature_enabled: false, featureEnabled: false });
      expect(compiled.isOn('reads-properties', ctx as Context)).toBe(false);
      expect(errors).toEqual(['reads-properties', 'reads-properties']);
      // The bound handle too.
      const handle = compiled.handle('reads-properties')!;
      expect(handle.variant(ctx as Context)).toEqual({ name: 'disabled', enabled: false, feature_enabled: false, featureEnabled: false });
      expect(handle.sharedVariant(ctx as Context)).toEqual({ name: 'disabled', enabled: false, feature_enabled: false, featureEnabled: false });
      expect(handle.isOn(ctx as Context)).toBe(false);
      expect(errors).toHaveLength(5);
      errors.length = 2;
      // With an ordinary properties object, both answer on with the toggle's variant.
      const plain = { appName: 'a', userId: 'u', properties: {} };
      expect(compiled.variant('reads-properties', plain as Context)).toEqual(ref.variantOf('reads-properties', plain));
      expect(compiled.variant('reads-properties', plain as Context).name).toBe('v');
    } finally {
      ref.destroy();
    }
  });
});

describe('compiled evaluator: the names each toggle reads', () => {
  it('lists what its rules look up (its parents\' too) in one frozen list per set of names', () => {
    const c = (contextName: string, operator: string, more: Record<string, unknown> = {}) => ({ contextName, operator, inverted: false, ...more });
    const s = (name: string, parameters: Record<string, unknown>, constraints: unknown[] = [], more: Record<string, unknown> = {}) => ({ name, parameters, constraints, ...more });
    const f = (name: string, strategies: unknown[], more: Record<string, unknown> = {}) => ({ name, enabled: true, strategies, ...more });
    const inRegion = [s('default', {}, [c('region', 'IN', { values: ['eu'] })])];
    const features = [
      f('region', inRegion),
      f('region-again', inRegion),
      // A date constraint reads `currentTime` at the top of the context, never from properties.
      f('dated', [s('default', {}, [c('currentTime', 'DATE_AFTER', { value: '2020-01-01T00:00:00.000Z' })])]),
      f('default-stickiness', [s('flexibleRollout', { rollout: '50', groupId: 'g' })]),
      f('sticky', [s('flexibleRollout', { rollout: '50', stickiness: 'tenant', groupId: 'g' })], {
        variants: [{ name: 'a', weight: 1, weightType: 'variable', stickiness: 'tier', overrides: [{ contextName: 'plan', values: ['pro'] }] }],
      }),
      f('strategy-variant', [s('default', {}, [], { variants: [{ name: 'b', weight: 1, weightType: 'variable', stickiness: 'seat' }] })]),
      f('segmented', [s('default', {}, [], { segments: [{ id: 1, constraints: [c('age', 'NUM_GT', { value: '18' })] }] })]),
      f('child', inRegion, { dependencies: [{ feature: 'sticky' }] }),
      f('users', [s('userWithId', { userIds: 'a,b' })]),
    ];
    const compiled = compileFlagSet(features as FeatureDefinition[], { customStrategyNames: new Set() });
    const reads = (name: string) => compiled.handle(name)?.reads;
    expect(Object.fromEntries(features.map(({ name }) => [name, reads(name)]))).toEqual({
      region: ['region'],
      'region-again': ['region'],
      dated: [],
      'default-stickiness': [],
      sticky: ['plan', 'tenant', 'tier'],
      'strategy-variant': ['seat'],
      segmented: ['age'],
      child: ['plan', 'region', 'tenant', 'tier'],
      // userWithId reads the top-level userId only.
      users: [],
    });
    expect(reads('region-again')).toBe(reads('region'));
    expect(reads('dated')).toBe(reads('users'));
    expect(features.every(({ name }) => Object.isFrozen(reads(name)))).toBe(true);
  });
});

describe('compiled evaluator: building blocks', () => {
  it('hashes as murmurhash3js does, over the low byte of each code unit', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.nat(40), fc.constantFrom(0, 86028157), (key, cut, seed) => {
        const want = murmurhash3js.x86.hash32(key, seed);
        const at = Math.min(cut, key.length);
        return murmur32(key, seed) === want && hashAfter(hashPrefix(key.slice(0, at), seed), key.slice(at)) === want;
      }),
      { numRuns: 1000 },
    );
  });

  it('parses and orders versions as the semver package does', () => {
    const versionish = fc.oneof(
      semverish,
      fc.string({ unit: fc.constantFrom(...'0123456789.-+vab xX'), maxLength: 14 }),
      fc.constantFrom('1.0.0-9007199254740993', '1.0.0-9007199254740992.a', '99999999999999999.0.0', '9007199254740991.0.0', '\u00a01.2.3\n', '1.2.3-'),
    );
    fc.assert(
      fc.property(versionish, versionish, (a, b) => {
        const pa = parseVersion(a);
        expect(pa !== null, a).toBe(semver.valid(a) !== null);
        const pb = parseVersion(b);
        if (pa !== null && pb !== null) expect(Math.sign(compareVersions(pa, pb)), `${a} vs ${b}`).toBe(semver.compare(a, b));
        const context = createContextVersionParser()(a);
        expect(context !== null, a).toBe(semver.valid(a) !== null && !a.startsWith('v'));
      }),
      { numRuns: 5000 },
    );
  });

  it('answers the same for a context version asked again, however many others came between', () => {
    const parse = createContextVersionParser();
    // More distinct versions than the parser keeps, each asked twice, far apart, some invalid.
    const values = Array.from({ length: 3000 }, (_, i) => (i % 7 === 0 ? `v${i}.0.0` : i % 11 === 0 ? `${i}.x` : `${i % 5}.${i}.${i % 13}`));
    for (const value of [...values, ...values.reverse()]) {
      const version = parse(value);
      expect(version !== null, value).toBe(semver.valid(value) !== null && !value.startsWith('v'));
      if (version !== null) expect(Math.sign(compareVersions(version, parseVersion(value)!)), value).toBe(0);
    }
  });

  it('reads plain IPv4 addresses as ip-address does', () => {
    const ipish = fc.oneof(
      fc.tuple(fc.nat(300), fc.nat(300), fc.nat(300), fc.nat(300)).map((p) => p.join('.')),
      fc.string({ unit: fc.constantFrom(...'0123456789./ abcdef%[]'), maxLength: 16 }),
    );
    fc.assert(
      fc.property(ipish, (s) => {
        const valid = !s.includes('/') && Address4.isValid(s);
        const value = plainIPv4(s);
        expect(value >= 0, s).toBe(valid);
        if (valid) expect(value).toBe(Number(new Address4(s).bigInt()));
        // The IN_CIDR check asks ip-address about IPv6 only for values with a colon.
        if (!s.includes(':')) expect(Address6.isValid(s), s).toBe(false);
      }),
      { numRuns: 5000 },
    );
  });
});
