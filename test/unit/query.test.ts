/**
 * The GET query's fast path against qs itself: whenever the fast path answers, its answer is
 * exactly qs's (values, key order, prototypes); it answers the queries SDKs send; it declines
 * everything qs treats specially.
 */
import { describe, expect, it } from 'vitest';
import qs from 'qs';
import { parseCommonQuery, parseQuery, QUERY_OPTIONS } from '../../src/surfaces/common/query.js';
import { requestSchemas } from '../../src/core/schemas.js';
import { createRandom } from '../../bench/flags.js';
import { canonical } from '../support/canonical.js';

/** A value with its prototypes and own key order spelled out, so toEqual compares all of them. */
type Shape = string | number | boolean | null | undefined | { proto: string; entries: [string, Shape][] };
function shape(value: unknown): Shape {
  if (value === null || typeof value !== 'object') return value as Shape;
  const proto = Object.getPrototypeOf(value);
  const name = proto === null ? 'null' : proto === Object.prototype ? 'Object' : proto === Array.prototype ? 'Array' : 'other';
  const entries = Reflect.ownKeys(value).map((key): [string, Shape] => [String(key), shape((value as Record<PropertyKey, unknown>)[key])]);
  return { proto: name, entries };
}

const viaQs = (search: string): unknown => qs.parse(search, QUERY_OPTIONS);

/** A small seeded generator, so a failure reproduces. */
const random = createRandom;

const FIELDS = ['userId', 'sessionId', 'appName', 'environment', 'remoteAddress', 'currentTime', 'region', 'properties', '5', '01', 'a.b', 'utf8'];
const SPECIAL_NAMES = ['__proto__', 'constructor', 'hasOwnProperty', 'toString', 'valueOf', 'isPrototypeOf', '__defineGetter__', 'prototype'];
const PROPERTY_NAMES = ['region', 'plan', 'tenantId', 'email', 'age', 'appVersion', 'a', 'b', '0', '7', '-1', '-0', '01', '1e3', 'x y', 'ünï', '✓', ...SPECIAL_NAMES];
// Raw fragments: pieces of escapes (broken and whole), delimiters, brackets, unicode.
const FRAGMENTS = [
  'a', 'b', 'Z', '0', '9', ' ', '+', '%', '=', '&', '[', ']', ']=', ';', '?', '#', '.', '-', '_', '~', '@', '/', ',',
  '%20', '%2B', '%25', '%26', '%3D', '%5B', '%5b', '%5D', '%5d', '%5D=', '%255B', '%2', '%ZZ', '%E2%9C%93', '%C3%BC', '%E2%9C', '%C3',
  '%F0%9F%98%80', '%ED%A0%80', 'é', '✓', '😀', '\ud800', 'utf8=%E2%9C%93', 'utf8=%26%2310003%3B', '&#10003;',
];

function pick<T>(next: () => number, items: readonly T[]): T {
  return items[Math.floor(next() * items.length)] as T;
}

function fragmentText(next: () => number, max: number): string {
  let text = '';
  const length = Math.floor(next() * (max + 1));
  for (let i = 0; i < length; i++) text += pick(next, FRAGMENTS);
  return text;
}

/** Brackets raw or percent-encoded in either case, as SDKs and hand-written URLs send them. */
function brackets(next: () => number, inner: string): string {
  const open = pick(next, ['[', '%5B', '%5b']);
  const close = pick(next, [']', '%5D', '%5d']);
  return `${open}${inner}${close}`;
}

function encodeSometimes(next: () => number, text: string): string {
  const how = next();
  if (how >= 0.5) return text;
  let encoded: string;
  try {
    encoded = encodeURIComponent(text);
  } catch {
    return text; // a lone surrogate has no encoding: it stays raw
  }
  return how < 0.4 ? encoded : encoded.replace(/%20/g, '+');
}

