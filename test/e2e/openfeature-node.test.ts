/**
 * OpenFeature's own OFREP provider for Node (`@openfeature/ofrep-provider` 0.1.3, the version the
 * registry here has) with `@openfeature/server-sdk`, against the proxy's OFREP routes: boolean,
 * string, number and object flags, a flag that is off, and one the proxy does not have.
 */
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { OpenFeature, type Client } from '@openfeature/server-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_KEY, startHarness, type Harness } from '../support/harness.js';
import { OFREP_FEATURES } from '../support/ofrep.js';

describe('@openfeature/ofrep-provider against /ofrep/v1', () => {
  let h: Harness;
  let client: Client;
  beforeAll(async () => {
    h = await startHarness({ features: OFREP_FEATURES });
    await OpenFeature.setProviderAndWait('ofrep-node', new OFREPProvider({ baseUrl: h.base, headers: [['Authorization', `Bearer ${CLIENT_KEY}`]] }));
    client = OpenFeature.getClient('ofrep-node');
  });
  afterAll(async () => {
    await OpenFeature.clearProviders();
    await h.close();
  });

  it('evaluates a boolean flag per targeting key', async () => {
    const alice = await client.getBooleanDetails('bool-users', false, { targetingKey: 'alice' });
    expect(alice).toMatchObject({ value: true, reason: 'TARGETING_MATCH', flagMetadata: { enabled: true } });
    expect(alice.errorCode).toBeUndefined();
    expect(await client.getBooleanValue('bool-users', true, { targetingKey: 'bob' })).toBe(false);
    expect(await client.getBooleanDetails('bool-off', true, { targetingKey: 'alice' })).toMatchObject({ value: false, reason: 'DISABLED' });
  });

  it('evaluates string, number and object flags from their payloads', async () => {
    expect(await client.getStringDetails('text', 'default', { targetingKey: 'u' })).toMatchObject({ value: 'hello', variant: 'blue', reason: 'SPLIT' });
    expect(await client.getNumberValue('count', 0, { targetingKey: 'u' })).toBe(5);
    expect(await client.getObjectValue('config', {}, { targetingKey: 'u' })).toEqual({ a: 1, b: [true] });
  });

  it('reports FLAG_NOT_FOUND and the default for a flag the proxy does not have', async () => {
    const details = await client.getBooleanDetails('missing', true, { targetingKey: 'u' });
    expect(details).toMatchObject({ value: true, errorCode: 'FLAG_NOT_FOUND', reason: 'ERROR' });
  });

  it('reports TYPE_MISMATCH when asked for the wrong type, and the default', async () => {
    const details = await client.getStringDetails('count', 'x', { targetingKey: 'u' });
    expect(details).toMatchObject({ value: 'x', errorCode: 'TYPE_MISMATCH' });
  });

  it('returns the default for a payload flag that is off (0.1.3 needs a value, so it reports GENERAL)', async () => {
    const details = await client.getStringDetails('text-off', 'fallback', { targetingKey: 'u' });
    expect(details.value).toBe('fallback');
    expect(details.errorCode).toBe('GENERAL');
  });

  it('uses properties from the context', async () => {
    expect(await client.getBooleanValue('plan-pro', false, { targetingKey: 'u', plan: 'pro' })).toBe(true);
    expect(await client.getBooleanValue('plan-pro', true, { targetingKey: 'u', plan: 'free' })).toBe(false);
  });
});
