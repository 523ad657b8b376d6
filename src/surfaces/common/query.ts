/**
 * GET query parsing. The predecessor parsed queries with qs through Express, so every query still
 * parses to exactly what `qs.parse(search, QUERY_OPTIONS)` gives. The query an SDK sends for a
 * context (flat fields and one level of `properties[name]`) takes a fast path that builds the
 * same result without qs's general machinery; any query it is not sure about goes to qs.
 */
import { loadOnDemand } from '../../load-on-demand.js';

/** How qs parses a GET query. The fast path assumes exactly these: change both together. */
export const QUERY_OPTIONS = { plainObjects: true, depth: 5, parameterLimit: 1000, arrayLimit: 100 } as const;

/** A parsed query: prototype-less, as `plainObjects` makes it. */
export type ParsedQuery = Record<string, unknown>;

const PROPERTIES = 'properties';

// Names a context never needs and qs may treat apart (it drops `__proto__`). A set answers faster
// than `in Object.prototype`; the result is prototype-less, so a name added later cannot reach it.
const PROTOTYPE_NAMES: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));

/**
 * Parses a GET query (without `?`) as `qs.parse(search, QUERY_OPTIONS)` does.
 *
 * @example
 * parseQuery('userId=42&properties%5Bregion%5D=eu'); // { userId: '42', properties: { region: 'eu' } }
 */
export function parseQuery(search: string): ParsedQuery {
  return parseCommonQuery(search) ?? parseWithQs(search);
}

/** `qs.parse(search, QUERY_OPTIONS)`; qs (several MB once loaded) is loaded by the first call. */
export function parseWithQs(search: string): ParsedQuery {
  return (loadOnDemand('qs') as typeof import('qs')).parse(search, QUERY_OPTIONS) as ParsedQuery;
}

/**
 * The fast path of {@link parseQuery}: the same result for a query of distinct `name=value` pairs
 * whose names are flat or `properties[name]`, and `undefined` for anything else.
 */
export function parseCommonQuery(search: string): ParsedQuery | undefined {
  const result: ParsedQuery = { __proto__: null } as unknown as ParsedQuery;
  if (search === '') return result;
  let properties: ParsedQuery | undefined;
  let start = 0;
  let count = 0;
  while (start <= search.length) {
    let end = search.indexOf('&', start);
    if (end === -1) end = search.length;
    // qs ignores the pairs past its limit; `a` alone or `=a` mean "" or nothing to qs.
    if (++count > QUERY_OPTIONS.parameterLimit) return undefined;
    const eq = search.indexOf('=', start);
    if (eq <= start || eq >= end) return undefined;
    const rawValue = search.slice(eq + 1, end);
    // qs splits a pair at its first `]=` (after turning %5B/%5D into brackets, values included)
    // before its first `=`, so a value holding either moves the split into the value.
    if (rawValue.indexOf('=') !== -1 && (rawValue.indexOf(']=') !== -1 || /%5d=/i.test(rawValue))) return undefined;
    const value = decode(rawValue);
    if (value === undefined) return undefined;
    const rawKey = search.slice(start, eq);
    // The SDKs' `properties%5Bname%5D`: only the name needs decoding.
    const rawName = rawPropertyName(rawKey);
    let name: string | undefined;
    if (rawName === undefined) {
      const key = decode(rawKey);
      if (key === undefined) return undefined;
      if (key.indexOf('[') === -1) {
        if (key.indexOf(']') !== -1 || key === PROPERTIES || !plainName(key) || result[key] !== undefined) return undefined;
        result[key] = value;
        start = end + 1;
        continue;
      }
      name = propertyName(key);
    } else {
      const decoded = decode(rawName);
      name = decoded === undefined ? undefined : checkedName(decoded);
    }
    if (name === undefined) return undefined;
    if (properties === undefined) {
      properties = { __proto__: null } as unknown as ParsedQuery;
      result[PROPERTIES] = properties;
    } else if (properties[name] !== undefined) return undefined;
    properties[name] = value;
    start = end + 1;
  }
  return result;
}

/** `name` of a decoded `properties[name]`, when qs would make it a plain key of an object. */
function propertyName(key: string): string | undefined {
  if (!key.startsWith(`${PROPERTIES}[`) || key.charCodeAt(key.length - 1) !== 0x5d) return undefined;
  return checkedName(key.slice(PROPERTIES.length + 1, -1));
}

/**
 * The still encoded `name` of `properties[name]` whose brackets are raw or %5B/%5D. Decoding the
 * key as a whole gives `properties[` + the decoded name + `]`, and fails exactly when the name's
 * decoding fails: the brackets' escapes are whole ASCII bytes.
 */
function rawPropertyName(rawKey: string): string | undefined {
  if (!rawKey.startsWith(PROPERTIES)) return undefined;
  const at = PROPERTIES.length;
  const open = rawKey.charCodeAt(at) === 0x5b ? 1 : isEscape(rawKey, at, 0x42) ? 3 : 0;
  const last = rawKey.length - 1;
  const close = rawKey.charCodeAt(last) === 0x5d ? 1 : isEscape(rawKey, last - 2, 0x44) ? 3 : 0;
  if (open === 0 || close === 0 || at + open > rawKey.length - close) return undefined;
  return rawKey.slice(at + open, rawKey.length - close);
}

/** Whether `%5` and the letter (either case) start at `at`. */
function isEscape(text: string, at: number, upper: number): boolean {
  const letter = text.charCodeAt(at + 2);
  return text.charCodeAt(at) === 0x25 && text.charCodeAt(at + 1) === 0x35 && (letter === upper || letter === upper + 0x20);
}

/** A decoded property name qs stores as a plain key: not empty, no brackets, not an array index. */
function checkedName(name: string): string | undefined {
  if (name === '' || name.indexOf('[') !== -1 || name.indexOf(']') !== -1 || !plainName(name)) return undefined;
  // qs turns `properties[2]` into an array.
  const first = name.charCodeAt(0);
  if (((first >= 0x30 && first <= 0x39) || first === 0x2d) && String(Number.parseInt(name, 10)) === name) return undefined;
  return name;
}

/** Not the name of one of Object.prototype's own properties, `__proto__` among them. */
function plainName(name: string): boolean {
  return !PROTOTYPE_NAMES.has(name);
}

/**
 * qs's utf-8 decoding: `+` is a space, then decodeURIComponent; `undefined` where that throws.
 * Single-byte escapes (`%40`, `%5B`) are decoded here, which is several times cheaper.
 */
function decode(raw: string): string | undefined {
  const spaced = raw.indexOf('+') === -1 ? raw : raw.replace(/\+/g, ' ');
  let percent = spaced.indexOf('%');
  if (percent === -1) return spaced;
  let decoded = '';
  let from = 0;
  while (percent !== -1) {
    const byte = (hexDigit(spaced.charCodeAt(percent + 1)) << 4) | hexDigit(spaced.charCodeAt(percent + 2));
    // decodeURIComponent throws on a `%` without two hex digits.
    if (byte < 0) return undefined;
    if (byte >= 0x80) return decodeUtf8(spaced);
    decoded += spaced.slice(from, percent) + String.fromCharCode(byte);
    from = percent + 3;
    percent = spaced.indexOf('%', from);
  }
  return decoded + spaced.slice(from);
}

/** A hex digit's value; a large negative number for anything else (NaN past the end too). */
function hexDigit(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  const lower = code | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -0x100;
}

function decodeUtf8(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
