import { describe, expect, it } from 'vitest';
import { buildContext, overlayContext } from '../../src/core/context.js';

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
