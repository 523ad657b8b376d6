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
  let value = context[key];
  if (value === undefined || value === null) {
    const properties = context.properties as Record<string, unknown> | null | undefined;
    if (properties === undefined || properties === null) return undefined;
    value = properties[key];
    if (value === undefined || value === null) return undefined;
  }
  return typeof value === 'string' ? value : String(value);
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
