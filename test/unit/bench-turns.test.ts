/**
 * The benchmark's rows taken in turns with the bare server (bench/interleave.ts, bench/run.ts):
 * how the report shows them, and that issue 16's goals against the bare server are judged on them
 * where a run has them, the rounds' medians beside. In the run of 2026-11-29 10:22 one build's
 * 304 read 1.37×, 1.41× and 1.85× the bare server's in its three rounds at 2,000 clients.
 */
import { describe, expect, it } from 'vitest';
import { processSets, type InterleavedRow } from '../../bench/interleave.js';
import { parseOptions } from '../../bench/options.js';
import { renderReport, type Measurement, type ReportMeta } from '../../bench/report.js';
import { benchWindow } from '../support/bench-window.js';

const window = (target: Measurement['target'], round: number, cpuUsPerRequest: number): Measurement =>
  benchWindow({ flags: 200, scenario: 'poll-etag', clients: 2000, target, round, cpuUsPerRequest, answered: 30_000, status: 304 });

const meta: ReportMeta = {
  date: '2026-11-29T12:00:00Z',
  command: 'npm run bench',
  machine: '2 cores',
  node: 'v20',
  pinning: 'pinned',
  software: 'flag-proxy',
  load: 'wrk',
  pollClients: [2000],
  flagSets: [],
  scenarios: [{ name: 'poll-etag', description: 'polls', perFlagCount: false }],
  runtimeSeconds: 60,
  busyAtStart: '0%',
  warnings: [],
};

// The rounds' medians: 90 against 45 µs, twice the bare server's.
const measurements = [0, 1, 2].flatMap((round) => [window('flag-proxy', round, 90), window('bare-node', round, 45)]);

const turns = (ratio: number, unexpected = 0): InterleavedRow => ({
  flags: 200,
  scenario: 'poll-etag',
  clients: 2000,
  flagProxyUs: 50 * ratio,
  bareUs: 50,
  ratio,
  low: 0.99,
  high: 2.79,
  sliceSeconds: 1,
  warmupSlices: 8,
  setRatios: [ratio - 0.05, ratio + 0.05],
  unexpected,
  bare: [{ cpuUs: 500_000, requests: 10_000 }],
  flagProxy: [{ cpuUs: 500_000 * ratio, requests: 10_000 }],
});

const goal = (report: string): string => report.split('\n').find((line) => line.startsWith('| 304 polls, 2,000 clients')) ?? '';

