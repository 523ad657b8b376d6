/**
 * An evaluation engine over a fixed flag set, ready to use: the flags are its bootstrap and its
 * upstream is unreachable, so it never changes. For tests of what is built on an engine.
 */
import { createEngine, type Engine } from '../../src/evaluation/engine.js';
import { createMemoryStorageProvider, silentLogger } from 'flag-proxy/testing';

/** Starts an engine holding `features` and `segments`; resolves once it is ready. Close it after. */
export async function engineFor(features: unknown[], segments: unknown[], appName = 'engine-test'): Promise<Engine> {
  let ready!: () => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  const engine = createEngine(
    {
      url: 'http://127.0.0.1:9/api/',
      token: 't',
      appName,
      instanceId: 'i',
      environment: undefined,
      refreshInterval: 0,
      projectName: undefined,
      namePrefix: undefined,
      tags: undefined,
      strategies: [],
      storageProvider: createMemoryStorageProvider(),
      bootstrap: { data: features as never, segments: segments as never } as never,
      rejectUnauthorized: undefined,
      logger: silentLogger,
    },
    { onReady: ready, onFetch() {}, onStrategyError() {} },
  );
  await isReady;
  return engine;
}
