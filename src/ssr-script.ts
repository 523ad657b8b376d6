/**
 * Inline `<script>` serialization for server-rendered pages: JSON that cannot end the element it
 * sits in, whatever strings it carries (flag names, variant payloads, context values).
 */
import { FlagProxyError } from './errors.js';

/** Options of {@link bootstrapScript}. */
export interface BootstrapScriptOptions {
  /**
   * The page's CSP nonce, written as the element's `nonce` attribute (base64 or base64url
   * characters only, else `INVALID_OPTION`). @default undefined (no attribute)
   */
  nonce?: string;
  /**
   * The global the data is assigned to (`window[globalName]`): a JavaScript identifier.
   * @default '__FLAG_PROXY_BOOTSTRAP__'
   */
  globalName?: string;
}

/** The global {@link bootstrapScript} assigns to by default. */
export const DEFAULT_BOOTSTRAP_GLOBAL = '__FLAG_PROXY_BOOTSTRAP__';

const NONCE = /^[A-Za-z0-9+/_-]+={0,2}$/;
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Characters escaped as `\uXXXX`: each is valid JSON and valid JavaScript that way. */
const UNSAFE = /[<>&\u2028\u2029]/g;
const escape = (char: string): string => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * JSON of `value` that is safe inside an HTML `<script>` element: `<`, `>`, `&`, U+2028 and
 * U+2029 are written as `\uXXXX` escapes, so neither `</script>` nor `<!--` can appear, and the
 * text is both valid JSON and a valid JavaScript expression. Parses back to the same value.
 *
 * @example
 * ```tsx
 * <script type="application/json" id="flags" dangerouslySetInnerHTML={{ __html: serializeForScript(data) }} />
 * ```
 */
export function serializeForScript(value: unknown): string {
  const json = JSON.stringify(value);
  if (json === undefined) throw new FlagProxyError('INVALID_OPTION', 'serializeForScript: the value has no JSON form');
  return json.replace(UNSAFE, escape);
}

/**
 * An inline `<script>` element that assigns `data` (say, `proxy.bootstrap(context)`) to
 * `window[globalName]`, for the page's own script to start the browser SDK with. Safe for any
 * strings in `data` (see {@link serializeForScript}); `nonce` satisfies a CSP with `'nonce-…'`.
 *
 * @example
 * ```ts
 * const html = `<head>${bootstrapScript(proxy.bootstrap(context), { nonce })}</head>`;
 * // in the page: new UnleashClient({ ..., bootstrap: window.__FLAG_PROXY_BOOTSTRAP__.toggles })
 * ```
 */
export function bootstrapScript(data: unknown, options: BootstrapScriptOptions = {}): string {
  const { nonce, globalName = DEFAULT_BOOTSTRAP_GLOBAL } = options;
  if (nonce !== undefined && (typeof nonce !== 'string' || !NONCE.test(nonce))) {
    throw new FlagProxyError('INVALID_OPTION', 'bootstrapScript: `nonce` must be base64 or base64url characters (the CSP nonce-source grammar)');
  }
  if (typeof globalName !== 'string' || !IDENTIFIER.test(globalName)) {
    throw new FlagProxyError('INVALID_OPTION', 'bootstrapScript: `globalName` must be a JavaScript identifier');
  }
  const attribute = nonce === undefined ? '' : ` nonce="${nonce}"`;
  return `<script${attribute}>window.${globalName}=${serializeForScript(data)};</script>`;
}
