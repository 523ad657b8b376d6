import type { Logger } from '../logger.js';

const ignore = (): void => undefined;

/**
 * A logger that writes nothing, for tests that expect upstream failures and want quiet output.
 *
 * @example
 * ```ts
 * const proxy = createFlagProxy({ ...options, logger: silentLogger });
 * ```
 */
export const silentLogger: Logger = Object.freeze({ debug: ignore, info: ignore, warn: ignore, error: ignore, fatal: ignore });
