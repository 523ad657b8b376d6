/**
 * The benchmark's flag set and evaluation contexts. Everything is generated from a seeded PRNG, so
 * every run, every round and every target sees exactly the same flags and the same sequence of
 * contexts.
 *
 * The mix aims at what a mid-sized Unleash project looks like: mostly gradual rollouts and plain
 * on/off flags, user lists, a few IP-bound flags, constraints of every common operator family,
 * shared segments, A/B variants with payloads (feature-level and strategy-level), a few dependent
 * flags, and some disabled flags.
 */
import type { FeatureDefinition } from '../src/index.js';
import type { TestFlag, TestOperator, TestSegment } from '../src/testing/index.js';

/** The client key every target accepts. */
export const CLIENT_KEY = 'bench-client-key';
/** The app name every target reports upstream and uses when a caller sends none. */
export const APP_NAME = 'bench';
/** The token the runner's in-memory upstream accepts from every target. */
export const UPSTREAM_TOKEN = 'bench-upstream-token';

/** mulberry32: small, fast, deterministic (also the seeded generator of the tests' corpora). */
export function createRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Random = () => number;
const pick = <T>(rnd: Random, list: readonly T[]): T => list[Math.floor(rnd() * list.length)] as T;
const between = (rnd: Random, min: number, max: number): number => min + Math.floor(rnd() * (max - min + 1));

const AREAS = ['checkout', 'search', 'onboarding', 'billing', 'profile', 'feed', 'payments', 'notifications', 'analytics', 'support', 'catalog', 'inbox'];
const TOPICS = ['redesign', 'experiment', 'rollout', 'banner', 'kill-switch', 'beta', 'migration', 'dark-mode', 'recommendations', 'rate-limits', 'new-flow', 'cache'];
const TYPES = ['release', 'release', 'release', 'experiment', 'operational', 'kill-switch', 'permission'];
const REGIONS = ['eu', 'us', 'apac', 'latam', 'mea'];
const PLANS = ['free', 'pro', 'enterprise'];
const DOMAINS = ['example.com', 'corp.example', 'mail.example.org', 'customer.example.net'];
const STICKINESS = ['default', 'userId', 'sessionId'];
const ROLLOUTS = [0, 5, 10, 25, 33, 50, 75, 90, 100];

/** Properties every generated context carries (names match the constraints below). */
export interface BenchContext {
  userId: string;
  sessionId: string;
  appName: string;
  environment: string;
  properties: Record<string, string>;
}

type Constraint = {
  contextName: string;
  operator: TestOperator;
  values?: string[];
  value?: string;
  inverted: boolean;
  caseInsensitive: boolean;
};

const userIdOf = (n: number): string => `user-${n}`;
const tenantOf = (n: number): string => `tenant-${n % 60}`;

/** One random constraint from the operator families the Unleash UI offers. */
function constraint(rnd: Random): Constraint {
  const base = { inverted: false, caseInsensitive: false };
  switch (between(rnd, 0, 9)) {
    case 0:
      return { ...base, contextName: 'tenantId', operator: 'IN', values: Array.from({ length: between(rnd, 3, 15) }, () => tenantOf(between(rnd, 0, 59))) };
    case 1:
      return { ...base, contextName: 'region', operator: rnd() < 0.7 ? 'IN' : 'NOT_IN', values: [pick(rnd, REGIONS), pick(rnd, REGIONS)] };
    case 2:
      return { ...base, contextName: 'email', operator: 'STR_CONTAINS', values: [`@${pick(rnd, DOMAINS)}`], caseInsensitive: rnd() < 0.5 };
    case 3:
      return { ...base, contextName: 'email', operator: 'STR_ENDS_WITH', values: [`.${pick(rnd, ['com', 'org', 'net', 'example'])}`] };
    case 4:
      return { ...base, contextName: 'age', operator: rnd() < 0.6 ? 'NUM_GT' : 'NUM_LTE', value: String(between(rnd, 20, 60)) };
    case 5:
      // Fixed dates, far from today, so the answer does not change while the bench runs.
      return rnd() < 0.7
        ? { ...base, contextName: 'currentTime', operator: 'DATE_AFTER', value: '2024-01-01T00:00:00.000Z' }
        : { ...base, contextName: 'currentTime', operator: 'DATE_BEFORE', value: '2020-06-01T00:00:00.000Z', inverted: true };
    case 6:
      return { ...base, contextName: 'appVersion', operator: pick(rnd, ['SEMVER_GT', 'SEMVER_GTE', 'SEMVER_LT', 'SEMVER_EQ']), value: `${between(rnd, 1, 3)}.${between(rnd, 0, 9)}.0` };
    case 7:
      return { ...base, contextName: 'plan', operator: 'IN', values: rnd() < 0.5 ? ['pro', 'enterprise'] : ['enterprise'] };
    case 8:
      return { ...base, contextName: 'environment', operator: 'IN', values: ['production', 'staging'] };
    default:
      return { ...base, contextName: 'userId', operator: 'STR_STARTS_WITH', values: [`user-${between(rnd, 1, 9)}`] };
  }
}

