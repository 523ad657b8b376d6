/**
 * unleash-client's built-in activation strategies compiled to closures: constraints (the
 * strategy's own, then its segments'), the strategy's own test, then its variants. Parameters are
 * parsed once; what unleash-client reads from the context is read in the same order, so a context
 * value that makes it throw makes the closure throw at the same point. `||` is used where
 * unleash-client uses it: there, an empty string (or 0) counts as missing.
 */
import { compileRemoteAddress } from './address.js';
import { compileConstraint, type ConstraintEnv } from './constraints.js';
import { hashAfter, hashPrefix, murmur32, STRATEGY_SEED, type HashPrefix } from './hash.js';
import { exactList, field, isReadable, lookupOf, NotCompilable, templateString, type Check, type Ctx } from './shared.js';
import { compileVariants, type VariantPick, type VariantSelector } from './variants.js';
import { defaultStrategyNames } from '../strategies.js';

/** A strategy's answer: off, on, or on with the strategy variant picked. */
export type StrategyOutcome = boolean | VariantPick;

/** One compiled strategy. Throws where unleash-client throws. */
export type CompiledStrategy = (context: Ctx) => StrategyOutcome;

/** What compiling strategies needs besides the definition. */
export interface StrategyEnv extends ConstraintEnv {
  /** Names of user-supplied strategies: they shadow built-in ones, and are never compiled. */
  customStrategyNames: ReadonlySet<string>;
  /** The lowercased host name applicationHostname compares with, if known. */
  hostname: string | undefined;
}

const BUILT_IN: ReadonlySet<string> = new Set(defaultStrategyNames);

/** A strategy with no constraint, segment, own test or variant: on for every context. */
const ALWAYS = (): boolean => true;

/** flexibleRollout's random stickiness value. */
const randomRolloutId = (): string => `${Math.round(Math.random() * 10000) + 1}`;

/** flexibleRollout's default stickiness: userId, else sessionId, else a random id. */
const defaultRolloutId = (ctx: Ctx): unknown => ctx.userId || ctx.sessionId || randomRolloutId();

/**
 * Whether the id a rollout read is in: a falsy id is out; otherwise `percentage > 0 &&
 * (hash(`${groupId}:${id}`) % 100) + 1 <= percentage`, with the key always built (it may throw)
 * and the hash skipped when the percentage alone decides. A plain function over the strategy's
 * numbers: a closure per check (and one per hash) took about twice the memory, and were two more
 * objects to reach on every evaluation.
 */
function inRollout(id: unknown, hash: HashPrefix, percentage: number): boolean {
  if (!id) return false;
  const key = templateString(id);
  if (!(percentage > 0)) return false;
  if (percentage >= 100) return true;
  return (hashAfter(hash, key) % 100) + 1 <= percentage;
}

/** The hash state after `${groupId}:`, as rollouts hash their ids. */
const rolloutHash = (groupId: unknown): HashPrefix => hashPrefix(`${templateString(groupId)}:`, STRATEGY_SEED);

/** A string parameter: absent when falsy; anything else truthy makes unleash-client throw (`.split` of a non-string). */
function stringParameter(parameters: unknown, name: string, strategy: string): string | undefined {
  const value = field(parameters, name);
  if (!value) return undefined;
  if (typeof value !== 'string') throw new NotCompilable(`${strategy} with a non-string ${name}`);
  return value;
}

function compileFlexibleRollout(parameters: unknown, fieldReader: ConstraintEnv['fieldReader']): Check {
  const percentage = Number(field(parameters, 'rollout'));
  const stickiness = field(parameters, 'stickiness') || 'default';
  if (typeof stickiness !== 'string') throw new NotCompilable('flexibleRollout with a non-string stickiness');
  const groupId = field(parameters, 'groupId');
  if (groupId) {
    const hash = rolloutHash(groupId);
    if (stickiness === 'default') return (ctx) => inRollout(defaultRolloutId(ctx), hash, percentage);
    if (stickiness === 'random') return () => inRollout(randomRolloutId(), hash, percentage);
    const read = fieldReader(stickiness);
    return (ctx) => inRollout(read(ctx), hash, percentage);
  }
  const readId: (ctx: Ctx) => unknown = stickiness === 'default' ? defaultRolloutId : stickiness === 'random' ? randomRolloutId : fieldReader(stickiness);
  // Without a groupId, unleash-client 6 takes the context's `featureToggle` field (not the toggle's name).
  return (ctx) => {
    const group = ctx.featureToggle || '';
    const id = readId(ctx);
    if (!id) return false;
    const key = `${templateString(group)}:${templateString(id)}`;
    return percentage > 0 && (murmur32(key, STRATEGY_SEED) % 100) + 1 <= percentage;
  };
}

function compileGradualRollout(parameters: unknown, idField: 'userId' | 'sessionId'): Check {
  const hash = rolloutHash(field(parameters, 'groupId') || '');
  const percentage = Number(field(parameters, 'percentage'));
  return (ctx) => inRollout(ctx[idField], hash, percentage);
}

