/**
 * A flag set is built into a snapshot (compiled, planned) once per flag set the repository adopts.
 * Building one costs as much as the set is large (at 5,000 flags some 28 MB allocated, most of it
 * kept until the next set), so building it twice on arrival doubled the startup's garbage and
 * V8's old generation, and made the proxy ready later.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Engine, EngineSettings } from '../../src/evaluation/engine.js';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { engineFor, engineSettings, startEngine } from '../support/engine.js';

const FLAG = { name: 'checkout', enabled: true, strategies: [{ name: 'default', parameters: {} }] };

/** Settings for an engine of `url`, fetching at start, then only when asked (refresh()) within a test. */
function settings(url: string, token: string, overrides: Partial<EngineSettings> = {}): EngineSettings {
  return engineSettings({ url, token, appName: 'builds', refreshInterval: 3_600_000, ...overrides });
}

/** Starts an engine, closed after the test. */
async function started(settingsOfEngine: EngineSettings): Promise<Engine> {
  const engine = await startEngine(settingsOfEngine);
  open.push(engine);
  return engine;
}

const open: Engine[] = [];
let upstream: TestFlagServer | undefined;
afterEach(async () => {
  await Promise.all(open.splice(0).map((engine) => engine.close()));
  await upstream?.close();
  upstream = undefined;
});

describe('building a flag set into a snapshot', () => {
  it('builds the first set from the upstream once, and each changed set once more', async () => {
    upstream = await createTestFlagServer({ features: [FLAG] });
    const engine = await started(settings(upstream.url, upstream.token));
    const first = engine.snapshot();
    expect(first.revision).toBe(1);
    expect(first.compiled.has('checkout')).toBe(true);

    upstream.setEnabled('checkout', false);
    await engine.refresh();
    expect(engine.snapshot().revision).toBe(2);
    expect(engine.snapshot().compiled.isOn('checkout', {})).toBe(false);

    // An unchanged set is not rebuilt.
    await engine.refresh();
    expect(engine.snapshot().revision).toBe(2);
  });

  it('builds a bootstrapped set once', async () => {
    const engine = await engineFor([FLAG], []);
    open.push(engine);
    expect(engine.snapshot().revision).toBe(1);
    expect(engine.snapshot().compiled.isOn('checkout', {})).toBe(true);
  });

  it('builds a set read from the backup (which announces no change) once, and evaluates it', async () => {
    const storageProvider = createMemoryStorageProvider();
    await storageProvider.set('builds', { version: 2, features: [FLAG], segments: [] } as never);
    // No upstream answers: the backup is all there is.
    const engine = await started(settings('http://127.0.0.1:9/api/', 't', { storageProvider }));
    expect(engine.snapshot().revision).toBe(1);
    expect(engine.snapshot().compiled.isOn('checkout', {})).toBe(true);
  });
});
