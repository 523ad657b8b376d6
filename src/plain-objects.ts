/**
 * The two object shapes the hand-written input checks share: a JSON object (what zod's object
 * schemas take) and a plain one (what its record schemas take, and what holds all it has in its
 * own keys).
 */

/** An object that is not null and not an array. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An object whose prototype is `Object.prototype` or none: a literal, parsed JSON, `Object.create(null)`. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}
