/**
 * Flag definitions as a test writes them: operators as plain strings (`'IN'`, `'STR_CONTAINS'`),
 * and nothing that is empty. The test flag server fills in the rest, so what it serves has the
 * full shape a flag server sends (`parameters`, `constraints`, `values`, `inverted`, weights).
 */
import type { FeatureDefinition } from '../evaluation/types.js';
import { isJsonObject as isObject } from '../plain-objects.js';

/** A constraint operator, as the flag server writes it. */
export type TestOperator =
  | 'IN'
  | 'NOT_IN'
  | 'STR_STARTS_WITH'
  | 'STR_ENDS_WITH'
  | 'STR_CONTAINS'
  | 'NUM_EQ'
  | 'NUM_GT'
  | 'NUM_GTE'
  | 'NUM_LT'
  | 'NUM_LTE'
  | 'DATE_AFTER'
  | 'DATE_BEFORE'
  | 'SEMVER_EQ'
  | 'SEMVER_GT'
  | 'SEMVER_GTE'
  | 'SEMVER_LT'
  | 'SEMVER_LTE'
  | 'REGEX'
  | 'IN_CIDR';

/** A constraint: `{ contextName: 'userId', operator: 'IN', values: ['alice'] }`. */
export interface TestConstraint {
  /** The context field, e.g. `userId` or a custom property name. */
  contextName: string;
  operator: TestOperator;
  /** The values of list operators (`IN`, `STR_CONTAINS`, `IN_CIDR`, …). @default [] */
  values?: string[];
  /** The single value of number, date, semver and regex operators. */
  value?: string | number | Date;
  /** Negates the result. @default false */
  inverted?: boolean;
  /** String operators ignore case. @default false */
  caseInsensitive?: boolean;
}

/** A variant of a flag or of a strategy. */
export interface TestVariant {
  name: string;
  /** Out of 1000. @default an equal share of what the variants with a weight leave */
  weight?: number;
  /** The context field that keeps a user on one variant. @default 'default' */
  stickiness?: string;
  payload?: { type: 'string' | 'json' | 'csv' | 'number'; value: string };
  /** Context values that always get this variant. */
  overrides?: Array<{ contextName: string; values: string[] }>;
}

/** An activation strategy: `{ name: 'flexibleRollout', parameters: { rollout: '50' } }`. */
export interface TestStrategy {
  /** `default`, `userWithId`, `flexibleRollout`, `remoteAddress`, … or a custom strategy's name. */
  name: string;
  /** @default {} */
  parameters?: Record<string, unknown>;
  /** @default [] */
  constraints?: TestConstraint[];
  /** Ids of segments whose constraints apply too. */
  segments?: number[];
  /** Variants this strategy assigns when it matches. */
  variants?: TestVariant[];
}

/** A flag as a test defines it. */
export interface TestFlag {
  name: string;
  /** @default true */
  enabled?: boolean;
  /** @default [{ name: 'default' }]: on for everyone (while `enabled`) */
  strategies?: TestStrategy[];
  variants?: TestVariant[];
  /** @default 'default' */
  project?: string;
  type?: string;
  description?: string;
  stale?: boolean;
  impressionData?: boolean;
  /** Parent flags that must be on (or off, with `enabled: false`) for this one to be on. */
  dependencies?: Array<{ feature: string; enabled?: boolean; variants?: string[] }>;
  /** Tags, matched by the features endpoint's `tag=type:value` filter. */
  tags?: Array<{ type: string; value: string }>;
}

/** A segment: constraints shared by strategies that name its `id`. */
export interface TestSegment {
  id: number;
  constraints: TestConstraint[];
}

/**
 * A flag definition, on for everyone unless told otherwise.
 *
 * @example
 * ```ts
 * flag('new-checkout')                                      // on for everyone
 * flag('beta', { enabled: false })                          // off
 * flag('for-alice', { strategies: [{ name: 'default', constraints: [{ contextName: 'userId', operator: 'IN', values: ['alice'] }] }] })
 * ```
 */
export function flag(name: string, definition: Omit<TestFlag, 'name'> = {}): TestFlag {
  return { name, ...definition };
}

/** Gives variants without a weight an equal share of what the others leave of 1000. */
function withWeights(variants: unknown): unknown {
  if (!Array.isArray(variants)) return variants;
  const unweighted = variants.filter((v) => isObject(v) && v.weight === undefined).length;
  if (unweighted === 0) return variants;
  const taken = variants.reduce<number>((sum, v) => sum + (isObject(v) && typeof v.weight === 'number' ? v.weight : 0), 0);
  const share = Math.max(0, Math.floor((1000 - taken) / unweighted));
  return variants.map((v) => (isObject(v) && v.weight === undefined ? { ...v, weight: share } : v));
}

function fullConstraint(constraint: unknown): unknown {
  if (!isObject(constraint)) return constraint;
  return { ...constraint, values: constraint.values ?? [], inverted: constraint.inverted ?? false };
}

function fullStrategy(strategy: unknown): unknown {
  if (!isObject(strategy)) return strategy;
  const constraints = strategy.constraints ?? [];
  return {
    ...strategy,
    parameters: strategy.parameters ?? {},
    constraints: Array.isArray(constraints) ? constraints.map(fullConstraint) : constraints,
    ...(strategy.variants === undefined ? {} : { variants: withWeights(strategy.variants) }),
  };
}

/**
 * The definition the server stores and serves: present fields are kept as given (a test may send
 * a malformed one on purpose), missing ones get their defaults.
 */
export function fullFlag(definition: TestFlag): FeatureDefinition {
  const strategies: unknown = definition.strategies ?? [{ name: 'default' }];
  return {
    ...definition,
    enabled: definition.enabled ?? true,
    strategies: Array.isArray(strategies) ? strategies.map(fullStrategy) : strategies,
    ...(definition.variants === undefined ? {} : { variants: withWeights(definition.variants) }),
  } as FeatureDefinition;
}

/** A segment with its constraints in full. */
export function fullSegment(segment: TestSegment): TestSegment {
  return Array.isArray(segment.constraints) ? { ...segment, constraints: segment.constraints.map(fullConstraint) as TestConstraint[] } : segment;
}