function key(next: () => number): string {
  const kind = next();
  if (kind < 0.3) return pick(next, FIELDS);
  if (kind < 0.65) return `properties${brackets(next, encodeSometimes(next, pick(next, PROPERTY_NAMES)))}`;
  if (kind < 0.68) {
    // Half a bracket pair, or something after it.
    const name = encodeSometimes(next, pick(next, PROPERTY_NAMES));
    const open = pick(next, ['[', '%5B', '%5b', '']);
    const close = pick(next, [']', '%5D', '%5d', '', '%5', '%5E', ']x', '%5Dab', '%5D%5D']);
    return `properties${open}${name}${close}`;
  }
  if (kind < 0.72) return pick(next, SPECIAL_NAMES);
  if (kind < 0.8) {
    const depth = 1 + Math.floor(next() * 3);
    let nested = pick(next, ['properties', 'region', 'a', '', ...SPECIAL_NAMES]);
    for (let i = 0; i < depth; i++) nested += brackets(next, pick(next, ['', 'a', '0', '101', ...PROPERTY_NAMES]));
    return nested;
  }
  if (kind < 0.9) return encodeSometimes(next, fragmentText(next, 4));
  return fragmentText(next, 5);
}

function value(next: () => number): string {
  const kind = next();
  if (kind < 0.5) return encodeSometimes(next, pick(next, ['42', 'eu', 'web', 'production', 'user-1@example.com', '1.2.3', 'a b', 'ü', '✓😀', 'x=y', '[x]', 'a&b', '']));
  if (kind < 0.75) return encodeSometimes(next, fragmentText(next, 6));
  return fragmentText(next, 6);
}

function query(next: () => number): string {
  const pairs: string[] = [];
  const count = Math.floor(next() * 12);
  for (let i = 0; i < count; i++) {
    const form = next();
    if (form < 0.04 && pairs.length > 0) pairs.push(pick(next, pairs)); // an exact duplicate
    else if (form < 0.07) pairs.push(key(next)); // a key without `=`
    else if (form < 0.09) pairs.push(''); // an empty part: `&&`, or a leading or trailing `&`
    else if (form < 0.11) pairs.push(`=${value(next)}`);
    else pairs.push(`${key(next)}=${value(next)}`);
  }
  return pairs.join('&');
}

/** The query `bench/flags.ts` builds: what a browser SDK sends for a context. */
function sdkQuery(n: number): string {
  const params = new URLSearchParams();
  params.append('userId', `user-${n}`);
  params.append('sessionId', String(1_000_000_000 + n));
  params.append('appName', 'web');
  params.append('environment', 'production');
  params.append('properties[tenantId]', `tenant-${n % 50}`);
  params.append('properties[region]', 'eu');
  params.append('properties[plan]', 'pro');
  params.append('properties[email]', `user-${n}@example.com`);
  params.append('properties[age]', String(18 + (n % 60)));
  params.append('properties[appVersion]', '1.2.3');
  return params.toString();
}

