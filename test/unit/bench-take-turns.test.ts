/**
 * The turn loop of the benchmark (`takeTurns` in bench/interleave.ts), with the load replaced by
 * a stand-in and targets whose CPU time is bookkeeping: who goes first in each turn, that the
 * unmeasured slices are left out, that a slice's CPU is read idle to idle and its requests
 * counted with those still in flight, and that only the measured slices' unexpected answers count.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { takeTurns } from '../../bench/interleave.js';
import type { LoadResult, LoadSettings } from '../../bench/load.js';
import type { TargetProcess } from '../../bench/processes.js';

const { sent, cpu, behaviour } = vi.hoisted(() => ({
  /** Which target each load run was sent to, in order. */
  sent: [] as string[],
  /** The bookkeeping behind each fake target's CPU time, by base URL. */
  cpu: new Map<string, number>(),
  /** What the stand-in load answers, by base URL: requests a slice, µs of CPU a request, statuses. */
  behaviour: new Map<string, { count: number; inFlight: number; usPerRequest: number; statuses: Record<string, number> }>(),
}));

vi.mock('../../bench/load.js', () => ({
  runLoad: async (settings: LoadSettings): Promise<LoadResult> => {
    const { count, inFlight, usPerRequest, statuses } = behaviour.get(settings.base) as NonNullable<ReturnType<typeof behaviour.get>>;
    sent.push(settings.base);
    // The target does the work of every request sent, those in flight at the end too.
    cpu.set(settings.base, (cpu.get(settings.base) ?? 0) + (count + inFlight) * usPerRequest);
    return { count, seconds: settings.duration ?? 1, rps: count, p50: 1, p99: 2, statuses, errors: 0, inFlight };
  },
}));

const target = (base: string): TargetProcess =>
  ({
    base,
    pids: [],
    idle: { intervalMs: 1, belowUs: Number.POSITIVE_INFINITY },
    cpuTime: async () => ({ totalUs: cpu.get(base) ?? 0, systemUs: 0 }),
  }) as unknown as TargetProcess;

const load = (base: string): LoadSettings => ({ base, requests: [], connections: 16 });

/** Fake targets by base URL, each with its stand-in load, in the order given. */
const targets = (...bases: string[]) => bases.map((base) => ({ target: target(base), load: load(base) }));

beforeEach(() => {
  sent.length = 0;
  cpu.clear();
  behaviour.clear();
});

describe('takeTurns', () => {
  it('rotates who goes first every turn and measures only the slices after the warm-up', async () => {
    behaviour.set('a', { count: 1000, inFlight: 0, usPerRequest: 50, statuses: { 304: 1000 } });
    behaviour.set('b', { count: 800, inFlight: 0, usPerRequest: 70, statuses: { 304: 800 } });
    behaviour.set('c', { count: 100, inFlight: 0, usPerRequest: 3000, statuses: { 304: 100 } });
    const turns = await takeTurns({
      targets: targets('a', 'b', 'c'),
      scenario: { expected: [304] },
      slices: 3,
      sliceSeconds: 1,
      warmupSlices: 2,
    });
    // Turns -2 and -1 unmeasured, then 0, 1, 2; the first of each turn moves on by one.
    expect(sent.join('')).toBe('bca' + 'cab' + 'abc' + 'bca' + 'cab');
    expect(turns.slices.map((s) => s.length)).toEqual([3, 3, 3]);
    const a = { cpuUs: 50_000, requests: 1000, statuses: { 304: 1000 } };
    expect(turns.slices[0]).toEqual([a, a, a]);
    expect(turns.slices[1]?.[0]).toEqual({ cpuUs: 56_000, requests: 800, statuses: { 304: 800 } });
    expect(turns.slices[2]?.[0]).toEqual({ cpuUs: 300_000, requests: 100, statuses: { 304: 100 } });
    expect(turns.unexpected).toBe(0);
  });

  it('flips the order for two, and counts requests still in flight with the slice', async () => {
    behaviour.set('a', { count: 900, inFlight: 16, usPerRequest: 10, statuses: { 304: 900 } });
    behaviour.set('b', { count: 500, inFlight: 0, usPerRequest: 20, statuses: { 304: 500 } });
    const turns = await takeTurns({
      targets: targets('a', 'b'),
      scenario: { expected: [304] },
      slices: 2,
      sliceSeconds: 1,
      warmupSlices: 1,
    });
    expect(sent.join('')).toBe('ba' + 'ab' + 'ba');
    expect(turns.slices[0]).toEqual([
      { cpuUs: 9160, requests: 916, statuses: { 304: 900 } },
      { cpuUs: 9160, requests: 916, statuses: { 304: 900 } },
    ]);
  });

  it('counts the answers the scenario does not expect in the measured slices only', async () => {
    behaviour.set('a', { count: 1000, inFlight: 0, usPerRequest: 50, statuses: { 304: 990, 500: 10 } });
    behaviour.set('b', { count: 1000, inFlight: 0, usPerRequest: 50, statuses: { 304: 1000 } });
    const turns = await takeTurns({
      targets: targets('a', 'b'),
      scenario: { expected: [200, 304] },
      slices: 4,
      sliceSeconds: 1,
      warmupSlices: 3,
    });
    expect(turns.unexpected).toBe(40);
    // Each slice keeps its answers by status, so a dear slice can be told from a burst of errors.
    expect(turns.slices[0]?.[0]?.statuses).toEqual({ 304: 990, 500: 10 });
  });

  it('needs two targets at least', async () => {
    behaviour.set('a', { count: 1, inFlight: 0, usPerRequest: 1, statuses: { 304: 1 } });
    await expect(takeTurns({ targets: targets('a'), scenario: { expected: [304] }, slices: 1, sliceSeconds: 1, warmupSlices: 0 })).rejects.toThrow(
      'takeTurns: needs at least two targets',
    );
    expect(sent).toEqual([]);
  });
});
