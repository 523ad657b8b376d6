/**
 * The one error model of flag-proxy. Every failure the library raises on purpose is a
 * {@link FlagProxyError}: a machine-readable `code`, the HTTP `status` it maps to, and `expose`,
 * which says whether its message may be shown to a caller (false for anything unexpected).
 */

/** Every error code flag-proxy raises. */
export type FlagProxyErrorCode =
  // configuration, at creation
  | 'INVALID_OPTION'
  // request handling
  | 'BAD_REQUEST'
  | 'INVALID_JSON'
  | 'VALIDATION_FAILED'
  | 'UNAUTHORIZED'
  | 'NOT_READY'
  // startup control (`waitUntilReady`)
  | 'READY_TIMEOUT'
  | 'NOT_ENABLED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'INTERNAL'
  // admin events client
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'UPSTREAM'
  | 'TIMEOUT'
  | 'NETWORK'
  | 'INVALID_RESPONSE';

/** Options of {@link FlagProxyError}. */
export interface FlagProxyErrorOptions {
  /** HTTP status this error answers with. @default 500 */
  status?: number;
  /** Whether `message` may be sent to a caller. @default status < 500 */
  expose?: boolean;
  /** The underlying error, kept for logs only. */
  cause?: unknown;
  /** Extra machine-readable details (e.g. validation issues). */
  details?: unknown;
}

const BRAND = Symbol.for('flag-proxy.error');

/**
 * An error raised by flag-proxy.
 *
 * @example
 * ```ts
 * try { createFlagProxy({}); } catch (err) {
 *   if (isFlagProxyError(err) && err.code === 'INVALID_OPTION') console.error(err.message);
 * }
 * ```
 */
export class FlagProxyError extends Error {
  readonly code: FlagProxyErrorCode;
  readonly status: number;
  readonly expose: boolean;
  readonly details: unknown;
  /** @internal brand so that copies of the class from another bundle are recognised. */
  readonly [BRAND] = true;

  constructor(code: FlagProxyErrorCode, message: string, options: FlagProxyErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FlagProxyError';
    this.code = code;
    this.status = options.status ?? 500;
    this.expose = options.expose ?? this.status < 500;
    this.details = options.details;
  }
}

/**
 * True for any error raised by flag-proxy, even one created by another copy of the package
 * (ESM and CJS builds loaded side by side).
 */
export function isFlagProxyError(value: unknown): value is FlagProxyError {
  return (
    value instanceof FlagProxyError ||
    (typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true)
  );
}