/** The strategy's own test (after its constraints), or undefined when it is always true. */
function compileTest(name: string, parameters: unknown, env: StrategyEnv): Check | undefined {
  switch (name) {
    case 'default':
      return undefined;
    case 'flexibleRollout':
      return compileFlexibleRollout(parameters, env.fieldReader);
    case 'gradualRolloutUserId':
      return compileGradualRollout(parameters, 'userId');
    case 'gradualRolloutSessionId':
      return compileGradualRollout(parameters, 'sessionId');
    case 'gradualRolloutRandom': {
      const percentage = Number(field(parameters, 'percentage'));
      return () => percentage >= Math.floor(Math.random() * 100) + 1;
    }
    case 'userWithId': {
      const list = stringParameter(parameters, 'userIds', name);
      const ids = lookupOf(list === undefined ? [] : list.split(/\s*,\s*/));
      // Strict equality: a userId that is not a string matches nothing.
      if (ids instanceof Set) return (ctx) => ids.has(ctx.userId);
      const few = ids as readonly unknown[];
      return (ctx) => few.includes(ctx.userId);
    }
    case 'remoteAddress': {
      const ips = stringParameter(parameters, 'IPs', name);
      if (ips === undefined) return () => false;
      const matches = compileRemoteAddress(ips);
      return (ctx) => matches(ctx.remoteAddress);
    }
    case 'applicationHostname': {
      const hostNames = stringParameter(parameters, 'hostNames', name);
      if (hostNames === undefined) return () => false;
      if (env.hostname === undefined) throw new NotCompilable('applicationHostname without a known host name');
      const on = hostNames.toLowerCase().split(/\s*,\s*/).includes(env.hostname);
      return () => on;
    }
    default:
      throw new NotCompilable(`unknown strategy ${name}`);
  }
}

/** The constraints a strategy is checked against: its own, then each segment's (a missing segment fails closed). */
function compileChecks(strategy: unknown, env: StrategyEnv): Check[] {
  const checks: Check[] = [];
  const constraints = field(strategy, 'constraints');
  if (constraints) {
    if (!Array.isArray(constraints)) throw new NotCompilable('strategy constraints that are not a list');
    for (const constraint of constraints) checks.push(compileConstraint(constraint, env));
  }
  const segments = field(strategy, 'segments');
  if (segments === undefined || segments === null) return checks;
  if (!Array.isArray(segments)) throw new NotCompilable('strategy segments that are not a list');
  for (const segment of segments) {
    if (!segment) {
      checks.push(() => false);
      continue;
    }
    // Definitions must carry segments themselves (getFeatureToggleDefinitions(true)), not their ids.
    if (typeof segment !== 'object') throw new NotCompilable('strategy segment given by id, not resolved');
    const list = field(segment, 'constraints') ?? [];
    if (!Array.isArray(list)) throw new NotCompilable('segment constraints that are not a list');
    for (const constraint of list) checks.push(compileConstraint(constraint, env));
  }
  return checks;
}

/** One strategy of a toggle. */
export function compileStrategy(strategy: unknown, env: StrategyEnv): CompiledStrategy {
  if (!isReadable(strategy)) throw new NotCompilable('strategy that is not an object');
  const name = field(strategy, 'name');
  if (typeof name === 'string' && env.customStrategyNames.has(name)) throw new NotCompilable(`custom strategy ${name}`);
  if (typeof name !== 'string' || !BUILT_IN.has(name)) throw new NotCompilable(`unknown strategy ${String(name)}`);

  const parameters = field(strategy, 'parameters');
  const variantList = field(strategy, 'variants');
  const variants = Array.isArray(variantList) && variantList.length > 0 ? variantList : undefined;
  // Every built-in but `default` reads its parameters, and strategy variants read `groupId` and `stickiness`.
  if ((name !== 'default' || variants !== undefined) && !isReadable(parameters)) {
    throw new NotCompilable(`${name} strategy without parameters`);
  }
  const checks = exactList(compileChecks(strategy, env));
  const test = compileTest(name, parameters, env);
  let select: VariantSelector | undefined;
  if (variants !== undefined) {
    if (!isReadable(variants[0])) throw new NotCompilable('strategy variant that is not an object');
    const stickiness = field(variants[0], 'stickiness') || field(parameters, 'stickiness');
    select = compileVariants(field(parameters, 'groupId'), stickiness, variants, env.fieldReader);
  }

  if (checks.length === 0 && select === undefined) return test ?? ALWAYS;
  // One constraint and the strategy's own test, the commonest kind: no list to walk.
  if (checks.length === 1 && select === undefined && test !== undefined) {
    const only = checks[0] as Check;
    return (ctx) => only(ctx) && test(ctx);
  }
  return (ctx) => {
    for (let i = 0; i < checks.length; i += 1) if (!(checks[i] as Check)(ctx)) return false;
    if (test !== undefined && !test(ctx)) return false;
    if (select === undefined) return true;
    return select(ctx) ?? true;
  };
}
