/**
 * Closing the engine while it builds a changed flag set abandons the build at its next slice: the
 * set is not adopted, a `refresh()` waiting for it resolves, and nothing is logged. The build is
 * caught at its start by wrapping `runInSlices` (the rest of steps.ts as it is), so the close
 * lands there every time rather than when the timing happens to allow.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import type { Engine } from '../../src/evaluation/engine.js';
import { engineSettings, startEngine } from '../support/engine.js';

/** Called when the engine starts a build in slices, before its first slice. */
const onSlicedBuild = vi.hoisted(() => ({ current: undefined as (() => void) | undefined }));

vi.mock('../../src/evaluation/steps.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/evaluation/steps.js')>();
  return {
    ...original,
    runInSlices: (...args: Parameters<typeof original.runInSlices>) => {
      onSlicedBuild.current?.();
      return original.runInSlices(...args);
    },
  };
});

let upstream: TestFlagServer | undefined;
afterEach(async () => {
  onSlicedBuild.current = undefined;
  await upstream?.close();
  upstream = undefined;
});

const flags = (enabled: boolean) =>
  Array.from({ length: 50 }, (_, i) => ({ name: `flag-${i}`, enabled, strategies: [{ name: 'default', parameters: {} }] }));

describe('close() during a build', () => {
  it('abandons it: the refresh resolves, the set is not adopted, nothing is logged', async () => {
    upstream = await createTestFlagServer({ features: flags(true) });
    const logged: string[] = [];
    const note = (level: string) => (message: string) => logged.push(`${level}: ${message}`);
    const logger = { debug() {}, info() {}, warn: note('warn'), error: note('error'), fatal: note('fatal') };
    const engine: Engine = await startEngine(engineSettings({ url: upstream.url, token: upstream.token, refreshInterval: 3_600_000, logger }));
    const before = engine.snapshot();
    upstream.setFeatures(flags(false));

    let closing: Promise<void> | undefined;
    onSlicedBuild.current = () => {
      closing ??= engine.close();
    };
    await engine.refresh();
    expect(closing).toBeDefined();
    await closing;
    expect(engine.snapshot()).toBe(before);
    expect(engine.definition('flag-0')?.enabled).toBe(true);
    expect(logged).toEqual([]);
  });
});
