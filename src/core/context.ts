/**
 * Request → evaluation context (pure). The rules follow the predecessor: known fields stay at the
 * top, every other top-level key moves into `properties` (explicit `properties` entries win),
 * empty values are dropped, an invalid `currentTime` is dropped. Property values that are objects
 * or lists (`?a[b]=c`, `?a=1&a=2`, nested JSON) are dropped too: no rule can match them, and some
 * operators throw on them. `properties` is built without a prototype, so `__proto__` and friends
 * are plain keys that pollute nothing.
 */

// Defined below the config, which takes hooks and enrichers over contexts; built here.
import type { EvaluationContext, HostContextFields, PropertyValue } from '../evaluation/types.js';
import { FlagProxyError } from '../errors.js';
import { isPlainObject } from '../plain-objects.js';

export type { EvaluationContext, HostContextFields, HostContextValue, PropertyValue } from '../evaluation/types.js';

const STRING_FIELDS = ['appName', 'environment', 'userId', 'sessionId', 'remoteAddress'] as const;
/** Top-level fields that are not properties. */
export const KNOWN_FIELDS: ReadonlySet<string> = new Set([...STRING_FIELDS, 'currentTime', 'properties']);

/**
 * An empty object without a prototype. Made from `{}` rather than by `Object.create(null)`, which
 * V8 gives a hash table: this one keeps the usual fast layout while its keys are few (it turns
 * into a table by itself past a few dozen), so building and reading `properties` is cheaper.
 */
function dict<T>(): Record<string, T> {
  return Object.setPrototypeOf({}, null) as Record<string, T>;
}

/**
 * Whether a value counts as not given. By type first: a `===` between a string and `false` or `0`
 * is V8's generic comparison (a builtin call each), about a fifth of an in-process call's time
 * when this asked the three in a row.
 */
function isEmpty(value: unknown): boolean {
  if (typeof value === 'string') return value === '';
  if (typeof value === 'number') return value === 0;
  if (typeof value === 'boolean') return !value;
  return value === undefined || value === null;
}

