/**
 * The benchmark report's table (bench/report.ts) for a target that answered nothing within its
 * windows, as @unleash/proxy did for unique contexts at 5000 flags in the run of 2026-11-28 11:06:
 * its CPU per request is then that of the requests left in flight, no figure to compare with.
 */
import { describe, expect, it } from 'vitest';
import { summarize, table, type Measurement } from '../../bench/report.js';
import { benchWindow } from '../support/bench-window.js';

const window = (target: Measurement['target'], round: number, answered: number, cpuUsPerRequest: number): Measurement =>
  benchWindow({ flags: 5000, scenario: 'get-unique', target, round, cpuUsPerRequest, answered, status: 200 });

describe('a target that answered nothing within its windows', () => {
  const measurements = [0, 1, 2].flatMap((round) => [
    window('flag-proxy', round, 300, 10_000),
    window('unleash-proxy', round, 0, 500_000),
    window('bare-node', round, 7_500, 180),
  ]);
  const lines = table(5000, ['get-unique'], ['flag-proxy', 'unleash-proxy', 'bare-node'], summarize(measurements));
  const row = (label: string): string[] => (lines.find((line) => line.startsWith(`| get-unique | ${label} |`)) ?? '').split('|').map((cell) => cell.trim());

  it('shows no CPU per request for it, and says why', () => {
    const theirs = row('@unleash/proxy');
    expect(theirs[6]).toBe('—');
    expect(theirs[12]).toBe('none within the windows (16 requests still in flight when each closed)');
  });

  it('gives no ratio against it', () => {
    expect(row('flag-proxy')[10]).toBe('—');
    expect(row('bare node:http')[10]).toBe('—');
    expect(row('flag-proxy')[11]).toMatch(/^\d+% · \d+%$/);
  });
});
