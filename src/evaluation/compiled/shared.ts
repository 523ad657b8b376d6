/**
 * What every part of the compiled evaluator shares: the context shape it reads, the one way a
 * context field is looked up (as unleash-client does), and the error that sends a toggle back to
 * unleash-client.
 */

/** An evaluation context as the compiled closures read it: any object, any field values. */
export type Ctx = Record<string, unknown>;

/** A compiled check on a context. Throws exactly where unleash-client throws for the same input. */
export type Check = (context: Ctx) => boolean;

/**
 * `list` as a compiled check keeps it: a copy of its exact length. A list grown by `push` (or made
 * by `filter`) keeps room for at least 17 entries: at a few entries per list, more than half a
 * megabyte of the compiled 5000-flag benchmark set.
 */
export function exactList<T>(list: readonly T[]): T[] {
  return list.slice();
}

/**
 * Lists of up to this many values are looked up in the list itself (`includes`), longer ones in a
 * Set (`has`): both compare as SameValueZero. A Set costs about 300 bytes more than a short list
 * (the 5000-flag benchmark set holds about 3,400 lists, 2,600 of them this short), and is as fast
 * at 4 entries, a few nanoseconds faster at 8 (16 against 23 ns a lookup, Node 20).
 */
export const LIST_LOOKUP_MAX = 8;

/** The values a context value is looked up in: {@link LIST_LOOKUP_MAX}. */
export type Lookup = readonly unknown[] | ReadonlySet<unknown>;

/** `values` as a {@link Lookup}: a list of its exact length, or a Set. */
export function lookupOf(values: readonly unknown[]): Lookup {
  return values.length <= LIST_LOOKUP_MAX ? exactList(values) : new Set(values);
}

/** Whether `lookup` holds `value` (SameValueZero). */
export function lookupHas(lookup: Lookup, value: unknown): boolean {
  return lookup instanceof Set ? lookup.has(value) : (lookup as readonly unknown[]).includes(value);
}

/**
 * Thrown at compile time for a definition this evaluator does not reproduce exactly (a custom or
 * unknown strategy, a malformed value unleash-client would throw on or treat oddly): the toggle is
 * then left to unleash-client.
 */
export class NotCompilable extends Error {
  override readonly name = 'NotCompilable';
}

/**
 * A context field, as unleash-client's `resolveContextValue` reads it: the top-level field, else
 * the property of that name; `undefined` when both are missing or null, else the value as a string
 * (`String()` of a number, a boolean, a Date...; it throws where `String()` throws, e.g. on an
 * object without a prototype, which unleash-client then reports as a strategy error).
 */
export function resolveField(context: Ctx, key: string): string | undefined {
  const value = context[key];
  return value === undefined || value === null ? fromProperties(context, key) : asText(value);
}

/** A field value as `resolveContextValue` gives it (not null or undefined): a string as it is, else `String()`. */
function asText(value: unknown): string {
  return typeof value === 'string' ? value : String(value);
}

/** The `properties` half of {@link resolveField}, once the top-level field is missing or null. */
function fromProperties(context: Ctx, key: string): string | undefined {
  const properties = context.properties as Record<string, unknown> | null | undefined;
  if (properties === undefined || properties === null) return undefined;
  const value = properties[key];
  return value === undefined || value === null ? undefined : asText(value);
}

/** One context field, read as {@link resolveField} reads it ({@link fieldReader}). */
export type FieldReader = (context: Ctx) => string | undefined;

// The fields the proxy itself sets on a context, each read with a property access of its own
// (once, as unleash-client reads it): `context[key]` shared by every key and context shape is
// megamorphic, one access per field is not. Each answers exactly as resolveField(context, field).
const STANDARD_READERS: ReadonlyMap<string, FieldReader> = new Map<string, FieldReader>([
  [
    'userId',
    (context) => {
      const value = context.userId;
      return value === undefined || value === null ? fromProperties(context, 'userId') : asText(value);
    },
  ],
  [
    'sessionId',
    (context) => {
      const value = context.sessionId;
      return value === undefined || value === null ? fromProperties(context, 'sessionId') : asText(value);
    },
  ],
  [
    'remoteAddress',
    (context) => {
      const value = context.remoteAddress;
      return value === undefined || value === null ? fromProperties(context, 'remoteAddress') : asText(value);
    },
  ],
  [
    'environment',
    (context) => {
      const value = context.environment;
      return value === undefined || value === null ? fromProperties(context, 'environment') : asText(value);
    },
  ],
  [
    'appName',
    (context) => {
      const value = context.appName;
      return value === undefined || value === null ? fromProperties(context, 'appName') : asText(value);
    },
  ],
  [
    'currentTime',
    (context) => {
      const value = context.currentTime;
      return value === undefined || value === null ? fromProperties(context, 'currentTime') : asText(value);
    },
  ],
]);

/**
 * The reader of one context field, made once at compile time: {@link resolveField} with `key`
 * fixed. A standard Unleash field gets a reader with its own property access (fast on the
 * contexts the proxy builds); any other key the general lookup.
 */
export function fieldReader(key: string): FieldReader {
  return STANDARD_READERS.get(key) ?? ((context) => resolveField(context, key));
}

/** Most readers of non-standard fields {@link createFieldReaders} keeps; past them, each is made anew. */
export const MAX_SHARED_READERS = 1024;

/**
 * {@link fieldReader}, one reader per key for every constraint, rollout and variant that reads it
 * (a closure and its scope each took about 60 bytes: 3,578 of them at 5000 flags, for the dozen
 * fields the set reads). Keeps at most {@link MAX_SHARED_READERS} keys.
 */
export function createFieldReaders(): (key: string) => FieldReader {
  const readers = new Map<string, FieldReader>();
  return (key) => {
    let reader = readers.get(key);
    if (reader === undefined) {
      reader = fieldReader(key);
      if (readers.size < MAX_SHARED_READERS) readers.set(key, reader);
    }
    return reader;
  };
}

/**
 * `${value}` as a template literal converts it: unleash-client builds hash keys that way, which
 * throws on a Symbol or an object without a prototype where `String()` would not always.
 */
export function templateString(value: unknown): string {
  return typeof value === 'string' ? value : `${value as string}`;
}

/** Whether `value` is an object unleash-client can read fields of without throwing (not null/undefined). */
export function isReadable(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** Reads a field of a definition part that may be any JSON value (primitives are boxed, as in JS). */
export function field(value: unknown, key: string): unknown {
  return isReadable(value) ? (value as Record<string, unknown>)[key] : undefined;
}
