/**
 * How objects that hold secrets show themselves: `util.inspect` (so `console.log`) and
 * `JSON.stringify` see a copy with every token, key and password replaced by `[redacted]`, while
 * code still reads the real values from the object itself.
 */
import { inspect } from 'node:util';
import { REDACTED_TEXT } from '../logger.js';
import { describeOption } from './names.js';

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

/** Tokens and client keys shorter than this get a warning at start: they are easy to guess. */
export const MIN_SECRET_LENGTH = 16;

/**
 * One warning per option that holds a token or key shorter than {@link MIN_SECRET_LENGTH}
 * characters (never the secret itself); empty when all are long enough.
 */
export function weakSecretWarnings(config: {
  flagApiToken: string;
  clientKeys: readonly string[];
  serverSideTokens: readonly string[];
}): string[] {
  const warnings: string[] = [];
  const check = (option: string, values: readonly string[], single: boolean): void => {
    const short = values.filter((v) => v.length < MIN_SECRET_LENGTH).length;
    if (short === 0) return;
    const which = single ? describeOption(option) : `${short} of ${describeOption(option)}`;
    warnings.push(
      `${which} ${short === 1 ? 'is' : 'are'} shorter than ${MIN_SECRET_LENGTH} characters: easy to guess; use long random values`,
    );
  };
  check('flagApiToken', [config.flagApiToken], true);
  check('clientKeys', config.clientKeys, false);
  check('expServerSideSdkConfig.tokens', config.serverSideTokens, false);
  return warnings;
}
