/**
 * An evaluation engine over a fixed flag set, ready to use: the flags are its bootstrap and its
 * upstream is unreachable, so it never changes. For tests of what is built on an engine, with the
 * contexts and seeded randomness they evaluate with.
 */
import { createEngine, type Engine, type EngineSettings } from '../../src/evaluation/engine.js';
import { createMemoryStorageProvider, silentLogger } from 'flag-proxy/testing';
import { buildContext } from '../../src/core/context.js';
import type { UnleashContext } from '../../src/evaluation/types.js';
import { createRandom } from '../../bench/flags.js';

/**
 * An engine's settings for tests: an unreachable upstream, a memory storage, no bootstrap, and a
 * refresh interval of 0 (it fetches nothing by itself); `overrides` win.
 */
export function engineSettings(overrides: Partial<EngineSettings> = {}): EngineSettings {
  return {
    url: 'http://127.0.0.1:9/api/',
    token: 't',
    appName: 'engine-test',
    instanceId: 'i',
    environment: undefined,
    refreshInterval: 0,
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

/** Starts an engine with `settings`; resolves once its `onReady` hook ran. Close it after. */
export async function startEngine(settings: EngineSettings): Promise<Engine> {
  let ready!: () => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  const engine = createEngine(settings, { onReady: ready, onFetch() {}, onStrategyError() {} });
  await isReady;
  return engine;
}

/** Starts an engine holding `features` and `segments`; resolves once it is ready. Close it after. */
export function engineFor(features: unknown[], segments: unknown[], appName = 'engine-test'): Promise<Engine> {
  return startEngine(engineSettings({ appName, bootstrap: { data: features as never, segments: segments as never } as never }));
}

/** A context as evaluation sees it: built as a request's, with a static appName and a session. */
export function evaluatedContext(raw: Record<string, unknown>, session: number, appName = 'engine-test'): UnleashContext {
  const context = buildContext(raw) as unknown as UnleashContext;
  context.appName ??= appName;
  context.sessionId ??= String(session);
  return context;
}

/**
 * Runs `run` with `Math.random` drawing from a sequence seeded by `seed`: two runs with one seed
 * see the same draws (random stickiness, gradual rollouts without an id).
 */
export function withSeededRandom<T>(seed: number, run: () => T): T {
  const random = Math.random;
  Math.random = createRandom(seed);
  try {
    return run();
  } finally {
    Math.random = random;
  }
}
