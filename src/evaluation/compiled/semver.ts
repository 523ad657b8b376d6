/**
 * Semantic versions as unleash-client's SEMVER_* operators read them, through the `semver`
 * package (7.x, strict mode): the same grammar, the same limits and the same ordering, without a
 * regular expression or an object per comparison. Constraint values are parsed once per flag set;
 * context values once per distinct string while it stays among the last thousand or so.
 */

/** A parsed version: numeric main parts and prerelease identifiers (numbers when small, else strings). */
export interface Version {
  major: number;
  minor: number;
  patch: number;
  prerelease: Array<number | string>;
}

const MAX_LENGTH = 256;
const MAX_SAFE_INTEGER = Number.MAX_SAFE_INTEGER;

const isDigit = (c: number): boolean => c >= 48 && c <= 57;
/** `[a-zA-Z0-9-]` */
const isIdentChar = (c: number): boolean => isDigit(c) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 45;

/** Reads `0|[1-9]\d*` at `at`; returns the end index, or -1. */
function numericEnd(s: string, at: number): number {
  if (at >= s.length || !isDigit(s.charCodeAt(at))) return -1;
  if (s.charCodeAt(at) === 48) return at + 1;
  let i = at + 1;
  while (i < s.length && isDigit(s.charCodeAt(i))) i += 1;
  return i;
}

/** Reads one `[a-zA-Z0-9-]+` identifier; returns the end index, or -1 when empty. */
function identifierEnd(s: string, at: number): number {
  let i = at;
  while (i < s.length && isIdentChar(s.charCodeAt(i))) i += 1;
  return i === at ? -1 : i;
}

/**
 * What `new SemVer(value)` accepts (strict): a string of at most 256 characters which, trimmed, is
 * `v?MAJOR.MINOR.PATCH(-PRERELEASE)?(+BUILD)?` with main parts up to MAX_SAFE_INTEGER. `null`
 * where it throws.
 */
export function parseVersion(value: unknown): Version | null {
  if (typeof value !== 'string' || value.length > MAX_LENGTH) return null;
  const s = value.trim();
  let i = s.charCodeAt(0) === 118 /* v */ ? 1 : 0;
  const parts: number[] = [];
  for (let n = 0; n < 3; n += 1) {
    if (n > 0) {
      if (s.charCodeAt(i) !== 46 /* . */) return null;
      i += 1;
    }
    const end = numericEnd(s, i);
    if (end < 0) return null;
    const part = +s.slice(i, end);
    if (part > MAX_SAFE_INTEGER) return null;
    parts.push(part);
    i = end;
  }
  const prerelease: Array<number | string> = [];
  if (s.charCodeAt(i) === 45 /* - */) {
    i += 1;
    for (;;) {
      const end = identifierEnd(s, i);
      if (end < 0) return null;
      const id = s.slice(i, end);
      let numeric = true;
      for (let k = 0; k < id.length; k += 1) if (!isDigit(id.charCodeAt(k))) numeric = false;
      if (numeric) {
        // A numeric identifier has no leading zero; a small one compares as a number.
        if (id.length > 1 && id.charCodeAt(0) === 48) return null;
        const num = +id;
        prerelease.push(num < MAX_SAFE_INTEGER ? num : id);
      } else {
        prerelease.push(id);
      }
      i = end;
      if (s.charCodeAt(i) !== 46) break;
      i += 1;
    }
  }
  if (s.charCodeAt(i) === 43 /* + */) {
    i += 1;
    for (;;) {
      const end = identifierEnd(s, i);
      if (end < 0) return null;
      i = end;
      if (s.charCodeAt(i) !== 46) break;
      i += 1;
    }
  }
  if (i !== s.length) return null;
  return { major: parts[0]!, minor: parts[1]!, patch: parts[2]!, prerelease };
}

const NUMERIC = /^[0-9]+$/;

/** semver's `compareIdentifiers`, including its quirk for large numeric strings (compared as rounded numbers). */
function compareIdentifiers(a: number | string, b: number | string): number {
  if (typeof a === 'number' && typeof b === 'number') return a === b ? 0 : a < b ? -1 : 1;
  const aNumeric = NUMERIC.test(String(a));
  const bNumeric = NUMERIC.test(String(b));
  let x: number | string = a;
  let y: number | string = b;
  if (aNumeric && bNumeric) {
    x = +a;
    y = +b;
  }
  if (x === y) return 0;
  if (aNumeric && !bNumeric) return -1;
  if (bNumeric && !aNumeric) return 1;
  return x < y ? -1 : 1;
}

/** semver's `compare(a, b)`: main parts, then prerelease (a release sorts after its prereleases). */
export function compareVersions(a: Version, b: Version): number {
  if (a.major !== b.major) return a.major < b.major ? -1 : 1;
  if (a.minor !== b.minor) return a.minor < b.minor ? -1 : 1;
  if (a.patch !== b.patch) return a.patch < b.patch ? -1 : 1;
  const pa = a.prerelease;
  const pb = b.prerelease;
  if (pa.length > 0 && pb.length === 0) return -1;
  if (pa.length === 0 && pb.length > 0) return 1;
  if (pa.length === 0) return 0;
  for (let i = 0; ; i += 1) {
    const x = pa[i];
    const y = pb[i];
    if (x === undefined && y === undefined) return 0;
    if (y === undefined) return 1;
    if (x === undefined) return -1;
    // semver returns the first non-identical pair's comparison, even when it is 0.
    if (x !== y) return compareIdentifiers(x, y);
  }
}

/** How many distinct context versions {@link createContextVersionParser} keeps parsed. */
const KEPT_VERSIONS = 1024;

/**
 * A context value as SEMVER_* operators accept it: valid for `semver.valid` and not starting with
 * `v` (before trimming, as unleash-client checks). Remembers the last string parsed, since one
 * request usually compares the same version under many constraints, and up to
 * {@link KEPT_VERSIONS} others (an app has few versions in use; all are forgotten when more come),
 * so a stream of users parses each version once instead of once per call.
 */
export function createContextVersionParser(): (value: string) => Version | null {
  let lastInput = '';
  let lastVersion: Version | null = null;
  const kept = new Map<string, Version | null>();
  return (value) => {
    if (value === lastInput) return lastVersion;
    let version = kept.get(value);
    if (version === undefined) {
      version = value.charCodeAt(0) === 118 /* v */ ? null : parseVersion(value);
      if (kept.size >= KEPT_VERSIONS) kept.clear();
      kept.set(value, version);
    }
    lastInput = value;
    lastVersion = version;
    return version;
  };
}
