/**
 * The benchmark's warm-up before a process's first scenario (bench/measure.ts): it must run until
 * the target's CPU per request has settled, through the plateaus of its JIT's optimisation, and
 * stop soon after on a target that needs no warming.
 */
import { describe, expect, it } from 'vitest';
import { MAX_WARMUP_SLICES, MIN_WARMUP_SLICES, settled } from '../../bench/measure.js';

/** The slice at which a warm-up of these slice costs stops (its length in slices). */
function stopsAfter(costs: readonly number[]): number {
  for (let n = 1; n <= Math.min(costs.length, MAX_WARMUP_SLICES); n += 1) if (settled(costs.slice(0, n))) return n;
  return Math.min(costs.length, MAX_WARMUP_SLICES);
}

// CPU µs per request of flag-proxy in 0.5 s slices from a fresh process's first request on
// (get-unique, .probe curve on this project's 2-core machine, 2026-11-28).
const FLAGS_200 = [1565, 742, 911, 703, 342, 259, 310, 264, 246, 276, 255, 306, 292, 289, 221, 237, 249, 283, 309, 307, 261, 306, 280];
const FLAGS_1000 = [3597, 2050, 2121, 1899, 1845, 1968, 2304, 1186, 1231, 873, 762, 770, 766, 825, 828, 782, 805, 650, 624, 663, 795, 880, 859];

describe('the first scenario warm-up', () => {
  it('runs MIN_WARMUP_SLICES at least, however flat the start', () => {
    const flat = Array.from({ length: 30 }, () => 100);
    expect(stopsAfter(flat)).toBe(MIN_WARMUP_SLICES);
    expect(settled(flat.slice(0, MIN_WARMUP_SLICES - 1))).toBe(false);
  });

  it('outlasts a plateau of 4.5 s before the last step down', () => {
    // As in round 3 of the 1000-flag rows of the 10:26 run, which stopped after 9 slices: flat
    // at ~2,000 µs, then the step the other rounds had reached.
    const plateau = [2100, 2000, 1950, 2050, 2000, 1980, 2020, 1990, 2010, 1200, 950, 900, 880, 860, 870, 850, 860, 840, 850, 860];
    const at = stopsAfter(plateau);
    expect(at).toBeGreaterThan(9);
    expect(Math.max(...plateau.slice(at))).toBeLessThan(1000);
  });

  it('runs through a plateau of the JIT and stops once the cost no longer falls', () => {
    const at1000 = stopsAfter(FLAGS_1000);
    // The slices 1-7 (0.5-3.5 s) hover at ~2,000 µs before falling to ~800: stopping there would
    // measure the optimiser, not the proxy.
    expect(at1000).toBeGreaterThan(8);
    const after = FLAGS_1000.slice(at1000);
    expect(Math.max(...after)).toBeLessThan(1000);
    const at200 = stopsAfter(FLAGS_200);
    expect(Math.max(...FLAGS_200.slice(at200))).toBeLessThan(400);
  });

  it('stops after at most MAX_WARMUP_SLICES on a cost that keeps falling', () => {
    const falling = Array.from({ length: 40 }, (_, i) => 10_000 * 0.8 ** i);
    expect(falling.slice(0, MAX_WARMUP_SLICES).some((_, i) => settled(falling.slice(0, i + 1)))).toBe(false);
    expect(stopsAfter(falling)).toBe(MAX_WARMUP_SLICES);
  });
});
