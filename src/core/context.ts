/**
 * Request → evaluation context (pure). The rules follow the predecessor: known fields stay at the
 * top, every other top-level key moves into `properties` (explicit `properties` entries win),
 * empty values are dropped, an invalid `currentTime` is dropped. Property values that are objects
 * or lists (`?a[b]=c`, `?a=1&a=2`, nested JSON) are dropped too: no rule can match them, and some
 * operators throw on them. Objects are built without a prototype, so `__proto__` and friends are
 * plain keys that pollute nothing.
 */

// Defined below the config, which takes hooks and enrichers over contexts; built here.
import type { EvaluationContext, PropertyValue } from '../evaluation/types.js';

export type { EvaluationContext, PropertyValue } from '../evaluation/types.js';

const STRING_FIELDS = ['appName', 'environment', 'userId', 'sessionId', 'remoteAddress'] as const;
/** Top-level fields that are not properties. */
export const KNOWN_FIELDS: ReadonlySet<string> = new Set([...STRING_FIELDS, 'currentTime', 'properties']);

function dict<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || value === '' || value === false || value === 0;
}

function isScalar(value: unknown): value is PropertyValue {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/**
 * Builds a context from a raw object (a GET query parsed with nesting, or a POST `context`).
 * Anything that is not an object yields an empty context.
 */
export function buildContext(raw: unknown): EvaluationContext {
  const context = dict<unknown>() as EvaluationContext;
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

/**
 * Layers host-derived fields over a context: they win over whatever the caller sent, so a browser
 * cannot spoof them. `properties` are merged key by key.
 */
export function overlayContext(context: EvaluationContext, fields: Partial<EvaluationContext> | undefined): EvaluationContext {
  if (!fields) return context;
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    if (value === undefined) continue;
    if (key === 'properties' && typeof value === 'object' && value !== null) {
      for (const name of Object.keys(value)) {
        const property = (value as Record<string, unknown>)[name];
        if (isScalar(property)) context.properties[name] = property;
      }
    } else {
      context[key] = value;
    }
  }
  return context;
}