describe('parseQuery', () => {
  it('answers exactly what qs answers whenever the fast path answers, over a generated corpus', () => {
    const next = random(16);
    const mismatches: { search: string; fast: Shape; qs: Shape }[] = [];
    let answered = 0;
    const total = 30_000;
    for (let i = 0; i < total; i++) {
      const sdk = i % 10 === 0;
      const search = sdk ? sdkQuery(i) : query(next);
      const expected = shape(viaQs(search));
      const fast = parseCommonQuery(search);
      if (fast !== undefined) {
        if (!sdk) answered++;
        // The route skips the query schema for what the fast path answers: it must always pass it,
        // with the same fields and values (the schema lists its own fields first; order aside).
        const checked = requestSchemas().querySchema.safeParse(fast);
        if (!checked.success || canonical(checked.data) !== canonical(fast)) mismatches.push({ search, fast: shape(fast), qs: 'fails the query schema' as never });
        if (JSON.stringify(shape(fast)) !== JSON.stringify(expected)) mismatches.push({ search, fast: shape(fast), qs: expected });
      } else if (sdk) mismatches.push({ search, fast: undefined, qs: expected });
      const parsed = shape(parseQuery(search));
      if (JSON.stringify(parsed) !== JSON.stringify(expected)) mismatches.push({ search, fast: parsed, qs: expected });
    }
    expect(mismatches.slice(0, 3)).toEqual([]);
    // The random part reaches both paths: neither "always declines" nor "always answers" passes.
    expect(answered).toBeGreaterThan(total * 0.05);
    expect(answered).toBeLessThan(total * 0.8);
  });

  it('answers past and at the parameter limit like qs, which drops the pairs past it', () => {
    const pairs = (n: number) => Array.from({ length: n }, (_, i) => `k${i}=${i}`).join('&');
    expect(shape(parseCommonQuery(pairs(QUERY_OPTIONS.parameterLimit)))).toEqual(shape(viaQs(pairs(QUERY_OPTIONS.parameterLimit))));
    expect(parseCommonQuery(pairs(QUERY_OPTIONS.parameterLimit + 1))).toBeUndefined();
    const beyond = pairs(QUERY_OPTIONS.parameterLimit + 5);
    expect(shape(parseQuery(beyond))).toEqual(shape(viaQs(beyond)));
    expect(Object.keys(parseQuery(beyond))).toHaveLength(QUERY_OPTIONS.parameterLimit);
  });

  it('takes the fast path for the queries SDKs send', () => {
    const accepted = [
      sdkQuery(7),
      sdkQuery(7).replace(/%5B/g, '[').replace(/%5D/g, ']'),
      sdkQuery(7).replace(/%5B/g, '%5b').replace(/%5D/g, '%5d'),
      'userId=42&properties[region]=eu',
      'userId=a+b&sessionId=c%20d&properties%5Bname%5D=J%C3%BCrgen+%E2%9C%93',
      'userId=&appName=web&properties[region]=',
      'token=YWJj==&filter=[x]&list=a,b,c',
      'a=1;b=2',
      'utf8=%E2%9C%93&userId=1',
      'a.b=1&5=x&properties[-0]=y&properties[01]=z',
      'properties%5Bb%5D=1&userId=2&properties%5Ba%5D=3',
      '',
    ];
    for (const search of accepted) {
      const fast = parseCommonQuery(search);
      expect(fast, search).toBeDefined();
      expect(shape(fast), search).toEqual(shape(viaQs(search)));
    }
    const parsed = parseCommonQuery('userId=42&properties%5Bregion%5D=eu&properties[plan]=pro+plus');
    expect(parsed).toEqual({ userId: '42', properties: { region: 'eu', plan: 'pro plus' } });
    expect(Object.getPrototypeOf(parsed)).toBeNull();
    expect(Object.getPrototypeOf(parsed?.properties)).toBeNull();
  });

  it('declines, for qs to answer, every query qs treats specially', () => {
    const declined = [
      'a=1&a=2', // duplicates become arrays
      'a=1&%61=2',
      'properties[a]=1&properties%5Ba%5D=2',
      'a[]=1',
      'properties[]=1',
      'properties[a][b]=1',
      'properties[0]=x', // an array
      'properties[a]=1&properties=2',
      'properties=2',
      'region[a]=x',
      '[a]=1',
      'a]=1',
      'a[=1',
      '__proto__=1',
      'constructor=1',
      'hasOwnProperty=1',
      'toString=x',
      '__proto__[polluted]=1',
      'constructor[prototype][polluted]=1',
      'properties[__proto__]=1',
      'properties[constructor]=1',
      'properties[valueOf]=1',
      'a=%',
      'a=%ZZ',
      'a=%E2%9C',
      '%=1',
      'a=%%5B',
      'a', // qs gives ""
      'a=1&b',
      '=1', // qs drops it
      'a=1&',
      '&a=1',
      'a=1&&b=2',
      'a=x]=y', // qs splits at `]=`: key "a=x]"
      'a=x%5D=y',
      'a=x%5d=y',
      'properties[a=b]=c',
      'properties[region=eu', // qs: { properties: { '[region': 'eu' } }
      'properties%5Bregion=eu',
      'properties%5Bregion%5=eu',
      'properties%5Bregion%5Dx=eu',
      'propertiesregion%5D=eu',
    ];
    for (const search of declined) {
      expect(parseCommonQuery(search), search).toBeUndefined();
      expect(shape(parseQuery(search)), search).toEqual(shape(viaQs(search)));
    }
  });
});
