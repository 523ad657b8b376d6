/**
 * The evaluation exports that no longer load unleash-client at import: our own
 * InMemStorageProvider (same interface and behaviour as unleash-client's), the `Strategy` stand-in
 * (unleash-client's class, loaded on first use), and the repository's event names (unleash-client's).
 */
import { describe, expect, it } from 'vitest';
import * as unleash from 'unleash-client';
import { InMemStorageProvider, Strategy } from 'flag-proxy';
import { REPOSITORY_EVENTS } from '../../src/evaluation/repository.js';

describe('InMemStorageProvider', () => {
  it('answers undefined for a key never set', async () => {
    expect(await new InMemStorageProvider<string>().get('app')).toBeUndefined();
  });

  it('hands back what was set under each key, the same object, until it is set again', async () => {
    const storage = new InMemStorageProvider<{ features: string[] }>();
    const first = { features: ['a'] };
    await storage.set('app', first);
    await storage.set('other', { features: ['b'] });
    expect(await storage.get('app')).toBe(first);
    expect(await storage.get('other')).toEqual({ features: ['b'] });
    await storage.set('app', { features: [] });
    expect(await storage.get('app')).toEqual({ features: [] });
  });

  it('keeps each instance apart', async () => {
    const one = new InMemStorageProvider<number>();
    const two = new InMemStorageProvider<number>();
    await one.set('app', 1);
    expect(await two.get('app')).toBeUndefined();
  });

  it('answers as unleash-client’s class does for the same calls', async () => {
    const ours = new InMemStorageProvider<unknown>();
    const theirs = new unleash.InMemStorageProvider<unknown>();
    const steps: Array<[string, unknown] | [string]> = [['app'], ['app', { version: 2 }], ['app'], ['x', null], ['x'], ['y']];
    for (const step of steps) {
      if (step.length === 2) {
        expect(await ours.set(step[0], step[1])).toEqual(await theirs.set(step[0], step[1]));
      } else {
        expect(await ours.get(step[0])).toEqual(await theirs.get(step[0]));
      }
    }
  });
});

describe('Strategy', () => {
  class Beta extends Strategy {
    constructor() {
      super('beta');
    }
    override isEnabled(parameters: Record<string, unknown>, context: unleash.Context): boolean {
      return context.userId === parameters.user;
    }
  }

  it('is subclassed as unleash-client’s class: instances are of both, with its methods', () => {
    const beta = new Beta();
    expect(beta).toBeInstanceOf(unleash.Strategy);
    expect(beta).toBeInstanceOf(Strategy);
    expect(Object.getPrototypeOf(Beta.prototype)).toBe(unleash.Strategy.prototype);
    expect(beta.name).toBe('beta');
    expect(Strategy.name).toBe('Strategy');
  });

  it('runs unleash-client’s constraint checks before the subclass’s isEnabled', () => {
    const beta = new Beta();
    const constraints = () => [{ contextName: 'environment', operator: 'IN', values: ['prod'], inverted: false }][Symbol.iterator]() as never;
    expect(beta.getResult({ user: '7' }, { userId: '7', environment: 'prod' }, constraints())).toEqual({ enabled: true });
    expect(beta.getResult({ user: '7' }, { userId: '7', environment: 'dev' }, constraints())).toEqual({ enabled: false });
  });

  it('constructs instances of unleash-client’s class itself, and refuses a call without new as the class does', () => {
    const on = new Strategy('on', true);
    expect(on.constructor).toBe(unleash.Strategy);
    expect(on.isEnabled({}, {})).toBe(true);
    expect(() => (Strategy as unknown as (name: string) => unknown)('x')).toThrow(TypeError);
  });
});

describe('flag repository events', () => {
  it('are named as unleash-client’s, which an Unleash instance over the repository listens to', () => {
    expect(REPOSITORY_EVENTS.ready).toBe(unleash.UnleashEvents.Ready);
    expect(REPOSITORY_EVENTS.changed).toBe(unleash.UnleashEvents.Changed);
    expect(REPOSITORY_EVENTS.unchanged).toBe(unleash.UnleashEvents.Unchanged);
  });
});
