/**
 * How objects that hold secrets show themselves: `util.inspect` (so `console.log`) and
 * `JSON.stringify` see a copy with every token, key and password replaced by `[redacted]`, while
 * code still reads the real values from the object itself.
 */
import { inspect } from 'node:util';
import { REDACTED_TEXT } from '../logger.js';

/**
 * Gives `target` non-enumerable `toJSON` and `util.inspect.custom` methods that show `view()`
 * instead of the object itself; returns `target`.
 */
export function showAs<T extends object>(target: T, view: () => unknown): T {
  Object.defineProperties(target, {
    toJSON: { value: view, enumerable: false, configurable: true },
    [inspect.custom]: {
      value: (_depth: number, options: object, show: typeof inspect = inspect) => show(view(), options),
      enumerable: false,
      configurable: true,
    },
  });
  return target;
}

/** `[redacted]` for each secret of a list (their number stays visible). */
export function redactList(list: readonly string[]): string[] {
  return list.map(() => REDACTED_TEXT);
}
