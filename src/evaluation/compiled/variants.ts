/**
 * Variant selection as unleash-client does it (`selectVariantDefinition`): overrides first, then
 * the weighted pick by the hash of `${groupId}:${stickiness value}` (variant seed), with the weight
 * table, the overrides' value Sets and the hash prefix computed once. `||` where unleash-client
 * uses it: an empty stickiness value counts as missing there.
 */
import { hashAfter, hashPrefix, VARIANT_SEED } from './hash.js';
import { exactList, field, fieldReader, isReadable, lookupHas, lookupOf, NotCompilable, templateString, type Ctx, type FieldReader, type Lookup } from './shared.js';

/** A variant definition as selected: only its name and payload reach the answer. */
export interface VariantPick {
  readonly name: unknown;
  readonly payload: unknown;
}

/** Picks a variant for a context, or null; throws where unleash-client throws. */
export type VariantSelector = (context: Ctx) => VariantPick | null;

interface OverrideRule {
  read: FieldReader;
  /** Whether the override lists any value: only then is the field read. */
  reads: boolean;
  values: Lookup;
}

/** unleash-client's random seed when the stickiness field is missing. */
export function randomSeed(): string {
  return String(Math.round(Math.random() * 100000));
}

const STICKY_DEFAULTS = ['userId', 'sessionId', 'remoteAddress'] as const;

/** The seed for the default stickiness: the first of userId, sessionId, remoteAddress that is a non-empty string. */
function defaultSeed(ctx: Ctx): string {
  for (const key of STICKY_DEFAULTS) {
    const value = ctx[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  return randomSeed();
}

/**
 * Compiles a variant list. `groupId` is used as is in the hash key (unleash-client writes
 * `${groupId}:`, so a missing one hashes as "undefined"); `stickiness` is the effective one
 * (`undefined` for the default); `readerOf` gives the reader of a context field (the compiler's
 * shared ones).
 */
export function compileVariants(
  groupId: unknown,
  stickiness: unknown,
  variants: readonly unknown[],
  readerOf: (key: string) => FieldReader = fieldReader,
): VariantSelector {
  let total = 0;
  for (const variant of variants) {
    if (!isReadable(variant)) throw new NotCompilable('variant that is not an object');
    const weight = field(variant, 'weight');
    // Weights are summed with `+`: a string would concatenate, a missing one give NaN.
    if (typeof weight !== 'number' || !Number.isFinite(weight)) throw new NotCompilable('variant weight that is not a number');
    total += weight;
  }
  if (!(total > 0)) return () => null;

  const overrideList: Array<{ pick: VariantPick; rules: OverrideRule[] }> = [];
  for (const variant of variants) {
    const list = field(variant, 'overrides');
    if (!list) continue;
    if (!Array.isArray(list)) throw new NotCompilable('variant overrides that are not a list');
    const rules = list.map((override): OverrideRule => {
      const values = field(override, 'values');
      if (!isReadable(override) || !Array.isArray(values)) throw new NotCompilable('variant override without a values list');
      return { read: readerOf(String(field(override, 'contextName'))), reads: values.length > 0, values: lookupOf(values) };
    });
    overrideList.push({ pick: variant as VariantPick, rules });
  }
  const overrides = exactList(overrideList);

  // The field a custom stickiness reads (a missing value picks at random); undefined for the default.
  let readSeed: FieldReader | undefined;
  if (stickiness !== undefined && stickiness !== 'default') {
    if (typeof stickiness !== 'string') throw new NotCompilable('variant stickiness that is not a string');
    readSeed = readerOf(stickiness);
  }

  const cumulativeList: number[] = [];
  const pickList: VariantPick[] = [];
  let counter = 0;
  for (const variant of variants) {
    const weight = field(variant, 'weight') as number;
    if (weight === 0) continue;
    counter += weight;
    cumulativeList.push(counter);
    pickList.push(variant as VariantPick);
  }
  const cumulative = exactList(cumulativeList);
  const picks = exactList(pickList);
  const hash = hashPrefix(`${templateString(groupId)}:`, VARIANT_SEED);

  return (ctx) => {
    for (const { pick, rules } of overrides) {
      for (const rule of rules) {
        if (rule.reads && lookupHas(rule.values, rule.read(ctx))) return pick;
      }
    }
    const seed = readSeed === undefined ? defaultSeed(ctx) : readSeed(ctx) || randomSeed();
    const target = (hashAfter(hash, seed) % total) + 1;
    for (let i = 0; i < cumulative.length; i += 1) {
      if (!((cumulative[i] as number) < target)) return picks[i] as VariantPick;
    }
    return null;
  };
}