function payload(rnd: Random, i: number): { type: string; value: string } {
  switch (between(rnd, 0, 3)) {
    case 0:
      return { type: 'string', value: `Try the new ${pick(rnd, TOPICS)} today` };
    case 1:
      return {
        type: 'json',
        value: JSON.stringify({ color: pick(rnd, ['#1f6feb', '#d1242f', '#1a7f37']), size: between(rnd, 8, 24), labels: ['a', 'b', String(i)], enabledAt: '2025-03-01' }),
      };
    case 2:
      return { type: 'number', value: String(between(rnd, 1, 500)) };
    default:
      return { type: 'csv', value: 'alpha,beta,gamma' };
  }
}

function variants(rnd: Random, i: number): Array<Record<string, unknown>> {
  const count = between(rnd, 2, 4);
  const stickiness = pick(rnd, ['default', 'userId']);
  const names = ['control', 'treatment-a', 'treatment-b', 'treatment-c'];
  return names.slice(0, count).map((name, v) => ({
    name,
    weight: v === 0 ? 1000 - Math.floor(1000 / count) * (count - 1) : Math.floor(1000 / count),
    weightType: 'variable',
    stickiness,
    payload: payload(rnd, i),
    // A few overrides, as older projects still carry them.
    ...(v === 1 && rnd() < 0.2 ? { overrides: [{ contextName: 'userId', values: [userIdOf(between(rnd, 0, 20)), userIdOf(between(rnd, 0, 20))] }] } : {}),
  }));
}

/** A gradual rollout strategy. */
function rollout(rnd: Random, name: string, constraints: Constraint[] = []): Record<string, unknown> {
  return {
    name: 'flexibleRollout',
    parameters: { rollout: String(pick(rnd, ROLLOUTS)), stickiness: pick(rnd, STICKINESS), groupId: name },
    constraints,
  };
}

/** The flags and segments for a project of `count` flags. */
export function generateFlags(count: number): { features: FeatureDefinition[]; segments: TestSegment[] } {
  const rnd = createRandom(0x5eed + count);
  const segments: TestSegment[] = Array.from({ length: 12 }, (_, id) => ({
    id: id + 1,
    constraints: Array.from({ length: between(rnd, 1, 3) }, () => constraint(rnd)),
  }));
  const features: Array<Record<string, unknown>> = [];
  const roots: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = `${pick(rnd, AREAS)}-${pick(rnd, TOPICS)}-${String(i).padStart(4, '0')}`;
    const roll = rnd();
    let strategies: Array<Record<string, unknown>>;
    if (roll < 0.15) {
      strategies = [{ name: 'default', parameters: {}, constraints: [] }];
    } else if (roll < 0.45) {
      strategies = [rollout(rnd, name, rnd() < 0.3 ? [constraint(rnd)] : [])];
    } else if (roll < 0.55) {
      const ids = Array.from({ length: between(rnd, 5, 30) }, () => userIdOf(between(rnd, 0, 400)));
      strategies = [{ name: 'userWithId', parameters: { userIds: ids.join(',') }, constraints: [] }];
    } else if (roll < 0.6) {
      const ips = rnd() < 0.5 ? '10.1.2.3, 127.0.0.1' : '192.168.0.0/16, 10.0.0.0/8';
      strategies = [{ name: 'remoteAddress', parameters: { IPs: ips }, constraints: [] }];
    } else if (roll < 0.8) {
      const constraints = Array.from({ length: between(rnd, 1, 3) }, () => constraint(rnd));
      strategies = [rnd() < 0.5 ? { name: 'default', parameters: {}, constraints } : rollout(rnd, name, constraints)];
    } else if (roll < 0.9) {
      strategies = [{ ...rollout(rnd, name, rnd() < 0.4 ? [constraint(rnd)] : []), segments: [between(rnd, 1, segments.length)] }];
    } else {
      const ids = Array.from({ length: between(rnd, 3, 10) }, () => userIdOf(between(rnd, 0, 400)));
      strategies = [
        { name: 'userWithId', parameters: { userIds: ids.join(',') }, constraints: [] },
        rollout(rnd, name, [constraint(rnd)]),
        { name: 'default', parameters: {}, constraints: [constraint(rnd), constraint(rnd)] },
      ];
    }
    // Strategy-level variants on some rollouts (the modern way of running an A/B test).
    const first = strategies[0];
    if (first && first.name === 'flexibleRollout' && rnd() < 0.15) first.variants = variants(rnd, i);
    const feature: Record<string, unknown> = {
      name,
      type: pick(rnd, TYPES),
      description: `Controls the ${name.replace(/-/g, ' ')} behaviour`,
      project: 'default',
      enabled: rnd() >= 0.12,
      stale: rnd() < 0.05,
      impressionData: rnd() < 0.1,
      strategies,
      variants: rnd() < 0.35 ? variants(rnd, i) : [],
    };
    if (roots.length > 10 && rnd() < 0.03) {
      feature.dependencies = [{ feature: pick(rnd, roots), ...(rnd() < 0.3 ? { enabled: false } : {}) }];
    } else {
      roots.push(name);
    }
    features.push(feature);
  }
  // The generated objects follow the client API's JSON, whose enums the SDK types as TS enums.
  return { features: features as unknown as FeatureDefinition[], segments: segments as unknown as TestSegment[] };
}

