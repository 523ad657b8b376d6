/**
 * In-process calls with a plain context (`isEnabled(name, { userId, properties })`) read the
 * caller's own object instead of a copy of it. The answers must be the copy's: checked over random
 * contexts against a proxy that always copies (an enricher makes it), for rules that read every
 * kind of field, including names `Object.prototype` holds and a field named `properties`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FlagProxy } from 'flag-proxy';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { createRandom } from '../../bench/flags.js';
import { directContext } from '../../src/core/context.js';
import { CONTEXT_NAMES, randomContextInput, shown } from '../support/contexts.js';
import { testProxy } from '../support/served-proxy.js';

const rule = (name: string, strategies: unknown[], variants: unknown[] = []) => ({ name, enabled: true, strategies, variants });
const constraint = (contextName: string, operator: string, values: string[], caseInsensitive = false) => ({
  contextName,
  operator,
  ...(operator.startsWith('NUM_') ? { value: values[0] } : { values }),
  inverted: false,
  caseInsensitive,
});
const WANTED = ['alice', 'eu', '1', 'true', '42.5', 'NaN', 'shop', 'production', 'default', 'p', 'c', '[object Object]', 'function Object() { [native code] }'];

/** Rules over every name a host's context may set: constraints of several operators, rollouts, user lists, addresses, variant overrides. */
function features(names: readonly string[]): unknown[] {
  const list: unknown[] = [];
  for (const name of names) {
    const strategy = (constraints: unknown[]) => [{ name: 'default', parameters: {}, constraints }];
    list.push(rule(`in-${name}`, strategy([constraint(name, 'IN', WANTED)])));
    list.push(rule(`not-in-${name}`, strategy([constraint(name, 'NOT_IN', ['alice', 'eu'])])));
    list.push(rule(`contains-${name}`, strategy([constraint(name, 'STR_CONTAINS', ['A', 'object'], true)])));
    list.push(rule(`above-${name}`, strategy([constraint(name, 'NUM_GT', ['1'])])));
    // A named stickiness that is missing means off: nothing random.
    list.push(rule(`rollout-${name}`, [{ name: 'flexibleRollout', parameters: { rollout: '50', stickiness: name || 'userId', groupId: name }, constraints: [] }]));
  }
  list.push(rule('users', [{ name: 'userWithId', parameters: { userIds: 'alice, 1, true' }, constraints: [] }]));
  list.push(rule('addresses', [{ name: 'remoteAddress', parameters: { IPs: '10.0.0.1, eu' }, constraints: [] }]));
  // One variant, so a missing stickiness field cannot make the pick random; overrides read fields.
  const variant = { name: 'only', weight: 1000, weightType: 'variable', stickiness: 'tier', payload: { type: 'string', value: 'v' } };
  list.push(rule('variants', strategyOn(), [{ ...variant, overrides: [{ contextName: 'region', values: ['eu'] }, { contextName: 'userId', values: ['alice'] }] }]));
  // A child reads what its parent reads: the parent's names are checked for it too.
  list.push({ ...rule('child-of-in-region', [{ name: 'default', parameters: {}, constraints: [constraint('tier', 'NOT_IN', ['x'])] }]), dependencies: [{ feature: 'in-region' }] });
  return list;
}
const strategyOn = () => [{ name: 'default', parameters: {}, constraints: [] }];

describe('in-process calls with plain contexts', () => {
  let upstream: TestFlagServer;
  let direct: FlagProxy;
  let copied: FlagProxy;
  const flags = features(CONTEXT_NAMES.filter((name) => name !== '')) as Array<{ name: string }>;
  beforeAll(async () => {
    upstream = await createTestFlagServer({ features: flags as never });
    direct = testProxy(upstream, { flagAppName: 'shop', environment: 'production' });
    // An enricher (here one that changes nothing) makes every in-process context a copy.
    copied = testProxy(upstream, { flagAppName: 'shop', environment: 'production', expCustomEnrichers: [(context: unknown) => context] });
    await Promise.all([direct.ready, copied.ready]);
  });
  afterAll(async () => {
    await Promise.all([direct.close(), copied.close()]);
    await upstream.close();
  });

  it('answer isEnabled and getVariant as a copy of the context does, over random contexts', () => {
    const rnd = createRandom(1128);
    let plain = 0;
    for (let n = 0; n < 600; n += 1) {
      const input = randomContextInput(rnd) as Record<string, unknown>;
      if (directContext(input, {}, undefined) !== undefined) plain += 1;
      for (const { name } of flags) {
        expect(direct.isEnabled(name, input), `${name} for ${shown(input)}`).toBe(copied.isEnabled(name, input));
        expect(direct.getVariant(name, input), `${name} for ${shown(input)}`).toEqual(copied.getVariant(name, input));
      }
    }
    expect(plain).toBeGreaterThan(300);
  });

  it('answer as the copy when a value no rule could take sits under a name the toggle or its parent reads, or under any other', () => {
    // Read, `{}` would be "[object Object]", which in-region wants; the copy leaves it out.
    const parentReads = { userId: 'alice', properties: { region: {}, tier: 'y' } };
    expect(copied.isEnabled('child-of-in-region', parentReads)).toBe(false);
    expect(direct.isEnabled('child-of-in-region', parentReads)).toBe(false);
    expect(direct.getVariant('child-of-in-region', parentReads)).toEqual(copied.getVariant('child-of-in-region', parentReads));
    // Lists and objects under names nothing reads change nothing.
    const unread = { userId: 'alice', properties: { region: 'eu', tags: ['a', 'b'], account: { id: 1 } } };
    for (const name of ['child-of-in-region', 'in-region', 'users', 'variants']) {
      expect(direct.isEnabled(name, unread), name).toBe(true);
      expect(direct.getVariant(name, unread), name).toEqual(copied.getVariant(name, unread));
    }
  });

  it('read the object as it is at each call, changed in place or not', () => {
    const context: Record<string, any> = { userId: 'alice', properties: { region: 'eu' } };
    const ask = () => ['in-userId', 'in-region', 'users'].map((name) => direct.isEnabled(name, context));
    expect(ask()).toEqual([true, true, true]);
    context.userId = 'bob';
    expect(ask()).toEqual([false, true, false]);
    context.properties.region = 'us';
    expect(ask()).toEqual([false, false, false]);
    context.properties = Object.create(null);
    context.properties.region = 'eu';
    context.userId = 1;
    expect(ask()).toEqual([true, true, true]);
    expect(context).toEqual({ userId: 1, properties: Object.assign(Object.create(null), { region: 'eu' }) });
  });
});

describe('a rule on a field named properties', () => {
  it('reads the copy of the context, which the caller\'s own object would not be', async () => {
    // Read as a value, a copy's properties (no prototype) throws in String(), which unleash-client
    // reports as a failed strategy: off. The caller's plain object would read as "[object Object]".
    const upstream = await createTestFlagServer({
      features: [rule('about-properties', [{ name: 'default', parameters: {}, constraints: [constraint('properties', 'NOT_IN', ['x'])] }])] as never,
    });
    const proxy = testProxy(upstream);
    try {
      await proxy.ready;
      expect(proxy.isEnabled('about-properties', { userId: 'alice', properties: { region: 'eu' } })).toBe(false);
      expect(proxy.isEnabled('about-properties', { userId: 'alice' })).toBe(false);
    } finally {
      await proxy.close();
      await upstream.close();
    }
  });
});
