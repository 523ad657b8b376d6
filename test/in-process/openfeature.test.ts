/**
 * `flag-proxy/openfeature` with `@openfeature/server-sdk`: the same values, variants, reasons and
 * errors as the proxy's OFREP answers, over many generated flags and contexts; ready when the
 * proxy is; configuration-changed on every flag-set change, and just after a scheduled launch.
 */
import { OpenFeature, ProviderEvents, type Client, type EvaluationDetails, type JsonValue } from '@openfeature/server-sdk';
import { createOpenFeatureProvider } from 'flag-proxy/openfeature';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contextFor, generateFlags } from '../../bench/flags.js';
import { CLIENT_KEY, eventually, launchAt, postJson, startHarness, type Harness } from '../support/harness.js';
import { OFREP_FEATURES } from '../support/ofrep.js';

interface OfrepEntry {
  key: string;
  value?: unknown;
  reason?: string;
  variant?: string;
  metadata?: Record<string, unknown>;
  errorCode?: string;
}

/** What the provider gives for a flag, asked with the type of the OFREP value (a string default when there is none). */
async function viaProvider(client: Client, entry: OfrepEntry, context: Record<string, string>): Promise<EvaluationDetails<JsonValue>> {
  switch (typeof entry.value) {
    case 'boolean':
      return client.getBooleanDetails(entry.key, !entry.value, context);
    case 'number':
      return client.getNumberDetails(entry.key, -1, context);
    case 'object':
      return client.getObjectDetails(entry.key, {}, context);
    default:
      return client.getStringDetails(entry.key, 'code-default', context);
  }
}

describe('createOpenFeatureProvider (flag-proxy/openfeature)', () => {
  let h: Harness;
  let client: Client;
  const { features, segments } = generateFlags(120);
  const all = [...features, ...OFREP_FEATURES];
  beforeAll(async () => {
    h = await startHarness({ features: all, segments, noWait: true });
    const provider = createOpenFeatureProvider(h.proxy);
    const ready: string[] = [];
    OpenFeature.getClient('in-process').addHandler(ProviderEvents.Ready, () => ready.push('ready'));
    await OpenFeature.setProviderAndWait('in-process', provider);
    expect(h.proxy.isReady()).toBe(true);
    expect(ready).toEqual(['ready']);
    client = OpenFeature.getClient('in-process');
  });
  afterAll(async () => {
    await OpenFeature.clearProviders();
    await h.close();
  });

  it('agrees with POST /ofrep/v1/evaluate/flags over 40 generated contexts', async () => {
    let compared = 0;
    for (let n = 0; n < 40; n += 1) {
      const generated = contextFor(n * 7919);
      // The caller's address is sent explicitly: in process there is no socket to take it from.
      const context = { targetingKey: generated.userId, sessionId: generated.sessionId, remoteAddress: '127.0.0.1', ...generated.properties };
      const res = await h.request('/ofrep/v1/evaluate/flags', { ...postJson({ context }, { 'x-api-key': CLIENT_KEY }), key: null });
      const { flags } = (await res.json()) as { flags: OfrepEntry[] };
      expect(flags).toHaveLength(all.length);
      for (const entry of flags) {
        const details = await viaProvider(client, entry, context);
        if (entry.errorCode !== undefined) {
          expect(details.errorCode, entry.key).toBe(entry.errorCode);
        } else {
          expect(details.errorCode, entry.key).toBeUndefined();
          expect(details.value, entry.key).toEqual('value' in entry ? entry.value : 'code-default');
          expect({ reason: details.reason, variant: details.variant, metadata: details.flagMetadata }, entry.key).toEqual({
            reason: entry.reason,
            variant: entry.variant,
            metadata: entry.metadata,
          });
        }
        compared += 1;
      }
    }
    expect(compared).toBe(40 * all.length);
  });

  it('reports FLAG_NOT_FOUND, TYPE_MISMATCH and INVALID_CONTEXT with the default', async () => {
    expect(await client.getBooleanDetails('missing', true, { targetingKey: 'u' })).toMatchObject({ value: true, errorCode: 'FLAG_NOT_FOUND' });
    expect(await client.getStringDetails('count', 'x', { targetingKey: 'u' })).toMatchObject({ value: 'x', errorCode: 'TYPE_MISMATCH' });
    expect(await client.getNumberDetails('count', 0, { targetingKey: 'u' })).toMatchObject({ value: 5, variant: 'five', reason: 'SPLIT' });
    const invalid = await client.getBooleanDetails('bool-on', false, { targetingKey: { id: 1 } as unknown as string });
    expect(invalid).toMatchObject({ value: false, errorCode: 'INVALID_CONTEXT' });
  });

  it('emits PROVIDER_CONFIGURATION_CHANGED when the flag set changes', async () => {
    const changes: unknown[] = [];
    const handler = (details: unknown) => changes.push(details);
    client.addHandler(ProviderEvents.ConfigurationChanged, handler);
    expect(await client.getBooleanValue('bool-on', false, {})).toBe(true);
    h.upstream.setEnabled('bool-on', false);
    await eventually(() => expect(changes.length).toBeGreaterThan(0), 3000);
    expect(await client.getBooleanValue('bool-on', true, {})).toBe(false);
    client.removeHandler(ProviderEvents.ConfigurationChanged, handler);
  });

  it('emits PROVIDER_CONFIGURATION_CHANGED just after a scheduled launch, the flag set unchanged', async () => {
    // Lead enough for a busy machine to start the proxy and the provider before the instant.
    const at = Date.now() + 3000;
    const own = await startHarness({ features: [launchAt(at)] });
    try {
      await OpenFeature.setProviderAndWait('in-process-launch', createOpenFeatureProvider(own.proxy));
      const launching = OpenFeature.getClient('in-process-launch');
      const changes: number[] = [];
      launching.addHandler(ProviderEvents.ConfigurationChanged, () => changes.push(Date.now()));
      expect(Date.now()).toBeLessThan(at);
      expect(await launching.getBooleanValue('launch', true, { targetingKey: 'ivy' })).toBe(false);
      await eventually(() => expect(changes).toHaveLength(1), at - Date.now() + 3000);
      expect(changes[0]).toBeGreaterThanOrEqual(at);
      expect(await launching.getBooleanValue('launch', false, { targetingKey: 'ivy' })).toBe(true);
    } finally {
      await own.close();
    }
  });
});
