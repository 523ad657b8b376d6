/**
 * Lookups that skip the schema (`isPlainLookup`, `isPlainContext`): whatever they accept, the
 * schema must accept too and give back the same fields and values, so skipping it changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { isPlainContext, isPlainLookup, requestSchemas } from '../../src/core/schemas.js';
import { createRandom as random } from '../../bench/flags.js';
import { canonical } from '../support/canonical.js';

const FIELDS = ['appName', 'environment', 'userId', 'sessionId', 'remoteAddress', 'currentTime', 'region', 'properties', 'context', 'toggles'];

function valueOf(next: () => number, depth: number): unknown {
  const pick = Math.floor(next() * 9);
  if (pick === 0) return null;
  if (pick === 1) return Math.floor(next() * 100);
  if (pick === 2) return next() < 0.5;
  if (pick === 3 && depth < 2) return Array.from({ length: Math.floor(next() * 3) }, () => valueOf(next, depth + 1));
  if (pick === 4 && depth < 2) return objectOf(next, depth + 1);
  if (pick === 5) return '2030-01-01T00:00:00Z';
  return `v${Math.floor(next() * 1000)}`;
}

function objectOf(next: () => number, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const count = Math.floor(next() * 5);
  for (let i = 0; i < count; i += 1) out[FIELDS[Math.floor(next() * FIELDS.length)] as string] = valueOf(next, depth);
  // An own `__proto__` field, as JSON.parse makes for a body that has one.
  if (next() < 0.05) Object.defineProperty(out, '__proto__', { value: valueOf(next, depth + 1), enumerable: true, writable: true, configurable: true });
  return out;
}

describe('lookups that skip the schema', () => {
  it('are exactly those the schema passes unchanged, over a generated corpus', () => {
    const { contextSchema, lookupSchema } = requestSchemas();
    const next = random(7);
    let plain = 0;
    for (let i = 0; i < 20_000; i += 1) {
      // Through JSON, as a request body arrives (an own `__proto__` stays a field).
      const body = JSON.parse(JSON.stringify(objectOf(next, 0))) as Record<string, unknown>;
      if (isPlainLookup(body)) {
        plain += 1;
        const checked = lookupSchema.safeParse(body);
        expect(checked.success && canonical(checked.data) === canonical(body), JSON.stringify(body)).toBe(true);
      }
      const context = body.context;
      if (isPlainContext(context)) {
        const checked = contextSchema.safeParse(context);
        expect(checked.success && canonical(checked.data) === canonical(context), JSON.stringify(context)).toBe(true);
      }
    }
    // Both answers occur: neither "never plain" nor "always plain" passes.
    expect(plain).toBeGreaterThan(1000);
    expect(plain).toBeLessThan(19_000);
  });

  it('accept what SDKs send, and leave to the schema what it would change or refuse', () => {
    const sdk = { context: { userId: '42', sessionId: 's', appName: 'web', properties: { region: 'eu', plan: null } }, toggles: ['a'] };
    expect(isPlainLookup(sdk)).toBe(true);
    expect(isPlainContext(sdk.context)).toBe(true);
    expect(isPlainLookup({})).toBe(true);
    expect(isPlainLookup({ context: null })).toBe(true);
    // Coerced by the schema: numbers and booleans become strings.
    expect(isPlainLookup({ context: { userId: 42 } })).toBe(false);
    expect(isPlainLookup({ toggles: [1] })).toBe(false);
    expect(isPlainContext({ properties: { beta: true } })).toBe(false);
    // Refused by the schema.
    expect(isPlainLookup({ context: { userId: null } })).toBe(false);
    expect(isPlainLookup({ context: { properties: ['eu'] } })).toBe(false);
    expect(isPlainLookup({ toggles: 'a' })).toBe(false);
    expect(isPlainLookup({ toggles: Array.from({ length: 1001 }, (_, i) => `t${i}`) })).toBe(false);
    expect(isPlainLookup([])).toBe(false);
  });
});
