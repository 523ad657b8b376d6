/**
 * `npm run bench:ab` (bench/ab.ts): its options, and how it turns two builds' slices into figures.
 * The comparison itself needs two cores, taskset and minutes: it is run by hand, not here.
 */
import { describe, expect, it } from 'vitest';
import { parseAbArgs, summarize } from '../../bench/ab.js';
import { wrkVersion } from '../../bench/wrk.js';

describe('bench:ab options', () => {
  it('needs a git revision to compare with, and fills in the rest', () => {
    expect(() => parseAbArgs([])).toThrow(/--baseline=git:<rev> or --baseline=bare-node is required .* got none/);
    expect(() => parseAbArgs(['--baseline=HEAD~1'])).toThrow(/--baseline=git:<rev> or --baseline=bare-node is required .* got "HEAD~1"/);
    expect(parseAbArgs(['--baseline=git:HEAD~1'])).toEqual({
      baseline: 'git:HEAD~1',
      scenario: 'poll-etag',
      flags: 200,
      clients: 2000,
      slices: 16,
      sliceSeconds: 1,
      warmupSlices: 8,
      processes: 3,
      connections: 16,
      loader: wrkVersion() !== undefined ? 'wrk' : 'autocannon',
    });
  });

  it('takes every option as --name=value', () => {
    const options = parseAbArgs(['--baseline=git:e67195a', '--scenario=health', '--flags=1000', '--clients=20000', '--slices=32', '--slice-seconds=2', '--warmup-slices=0', '--processes=2', '--connections=8', '--load=autocannon']);
    expect(options).toEqual({ baseline: 'git:e67195a', scenario: 'health', flags: 1000, clients: 20000, slices: 32, sliceSeconds: 2, warmupSlices: 0, processes: 2, connections: 8, loader: 'autocannon' });
  });

  it('takes the bare server as A, for the scenarios it answers', () => {
    expect(parseAbArgs(['--baseline=bare-node', '--scenario=health'])).toMatchObject({ baseline: 'bare-node', scenario: 'health' });
    expect(parseAbArgs(['--baseline=bare-node', '--clients=200000'])).toMatchObject({ baseline: 'bare-node', scenario: 'poll-etag', clients: 200000 });
    for (const scenario of ['ofrep-unique', 'ofrep-single', 'ofrep-poll', 'post-poll']) {
      expect(() => parseAbArgs(['--baseline=bare-node', `--scenario=${scenario}`])).toThrow(new RegExp(`the bare server does not answer ${scenario}`));
    }
  });

  it('refuses what it cannot run, naming the option', () => {
    expect(() => parseAbArgs(['--baseline=git:x', '--scenario=poll-after-change'])).toThrow(/--scenario must be one of .*, got "poll-after-change"/);
    expect(() => parseAbArgs(['--baseline=git:x', '--scenario=nope'])).toThrow(/--scenario/);
    expect(() => parseAbArgs(['--baseline=git:x', '--slices=1'])).toThrow(/--slices must be a whole number from 2, got "1"/);
    expect(() => parseAbArgs(['--baseline=git:x', '--flags=2.5'])).toThrow(/--flags/);
    expect(() => parseAbArgs(['--baseline=git:x', '--processes=0'])).toThrow(/--processes must be a whole number from 1, got "0"/);
    expect(() => parseAbArgs(['--baseline=git:x', '--rounds=3'])).toThrow(/unknown option --rounds/);
    expect(() => parseAbArgs(['--baseline=git:x', '--load=ab'])).toThrow(/--load must be 'wrk' or 'autocannon', got "ab"/);
    expect(() => parseAbArgs(['--baseline=git:x', 'health'])).toThrow(/expected --name=value, got "health"/);
  });
});

describe('bench:ab figures', () => {
  it('compares CPU per request over all slices, and gives the range of the slices taken in turn', () => {
    const a = [
      { cpuUs: 1_000_000, requests: 10_000 },
      { cpuUs: 1_200_000, requests: 10_000 },
    ];
    const b = [
      { cpuUs: 900_000, requests: 10_000 },
      { cpuUs: 1_320_000, requests: 12_000 },
    ];
    const summary = summarize(a, b);
    expect(summary.a).toBeCloseTo(110, 6);
    expect(summary.b).toBeCloseTo(100.909, 2);
    expect(summary.ratio).toBeCloseTo(100.909 / 110, 4);
    // Slice by slice: 90 / 100 and 110 / 120.
    expect(summary.low).toBeCloseTo(0.9, 6);
    expect(summary.high).toBeCloseTo(110 / 120, 6);
  });

  it('refuses slices that do not pair up', () => {
    expect(() => summarize([], [])).toThrow(/same number of slices/);
    expect(() => summarize([{ cpuUs: 1, requests: 1 }], [])).toThrow(/same number of slices/);
  });
});