describe('rows taken in turns with the bare server', () => {
  it('judge the goal where the run has them, with the rounds\' medians beside', () => {
    const report = renderReport(meta, [200], ['flag-proxy', 'bare-node'], measurements, [], [], undefined, undefined, [], [], [], [turns(1.4)]);
    expect(goal(report)).toBe(
      "| 304 polls, 2,000 clients: CPU ≤ 1.5× bare node's | taking turns: 70 vs 50 µs: 1.40× bare (slices 0.99× to 2.79×); the rounds' medians: 90 vs 45 µs: 2.00× bare (req/s 100% of bare) | ✓ |",
    );
    expect(report).toContain('against the bare server and @unleash/proxy, by the rows taken in turns');
    expect(report).toContain('## Ratios to the bare server, taking turns');
    expect(report).toContain('in 2 sets of fresh processes (one process per target each)');
    expect(report).toContain('| poll-etag@2000 | 200 | 70 | 50 | 1.40× | 1.35×, 1.45× | 0.99× to 2.79× | 2.00× | — | — | as expected |');
  });

  it('fail the goal when they are above it, whatever the rounds read', () => {
    const report = renderReport(meta, [200], ['flag-proxy', 'bare-node'], measurements.map((m) => ({ ...m, cpuUsPerRequest: 50 })), [], [], undefined, undefined, [], [], [], [turns(1.6)]);
    expect(goal(report)).toMatch(/taking turns: 80 vs 50 µs: 1\.60× bare .*the rounds' medians: 50 vs 50 µs: 1\.00× bare .* \| ✗ \|$/);
  });

  it('say when answers were not the expected ones', () => {
    const report = renderReport(meta, [200], ['flag-proxy', 'bare-node'], measurements, [], [], undefined, undefined, [], [], [], [turns(1.4, 12)]);
    expect(report).toContain('| 1.40× | 1.35×, 1.45× | 0.99× to 2.79× | 2.00× | — | — | ⚠ 12 unexpected |');
  });

  it('judge the goal against @unleash/proxy where it took its turns too', () => {
    // The rounds: 3,600 µs against 90, 40×; taken in turns: 3,600 against 70, 51.4×.
    const withPredecessor = [...measurements, ...[0, 1, 2].map((round) => window('unleash-proxy', round, 3600))].map((m) => ({ ...m, clients: 20_000 }));
    const row = { ...turns(1.4), clients: 20_000, unleashUs: 3600, unleash: [{ cpuUs: 3_600_000, requests: 1000 }] };
    const report = renderReport({ ...meta, pollClients: [20_000] }, [200], ['flag-proxy', 'unleash-proxy', 'bare-node'], withPredecessor, [], [], undefined, undefined, [], [], [], [row]);
    const versus = report.split('\n').find((line) => line.startsWith('| 304 polls, 20,000 clients: ≥ 50×')) ?? '';
    expect(versus).toBe('| 304 polls, 20,000 clients: ≥ 50× less CPU than @unleash/proxy | taking turns: 70 vs 3,600 µs: 51.4× less CPU; the rounds\' medians: 90 vs 3,600 µs: 40.0× less CPU (req/s 1.00×) | ✓ |');
    expect(report).toContain('| poll-etag@20000 | 200 | 70 | 50 | 1.40× | 1.35×, 1.45× | 0.99× to 2.79× | 2.00× | 3,600 | 51.4× | as expected |');
    const without = renderReport({ ...meta, pollClients: [20_000] }, [200], ['flag-proxy', 'unleash-proxy', 'bare-node'], withPredecessor, [], [], undefined, undefined, [], [], [], [{ ...row, unleashUs: undefined, unleash: undefined }]);
    expect(without).toContain('| 304 polls, 20,000 clients: ≥ 50× less CPU than @unleash/proxy | 90 vs 3,600 µs: 40.0× less CPU (req/s 1.00×) | ✗ |');
  });

  it('leave the goal to the rounds\' medians in a run without them', () => {
    const report = renderReport(meta, [200], ['flag-proxy', 'bare-node'], measurements);
    expect(goal(report)).toBe("| 304 polls, 2,000 clients: CPU ≤ 1.5× bare node's | 90 vs 45 µs: 2.00× bare (req/s 100% of bare) | ✗ |");
    expect(report).not.toContain('taking turns');
  });
});

describe('the --interleaved option', () => {
  it('takes 20 slices by default, 4 in a quick run, 0 to skip, and marks a changed count as a partial run', () => {
    expect(parseOptions([], {}).interleaved).toBe(20);
    expect(parseOptions([], {}).partial).toBe(false);
    expect(parseOptions(['--quick'], {}).interleaved).toBe(4);
    expect(parseOptions(['--interleaved=0'], {})).toMatchObject({ interleaved: 0, partial: true });
    expect(parseOptions([], { BENCH_INTERLEAVED: '8' }).interleaved).toBe(8);
  });

  it('refuses what is not a slice count', () => {
    for (const bad of ['1', '-2', '2.5', 'x']) expect(() => parseOptions([`--interleaved=${bad}`], {})).toThrow(`--interleaved must be 0 or a whole number from 2, got '${bad}'`);
  });
});

describe('the sets of fresh processes the rows taken in turns are split over', () => {
  it('share the slices out, the first sets taking one more where they do not divide evenly', () => {
    expect(processSets(20, 3)).toEqual([7, 7, 6]);
    expect(processSets(21, 3)).toEqual([7, 7, 7]);
    expect(processSets(20, 1)).toEqual([20]);
    expect(processSets(4, 1)).toEqual([4]);
  });

  it('never make a set without a slice', () => {
    expect(processSets(2, 3)).toEqual([1, 1]);
    expect(() => processSets(0, 3)).toThrow('processSets: slices and sets must be whole numbers from 1');
    expect(() => processSets(20, 0)).toThrow('processSets: slices and sets must be whole numbers from 1');
  });

  it('are 3 by default, 1 in a quick run, and a changed count marks a partial run', () => {
    expect(parseOptions([], {}).turnProcesses).toBe(3);
    expect(parseOptions(['--quick'], {}).turnProcesses).toBe(1);
    expect(parseOptions(['--turn-processes=2'], {})).toMatchObject({ turnProcesses: 2, partial: true });
    expect(parseOptions([], { BENCH_TURN_PROCESSES: '5' }).turnProcesses).toBe(5);
    for (const bad of ['0', '-1', '1.5', 'x']) expect(() => parseOptions([`--turn-processes=${bad}`], {})).toThrow(`--turn-processes must be a whole number from 1, got '${bad}'`);
  });
});
