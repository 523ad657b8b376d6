/**
 * In-process contexts as hosts pass them, at random: mostly the plain fields and a `properties`
 * object, with every kind of value a field can hold, names `Object.prototype` holds, own
 * `__proto__` keys (from parsed JSON), objects without a prototype, and now and then something
 * else entirely (a list, a Map, a Date, a nested object, an unknown key).
 */
import { inspect } from 'node:util';

/** Names a rule could read: the fields, properties, and what Object.prototype holds (not `properties` itself). */
export const CONTEXT_NAMES = ['userId', 'sessionId', 'remoteAddress', 'appName', 'environment', 'currentTime', 'region', 'tier', '',
  'constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__', 'isPrototypeOf', 'featureToggle'] as const;
/** Values a field or property may hold that a context takes. */
const VALUES: readonly unknown[] = ['alice', 'eu', '', '0', '1', ' spaced ', 0, -0, 1, 42.5, Number.NaN, true, false, null, undefined];
/** Values no field or property takes as they are. */
const FOREIGN: readonly unknown[] = [{}, ['a'], new Date(0), Symbol('s'), 10n, () => 1];

/** An input for the log of an assertion (JSON would throw on a BigInt). */
export const shown = (input: unknown): string => inspect(input, { depth: 3 });

/** One context input, drawn with `rnd` (a seeded generator). */
export function randomContextInput(rnd: () => number): unknown {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)] as T;
  const value = (): unknown => (rnd() < 0.04 ? pick(FOREIGN) : pick(VALUES));
  if (rnd() < 0.03) return pick([undefined, null, 'text', 7, ['userId'], new Map()]);
  const input: Record<string, unknown> = {};
  for (const field of ['userId', 'sessionId', 'remoteAddress', 'appName', 'environment']) if (rnd() < 0.4) input[field] = value();
  if (rnd() < 0.05) input[pick(['tenant', 'currentTime', 'region'])] = pick(VALUES);
  const kind = rnd();
  if (kind < 0.6) {
    const properties: Record<string, unknown> =
      rnd() < 0.3 ? JSON.parse('{"__proto__": "p", "constructor": "c"}') : rnd() < 0.5 ? Object.create(null) : {};
    for (let i = 0; i < 4; i += 1) if (rnd() < 0.5) properties[pick(CONTEXT_NAMES)] = value();
    input.properties = properties;
  } else if (kind < 0.7) input.properties = pick([undefined, null, ['eu'], new Map()]);
  return input;
}
