/**
 * Constraints compiled to checks, with unleash-client's operator semantics: everything a
 * constraint fixes (cleaned value lists as Sets, lowercased strings, numbers, instants, versions,
 * regular expressions, CIDR ranges) is computed once, the context side per call.
 */
import type { RE2JS } from 're2js';
import { loadOnDemand } from '../../load-on-demand.js';
import { compileCidr } from './address.js';
import { compareVersions, parseVersion, type Version } from './semver.js';
import { createFieldReaders, exactList, field, lookupOf, NotCompilable, type Check, type Ctx, type FieldReader } from './shared.js';

/** Per flag set state the checks share (caches of the last value parsed). */
export interface ConstraintEnv {
  /** The reader of a context field (see {@link createFieldReaders}: one per key, shared). */
  fieldReader(key: string): FieldReader;
  /** A context version, or null when SEMVER_* operators reject it. */
  contextVersion(value: string): Version | null;
  /** The instant DATE_* operators compare: `currentTime` when truthy, else now. */
  currentTime(context: Ctx): number;
}

const FALSE: Check = () => false;

/**
 * unleash-client's `cleanValues`: drops falsy entries and trims the rest. A non-array, or an entry
 * that is not a string, makes unleash-client throw when the constraint is reached: not compiled.
 */
function cleanValues(values: unknown, operator: string): string[] {
  if (!Array.isArray(values)) throw new NotCompilable(`${operator} constraint without a values list`);
  const cleaned: string[] = [];
  for (const value of values) {
    if (!value) continue;
    if (typeof value !== 'string') throw new NotCompilable(`${operator} constraint with a non-string value`);
    cleaned.push(value.trim());
  }
  return exactList(cleaned);
}

function compileIn(read: FieldReader, values: string[], negate: boolean): Check {
  if (values.length === 1) {
    const only = values[0];
    return negate ? (ctx) => read(ctx) !== only : (ctx) => read(ctx) === only;
  }
  // One closure per shape rather than lookupHas's test on every call: this is the hottest check.
  const lookup = lookupOf(values);
  if (lookup instanceof Set) return negate ? (ctx) => !lookup.has(read(ctx)) : (ctx) => lookup.has(read(ctx));
  const list = lookup as readonly unknown[];
  return negate ? (ctx) => !list.includes(read(ctx)) : (ctx) => list.includes(read(ctx));
}

function compileString(readField: FieldReader, operator: string, values: string[], caseInsensitive: boolean): Check {
  // toLocaleLowerCase, as unleash-client: the same process locale on both sides.
  const wanted = caseInsensitive ? values.map((v) => v.toLocaleLowerCase()) : values;
  const read = caseInsensitive ? (ctx: Ctx): string | undefined => readField(ctx)?.toLocaleLowerCase() : readField;
  switch (operator) {
    case 'STR_STARTS_WITH':
      return (ctx) => {
        const value = read(ctx);
        if (typeof value !== 'string') return false;
        for (const w of wanted) if (value.startsWith(w)) return true;
        return false;
      };
    case 'STR_ENDS_WITH':
      return (ctx) => {
        const value = read(ctx);
        if (typeof value !== 'string') return false;
        for (const w of wanted) if (value.endsWith(w)) return true;
        return false;
      };
    default:
      return (ctx) => {
        const value = read(ctx);
        if (typeof value !== 'string') return false;
        for (const w of wanted) if (value.includes(w)) return true;
        return false;
      };
  }
}

function compileNumber(read: FieldReader, operator: string, raw: unknown): Check {
  const limit = Number(raw);
  const compare: (n: number) => boolean =
    operator === 'NUM_EQ'
      ? (n) => n === limit
      : operator === 'NUM_GT'
        ? (n) => n > limit
        : operator === 'NUM_GTE'
          ? (n) => n >= limit
          : operator === 'NUM_LT'
            ? (n) => n < limit
            : (n) => n <= limit;
  // NaN compares false either way; the field is still read (reading may throw).
  return (ctx) => compare(Number(read(ctx)));
}

function compileDate(operator: string, raw: unknown, env: ConstraintEnv): Check {
  // unleash-client compares with `currentTime` whatever the constraint's contextName.
  const at = new Date(raw as string).getTime();
  return operator === 'DATE_AFTER' ? (ctx) => env.currentTime(ctx) > at : (ctx) => env.currentTime(ctx) < at;
}