/** The context of caller number `n` (what a browser SDK would send for one user). */
export function contextFor(n: number): BenchContext {
  return {
    userId: userIdOf(n % 100_000),
    sessionId: String(1_000_000_000 + n),
    appName: 'web',
    environment: 'production',
    properties: {
      tenantId: tenantOf(n),
      region: REGIONS[n % REGIONS.length] as string,
      plan: PLANS[n % PLANS.length] as string,
      email: `${userIdOf(n)}@${DOMAINS[n % DOMAINS.length] as string}`,
      age: String(18 + (n % 60)),
      appVersion: `${1 + (n % 3)}.${n % 10}.${n % 7}`,
    },
  };
}

/** The query string a browser SDK builds for a context (`properties[name]=value`). */
export function queryFor(context: BenchContext): string {
  const params = new URLSearchParams();
  params.append('userId', context.userId);
  params.append('sessionId', context.sessionId);
  params.append('appName', context.appName);
  params.append('environment', context.environment);
  for (const [key, value] of Object.entries(context.properties)) params.append(`properties[${key}]`, value);
  return params.toString();
}

/** The name in {@link namedToggles} that no flag has. */
export const UNKNOWN_TOGGLE = 'no-such-toggle';

/** Ten names for `POST /proxy` with `toggles`: enabled, disabled, with variants, and one unknown. */
export function namedToggles(features: FeatureDefinition[]): string[] {
  const names: string[] = [];
  const withVariants = features.filter((f) => (f.variants ?? []).length > 0 && f.enabled);
  const disabled = features.filter((f) => !f.enabled);
  const plain = features.filter((f) => f.enabled && (f.variants ?? []).length === 0);
  names.push(...withVariants.slice(0, 3).map((f) => f.name));
  names.push(...disabled.slice(0, 1).map((f) => f.name));
  for (const f of plain) {
    if (names.length >= 9) break;
    names.push(f.name);
  }
  names.push(UNKNOWN_TOGGLE);
  return names;
}

/**
 * The flag `poll-scheduled` adds for its windows: on for everyone until `until` (a promotion that
 * ends tomorrow, say), so every answer holds only until that instant.
 */
export const SCHEDULED_FLAG = 'bench-scheduled-end';

export function scheduledFlag(until: number): TestFlag {
  return { name: SCHEDULED_FLAG, strategies: [{ name: 'default', constraints: [{ contextName: 'currentTime', operator: 'DATE_BEFORE', value: new Date(until) }] }] };
}

/** The user of the context the runner asks for to see that a target adopted a change (bench/verify.ts): no scenario's client is this user. */
export const ADOPTION_USER = 'bench-adoption-check';

/**
 * The flag `poll-after-change` adds after priming: on only for `user` (the runner's adoption
 * check), so that no polling client's answer changes while the flag set does.
 */
export const UNRELATED_FLAG = 'bench-unrelated-change';

export function unrelatedFlag(user: string): TestFlag {
  return { name: UNRELATED_FLAG, strategies: [{ name: 'userWithId', parameters: { userIds: user } }] };
}