function isScalar(value: unknown): value is PropertyValue {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** A field's value as {@link buildContext} sets it: `undefined` when empty, its text when a scalar, `null` when neither. */
function directText(value: unknown): string | undefined | null {
  if (isEmpty(value)) return undefined;
  return isScalar(value) ? String(value) : null;
}

/** Whether a property value reads as the copy's would: a scalar, or missing ({@link buildContext} drops anything else). */
function isTaken(value: unknown): boolean {
  return value === undefined || value === null || isScalar(value);
}

/** The `properties` of a {@link directContext} whose caller gave none: empty, no prototype, unchangeable. */
const NO_PROPERTIES: Readonly<Record<string, PropertyValue>> = Object.freeze(dict<PropertyValue>());
/** What {@link directContext} reads from an input that is not an object. */
const NOTHING: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * The context {@link buildContext} would build from `raw` over `defaults` (an `appName` and an
 * `environment`), with `environment` (when set) over both, but holding the caller's own
 * `properties` object instead of a copy. `undefined` when `raw` is an object that is not plain,
 * has a key besides `userId`, `sessionId`, `remoteAddress`, `appName`, `environment` and
 * `properties`, a field value other than a string, number, boolean, `undefined` or `null`, or a
 * `properties` that is not a plain object of such values: the caller then needs buildContext.
 * With `reads` (the names the rules about to run may look up: a toggle handle's `reads`), only
 * those properties are checked: a value under another name is never read, so it cannot make the
 * caller's object answer otherwise than the copy (which leaves it out).
 *
 * Only for one synchronous evaluation that nothing else keeps or changes (no enricher, no custom
 * strategy). Rules read it as the built copy: a field is read at the top of the context first and
 * in `properties` only when unset there, and every name `Object.prototype` holds is found at the
 * top of both (each a plain object), so an inherited key or an own `__proto__` of the caller's
 * object is never read; an `undefined` or `null` property reads as the missing one the copy
 * leaves out. Unset fields are present as `undefined` (read as missing), so every such context
 * has one shape.
 */
export function directContext(
  raw: unknown,
  defaults: { readonly appName?: string; readonly environment?: string },
  environment: string | undefined,
  reads?: readonly string[],
): EvaluationContext | undefined {
  // As buildContext: anything but an object (or a list) holds nothing.
  const nothing = typeof raw !== 'object' || raw === null || Array.isArray(raw);
  if (!nothing && !isPlainObject(raw)) return undefined;
  const source = nothing ? NOTHING : (raw as Record<string, unknown>);
  let appName = defaults.appName;
  let given = defaults.environment;
  let userId: string | undefined;
  let sessionId: string | undefined;
  let remoteAddress: string | undefined;
  let properties = NO_PROPERTIES;
  // `for…in` lists inherited enumerable keys too (a polluted prototype): they are unknown keys.
  for (const key in source) {
    const value = source[key];
    if (key === 'properties') {
      if (value === undefined || value === null) continue;
      if (!isPlainObject(value)) return undefined;
      // With `reads`, checked once the fields are known (below).
      if (reads === undefined) for (const name in value) if (!isTaken(value[name])) return undefined;
      properties = value as Record<string, PropertyValue>;
      continue;
    }
    // Compared one by one (the keys are V8's interned strings, so each is a pointer compare), not
    // looked up in STRING_FIELDS: `includes` was a builtin call per key.
    const text = directText(value);
    if (text === null) return undefined;
    if (key === 'userId') userId = text;
    else if (key === 'sessionId') sessionId = text;
    else if (key === 'remoteAddress') remoteAddress = text;
    else if (key === 'appName') appName = text ?? appName;
    else if (key === 'environment') given = text ?? given;
    else return undefined;
  }
  const finalEnvironment = environment ?? given;
  // The caller's keys (a `for…in` reads them from V8's cache, where looking each read name up in an
  // object of any shape is a slow generic lookup), each value looked at only when its name is read:
  // an unread value is memory the call need not touch.
  if (reads !== undefined && reads.length > 0 && properties !== NO_PROPERTIES) {
    for (const name in properties) {
      if (!reads.includes(name) || isTaken(properties[name])) continue;
      // A field set at the top is read there: the property of its name is never looked up.
      const top =
        name === 'userId' ? userId : name === 'sessionId' ? sessionId : name === 'remoteAddress' ? remoteAddress : name === 'appName' ? appName : name === 'environment' ? finalEnvironment : undefined;
      if (top === undefined) return undefined;
    }
  }
  return { appName, environment: finalEnvironment, userId, sessionId, remoteAddress, properties };
}

/**
 * Builds a context from a raw object (a GET query parsed with nesting, or a POST `context`).
 * Anything that is not an object yields an empty context.
 */
export function buildContext(raw: unknown, defaults?: Readonly<Record<string, unknown>>): EvaluationContext {
  // Only fixed field names are ever set on the context itself, so a plain object (fast to read and
  // copy) pollutes nothing; the caller's own keys go into `properties`, which has no prototype.
  // `defaults` (fields the caller's override, such as the static appName) start it off. Copied
  // with Object.assign, not a spread: V8 (Node 20) makes every field added to a spread copy slow
  // (about a microsecond each) and keeps such clones alive across young collections.
  const context = (defaults === undefined ? {} : Object.assign({}, defaults)) as EvaluationContext;
  const properties = dict<PropertyValue>();
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) {
    const source = raw as Record<string, unknown>;
    for (const key of Object.keys(source)) {
      const value = source[key];
      if (KNOWN_FIELDS.has(key) || isEmpty(value) || !isScalar(value)) continue;
      properties[key] = value;
    }
    const explicit = source.properties;
    if (typeof explicit === 'object' && explicit !== null && !Array.isArray(explicit)) {
      for (const key of Object.keys(explicit)) {
        const value = (explicit as Record<string, unknown>)[key];
        if (isScalar(value)) properties[key] = value;
      }
    }
    for (const field of STRING_FIELDS) {
      const value = source[field];
      if (!isEmpty(value)) context[field] = String(value);
    }
    const time = source.currentTime;
    if (typeof time === 'string' && time !== '') {
      const date = new Date(time);
      if (!Number.isNaN(date.getTime())) context.currentTime = date;
    }
  }
  context.properties = properties;
  return context;
}

function hookError(name: string, value: unknown): FlagProxyError {
  const type = Array.isArray(value) ? 'array' : typeof value;
  const kind = value === null ? 'null' : `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
  return new FlagProxyError(
    'INTERNAL',
    `Invalid context from the host's context hook: ${name} is ${kind}; return strings, numbers, booleans, undefined or null`,
    { status: 500, expose: false },
  );
}

