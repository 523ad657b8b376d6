import { describe, expect, it } from 'vitest';
import { isFlagProxyError } from 'flag-proxy';
// unleash-client's own field lookup, as its strategies and constraints read a context.
import { resolveContextValue } from 'unleash-client/lib/helpers.js';
import { createRandom } from '../../bench/flags.js';
import { buildContext, directContext, overlayContext } from '../../src/core/context.js';
import { CONTEXT_NAMES, randomContextInput, shown } from '../support/contexts.js';
import { resolveField, type Ctx } from '../../src/evaluation/compiled/shared.js';

describe('buildContext', () => {
  it('keeps known fields at the top and moves every other key into properties', () => {
    const context = buildContext({ userId: '1', tenantId: 'me', properties: { plan: 'pro' } });
    expect({ ...context, properties: { ...context.properties } }).toEqual({ userId: '1', properties: { tenantId: 'me', plan: 'pro' } });
  });

  it('lets an explicit properties entry win over a top-level duplicate', () => {
    expect(buildContext({ region: 'eu', properties: { region: 'us' } }).properties.region).toBe('us');
  });

  it('does not promote properties named like root fields', () => {
    const context = buildContext({ properties: { appName: 'x' } });
    expect(context.appName).toBeUndefined();
    expect(context.properties.appName).toBe('x');
  });

  it('drops empty values and an invalid currentTime; parses a valid one', () => {
    const context = buildContext({ userId: '', sessionId: '', tenant: '', currentTime: 'nope' });
    expect(Object.keys(context)).toEqual(['properties']);
    expect(Object.keys(context.properties)).toEqual([]);
    expect(buildContext({ currentTime: '2030-01-02T03:04:05Z' }).currentTime?.toISOString()).toBe('2030-01-02T03:04:05.000Z');
  });

  it('drops property values that are objects or lists, which no rule can match', () => {
    const context = buildContext({ tenant: ['a', 'b'], nested: { a: 1 }, properties: { deep: { x: 'y' }, plain: 'ok', n: 5 } });
    expect({ ...context.properties }).toEqual({ plain: 'ok', n: 5 });
  });

  it('survives a properties array and non-object input', () => {
    expect(buildContext({ properties: ['a'] }).properties).toEqual({});
    expect(buildContext('string').properties).toEqual({});
    expect(buildContext(null).properties).toEqual({});
  });

  it('treats __proto__, constructor and prototype as plain keys and pollutes nothing', () => {
    const raw = JSON.parse('{"__proto__": {"polluted": "yes"}, "constructor": "c", "properties": {"__proto__": "x", "prototype": "p"}}');
    const context = buildContext(raw);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((context as Record<string, unknown>).polluted).toBeUndefined();
    expect((context.properties as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(context.properties).sort()).toEqual(['__proto__', 'constructor', 'prototype']);
  });
});

describe('overlayContext', () => {
  it('lets host-derived fields win over what the caller sent, merging properties', () => {
    const context = overlayContext(buildContext({ userId: 'spoofed', properties: { a: '1', b: '2' } }), { userId: 'real', properties: { b: 'host' } });
    expect(context.userId).toBe('real');
    expect({ ...context.properties }).toEqual({ a: '1', b: 'host' });
  });
});

describe('overlayContext: every key the host returns is the host\'s', () => {
  const plain = (c: ReturnType<typeof buildContext>) => ({ ...c, properties: { ...c.properties } });

  it('drops the caller\'s userId when the hook returns userId: undefined (the README\'s session pattern, anonymous)', () => {
    const context = overlayContext(buildContext({ userId: 'alice' }), { userId: undefined });
    expect(plain(context)).toEqual({ properties: {} });
  });

  it('drops the caller\'s field for null and empty string too, and a property named like the field', () => {
    const caller = buildContext({ userId: 'alice', sessionId: 's1', properties: { userId: 'alice', sessionId: 's1', plan: 'pro' } });
    const context = overlayContext(caller, { userId: null as never, sessionId: '' });
    expect(plain(context)).toEqual({ properties: { plan: 'pro' } });
  });

  it('lets a hook property drop or replace the caller\'s same-named property, top-level or in properties', () => {
    const caller = buildContext({ tenant: 'evil', region: 'eu', properties: { plan: 'free' } });
    const context = overlayContext(caller, { tenant: undefined, properties: { plan: undefined, region: 'us' } });
    expect(plain(context)).toEqual({ properties: { region: 'us' } });
  });

  it('claims nothing with properties: undefined', () => {
    expect(plain(overlayContext(buildContext({ plan: 'pro' }), { properties: undefined }))).toEqual({ properties: { plan: 'pro' } });
  });

  it('turns numbers and booleans into strings, in fields and properties', () => {
    const context = overlayContext(buildContext({}), { userId: 42 as never, properties: { beta: true as never, seats: 0 } });
    expect(plain(context)).toEqual({ userId: '42', properties: { beta: 'true', seats: '0' } });
  });

  it('takes currentTime as a Date, an ISO string or epoch milliseconds, and undefined drops the caller\'s', () => {
    expect(overlayContext(buildContext({}), { currentTime: '2030-01-01T00:00:00Z' as never }).currentTime?.toISOString()).toBe('2030-01-01T00:00:00.000Z');
    expect(overlayContext(buildContext({}), { currentTime: 0 as never }).currentTime?.getTime()).toBe(0);
    expect(overlayContext(buildContext({ currentTime: '2030-01-01T00:00:00Z' }), { currentTime: undefined }).currentTime).toBeUndefined();
  });

  it('changes neither the caller\'s context nor the hook\'s object', () => {
    const caller = buildContext({ userId: 'alice', plan: 'pro' });
    const fields = { userId: undefined, properties: { plan: 'x' } };
    overlayContext(caller, fields);
    expect(plain(caller)).toEqual({ userId: 'alice', properties: { plan: 'pro' } });
    expect(fields).toEqual({ userId: undefined, properties: { plan: 'x' } });
  });

  it.each([
    ['an object', { userId: { id: 1 } }, 'userId is an object'],
    ['an array', { userId: ['a'] }, 'userId is an array'],
    ['a function', { sessionId: () => 'x' }, 'sessionId is a function'],
    ['a symbol', { tenant: Symbol('t') }, 'tenant is a symbol'],
    ['a bigint', { properties: { seats: 1n } }, 'properties.seats is a bigint'],
    ['an invalid date', { currentTime: 'nope' }, 'currentTime is a string'],
    ['a non-object properties', { properties: 'x' }, 'properties is a string'],
  ])('throws a masked INTERNAL FlagProxyError naming the key for %s', (_kind, fields, text) => {
    let caught: unknown;
    try {
      overlayContext(buildContext({}), fields as never);
    } catch (error) {
      caught = error;
    }
    expect(isFlagProxyError(caught)).toBe(true);
    expect(caught).toMatchObject({ code: 'INTERNAL', status: 500, expose: false });
    expect((caught as Error).message).toContain(text);
  });
});

describe('directContext', () => {
  const defaults = { appName: 'shop', environment: 'default' };
  /** What the proxy builds for in-process calls: buildContext over the defaults, the configured environment over all. */
  const built = (raw: unknown, environment: string | undefined): Ctx => {
    const context = buildContext(raw, defaults);
    if (environment !== undefined) context.environment = environment;
    return context as Ctx;
  };
  // Not `properties` itself among the names read: read as a value, the caller's object is not the
  // copy (the service then declines; test/in-process/plain-contexts.test.ts).
  it('reads every name as the built context does, through our reader and unleash-client\'s, over random inputs', () => {
    const rnd = createRandom(20261128);
    let direct = 0;
    for (let n = 0; n < 4000; n += 1) {
      const input = randomContextInput(rnd);
      const environment = n % 2 === 0 ? 'production' : undefined;
      const context = directContext(input, defaults, environment) as Ctx | undefined;
      if (context === undefined) continue;
      direct += 1;
      const copy = built(input, environment);
      for (const name of CONTEXT_NAMES) {
        expect(resolveField(context, name), `${name} of ${shown(input)}`).toBe(resolveField(copy, name));
        expect(resolveContextValue(context as never, name), name).toBe(resolveContextValue(copy as never, name));
      }
      // What unleash-client's default stickiness and its single-field strategies read directly.
      for (const field of ['userId', 'sessionId', 'remoteAddress', 'appName', 'environment', 'currentTime', 'featureToggle'] as const) {
        expect(context[field] ?? undefined, field).toBe(copy[field] ?? undefined);
      }
    }
    // Most inputs take the direct path, so the comparison above is not an empty one.
    expect(direct).toBeGreaterThan(1500);
  });

  it('with the names the rules read, checks only those properties, and a field set at the top is read there', () => {
    const properties = { region: 'eu', tags: ['a'], account: { id: 1 } };
    const input = { userId: 'u', properties };
    // Every property checked: a list or an object needs the copy, which leaves them out.
    expect(directContext(input, defaults, undefined)).toBeUndefined();
    expect(directContext(input, defaults, undefined, ['region'])?.properties).toBe(properties);
    expect(directContext(input, defaults, undefined, [])?.properties).toBe(properties);
    expect(directContext(input, defaults, undefined, ['region', 'tags'])).toBeUndefined();
    expect(directContext({ userId: 'u', properties: { userId: ['x'] } }, defaults, undefined, ['userId'])).toMatchObject({ userId: 'u' });
    expect(directContext({ sessionId: 's', properties: { userId: ['x'] } }, defaults, undefined, ['userId'])).toBeUndefined();
    // Not a plain object, or keys besides the fields: the copy, whatever is read.
    expect(directContext({ userId: 'u', properties: new Map() }, defaults, undefined, [])).toBeUndefined();
    expect(directContext({ userId: 'u', tenant: 't' }, defaults, undefined, [])).toBeUndefined();
  });

  it('holds the caller\'s own properties object and changes nothing in the input', () => {
    const properties = Object.freeze({ region: 'eu', seats: 3, beta: false, gone: undefined });
    const input = Object.freeze({ userId: 7, sessionId: '', properties });
    const context = directContext(input, defaults, 'production');
    expect(context?.properties).toBe(properties);
    expect(context).toMatchObject({ appName: 'shop', environment: 'production', userId: '7', sessionId: undefined });
    expect(directContext(undefined, defaults, undefined)).toMatchObject({ appName: 'shop', environment: 'default', properties: {} });
  });

  it('declines, for buildContext to build, any input it cannot take as it is', () => {
    const declined: unknown[] = [
      { tenant: 'acme' },
      { userId: 'a', currentTime: '2030-01-01T00:00:00Z' },
      { userId: { id: 1 } },
      { sessionId: Symbol('s') },
      { appName: 10n },
      { properties: ['eu'] },
      { properties: new Map() },
      { properties: { nested: { a: 1 } } },
      { properties: { list: ['a'] } },
      new (class User {
        userId = 'alice';
      })(),
      new Map([['userId', 'alice']]),
    ];
    for (const input of declined) expect(directContext(input, defaults, undefined), shown(input)).toBeUndefined();
  });
});