function compileSemver(read: FieldReader, operator: string, raw: unknown, env: ConstraintEnv): Check {
  const target = parseVersion(raw);
  if (target === null) {
    // semver throws on the constraint's value, which unleash-client catches: false, once a value is read.
    return (ctx) => {
      read(ctx);
      return false;
    };
  }
  const accept: (c: number) => boolean =
    operator === 'SEMVER_EQ'
      ? (c) => c === 0
      : operator === 'SEMVER_GT'
        ? (c) => c > 0
        : operator === 'SEMVER_GTE'
          ? (c) => c >= 0
          : operator === 'SEMVER_LT'
            ? (c) => c < 0
            : (c) => c <= 0;
  return (ctx) => {
    const value = read(ctx);
    if (!value) return false;
    const version = env.contextVersion(value);
    return version !== null && accept(compareVersions(version, target));
  };
}

function compileRegex(read: FieldReader, raw: unknown, caseInsensitive: boolean): Check {
  // unleash-client caches compiled expressions by `${flag}:${value}`, so a non-string value could
  // hit the entry of the equal string: order-dependent, not reproduced.
  if (typeof raw !== 'string') throw new NotCompilable('REGEX constraint with a non-string value');
  // Loaded when a flag set first has a REGEX constraint.
  const { RE2JS: Re2 } = loadOnDemand('re2js') as typeof import('re2js');
  let regex: RE2JS | undefined;
  try {
    regex = Re2.compile(raw, caseInsensitive ? Re2.CASE_INSENSITIVE : undefined);
  } catch {
    regex = undefined;
  }
  const compiled = regex;
  return (ctx) => {
    const value = read(ctx);
    if (typeof value !== 'string' || compiled === undefined) return false;
    try {
      return compiled.matcher(value).find();
    } catch {
      return false;
    }
  };
}

function compileCidrCheck(read: FieldReader, values: string[]): Check {
  const matches = compileCidr(values);
  return (ctx) => {
    const value = read(ctx);
    return typeof value === 'string' && matches(value);
  };
}

/** The operator's check, before `inverted`. */
function compileOperator(constraint: unknown, operator: string, env: ConstraintEnv): Check | undefined {
  // Asked for only by the operators that read the field (a date constraint reads `currentTime`
  // itself): what a toggle asks readers for is what it reads (ToggleHandle.reads).
  const read = (): FieldReader => env.fieldReader(String(field(constraint, 'contextName')));
  switch (operator) {
    case 'IN':
    case 'NOT_IN':
      return compileIn(read(), cleanValues(field(constraint, 'values'), operator), operator === 'NOT_IN');
    case 'STR_STARTS_WITH':
    case 'STR_ENDS_WITH':
    case 'STR_CONTAINS':
      return compileString(read(), operator, cleanValues(field(constraint, 'values'), operator), Boolean(field(constraint, 'caseInsensitive')));
    case 'NUM_EQ':
    case 'NUM_GT':
    case 'NUM_GTE':
    case 'NUM_LT':
    case 'NUM_LTE':
      return compileNumber(read(), operator, field(constraint, 'value'));
    case 'DATE_AFTER':
    case 'DATE_BEFORE':
      return compileDate(operator, field(constraint, 'value'), env);
    case 'SEMVER_EQ':
    case 'SEMVER_GT':
    case 'SEMVER_GTE':
    case 'SEMVER_LT':
    case 'SEMVER_LTE':
      return compileSemver(read(), operator, field(constraint, 'value'), env);
    case 'REGEX':
      return compileRegex(read(), field(constraint, 'value'), Boolean(field(constraint, 'caseInsensitive')));
    case 'IN_CIDR':
      return compileCidrCheck(read(), cleanValues(field(constraint, 'values'), operator));
    default:
      return undefined;
  }
}

/**
 * One constraint as a check. A missing constraint (or a missing segment's placeholder) and an
 * unknown operator fail closed, whatever `inverted` says.
 */
export function compileConstraint(constraint: unknown, env: ConstraintEnv): Check {
  if (!constraint) return FALSE;
  const operator = field(constraint, 'operator');
  const check = typeof operator === 'string' ? compileOperator(constraint, operator, env) : undefined;
  if (check === undefined) return FALSE;
  return field(constraint, 'inverted') ? (ctx) => !check(ctx) : check;
}

/** The shared state for the checks of one flag set. */
export function createConstraintEnv(contextVersion: (value: string) => Version | null): ConstraintEnv {
  let lastTimeInput = '';
  let lastTime = Number.NaN;
  return {
    fieldReader: createFieldReaders(),
    contextVersion,
    currentTime(ctx) {
      const value = ctx.currentTime;
      if (!value) return Date.now();
      if (typeof value === 'string') {
        if (value !== lastTimeInput) {
          lastTimeInput = value;
          lastTime = new Date(value).getTime();
        }
        return lastTime;
      }
      return new Date(value as string).getTime();
    },
  };
}
