/**
 * A flag set is built into a snapshot (compiled, planned) once per flag set the repository adopts.
 * Building one costs as much as the set is large (at 5,000 flags some 28 MB allocated, most of it
 * kept until the next set), so building it twice on arrival doubled the startup's garbage and grew
 * V8's young generation to its maximum before the first request.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type Engine, type EngineSettings } from '../../src/evaluation/engine.js';
import { createMemoryStorageProvider, createTestFlagServer, silentLogger, type TestFlagServer } from 'flag-proxy/testing';
import { engineFor } from '../support/engine.js';

const FLAG = { name: 'checkout', enabled: true, strategies: [{ name: 'default', parameters: {} }] };

function settings(url: string, token: string, overrides: Partial<EngineSettings> = {}): EngineSettings {
  return {
    url,
    token,
    appName: 'builds',
    instanceId: 'i',
    environment: undefined,
    // Fetches at start, then only when asked (refresh()) within a test's time.
    refreshInterval: 3_600_000,
    projectName: undefined,
    namePrefix: undefined,
    tags: undefined,
    strategies: [],
    storageProvider: createMemoryStorageProvider(),
    bootstrap: undefined,
    rejectUnauthorized: undefined,
    logger: silentLogger,
    ...overrides,
  };
}

/** Starts an engine and resolves once its `onReady` hook ran. */
async function started(engineSettings: EngineSettings): Promise<Engine> {
  let ready!: () => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  const engine = createEngine(engineSettings, { onReady: ready, onFetch() {}, onStrategyError() {} });
  open.push(engine);
  await isReady;
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