/** A hook's scalar as the string Unleash contexts hold; `undefined` for `undefined`/`null`. */
function hookString(name: string, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw hookError(name, value);
}

function hookTime(value: unknown): Date | undefined {
  if (value === undefined || value === null) return undefined;
  const date = value instanceof Date ? value : typeof value === 'string' || typeof value === 'number' ? new Date(value) : undefined;
  if (date === undefined || Number.isNaN(date.getTime())) throw hookError('currentTime', value);
  return date;
}

/**
 * Layers what the host's `context` hook returned over the caller's context, and returns a new
 * context (neither argument is changed). **Every key the hook returns belongs to the host, even
 * when its value is `undefined` or `null`**: the caller's value for that key is dropped, so
 * `(req) => ({ userId: req.session?.userId })` never lets an anonymous caller pick a `userId`.
 *
 * - A known field (`userId`, `sessionId`, `remoteAddress`, `appName`, `environment`, `currentTime`)
 *   replaces the caller's; `undefined`, `null` or `''` leaves the field unset. The caller's
 *   property of the same name is dropped too (rules fall back to it when the field is unset).
 * - Any other top-level key is a property, as in a caller's context: it replaces (or removes) the
 *   caller's same-named property.
 * - Each key of a `properties` object does the same for its property; `properties: undefined`
 *   claims nothing.
 * - Numbers and booleans become strings (`42` matches a rule on `"42"`); `currentTime` takes a Date,
 *   an ISO string or epoch milliseconds. Any other value (object, array, function, symbol, bigint,
 *   invalid date) throws a {@link FlagProxyError} `INTERNAL` (status 500, not exposed): a bug of the
 *   host, logged and answered as a masked 500.
 *
 * @example
 * ```ts
 * overlayContext(buildContext({ userId: 'alice' }), { userId: undefined }).userId; // undefined
 * ```
 */
export function overlayContext(context: EvaluationContext, fields: HostContextFields | null | undefined): EvaluationContext {
  if (fields === undefined || fields === null) return context;
  if (typeof fields !== 'object' || Array.isArray(fields)) throw hookError('the returned value', fields);
  const out = Object.assign(dict<unknown>(), context) as EvaluationContext;
  const properties = Object.assign(dict<PropertyValue>(), context.properties);
  const claimProperty = (name: string, value: unknown, label = name): void => {
    const text = hookString(label, value);
    if (text === undefined) delete properties[name];
    else properties[name] = text;
  };
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    if (key === 'properties') {
      if (value === undefined || value === null) continue;
      if (typeof value !== 'object' || Array.isArray(value)) throw hookError('properties', value);
      for (const name of Object.keys(value)) claimProperty(name, (value as Record<string, unknown>)[name], `properties.${name}`);
    } else if (key === 'currentTime') {
      delete properties[key];
      const time = hookTime(value);
      if (time === undefined) delete out.currentTime;
      else out.currentTime = time;
    } else if (KNOWN_FIELDS.has(key)) {
      // Rules read a property of a field's name when the field is unset: the caller's goes too.
      delete properties[key];
      const text = hookString(key, value);
      if (text === undefined || text === '') delete out[key];
      else out[key] = text;
    } else {
      claimProperty(key, value);
    }
  }
  out.properties = properties;
  return out;
}
