/**
 * Target processes on one core taking turns in short slices under the same scenario, so that the
 * machine's drift over minutes falls on all of them alike: what `npm run bench:ab` does for two
 * builds (or a build and the bare server), and what a full run does for the rows issue 16 judges
 * against the bare server and the predecessor (bench/run.ts, "Ratios to the bare server, taking
 * turns").
 */
import { runLoad, type Loader, type LoadSettings } from './load.js';
import { primeClients, unexpectedAnswers, waitForIdle } from './measure.js';
import type { TargetProcess } from './processes.js';
import type { ScenarioName } from './options.js';
import type { Scenario, ScenarioInput } from './scenarios.js';

/** The scenarios whose cost issue 16 judges against the bare server's. */
export const INTERLEAVED_SCENARIOS: readonly ScenarioName[] = ['get-unique', 'poll-etag', 'preflight', 'health'];

/** Of those, the scenarios whose goals also compare with @unleash/proxy's cost (polling: the populations it is primed with). */
export const PREDECESSOR_GOALS: readonly ScenarioName[] = ['get-unique', 'poll-etag'];

/** A row of a full run taken in turns: the bare server (A) and flag-proxy (B) on one core, and @unleash/proxy where a goal compares with it. */
export interface InterleavedRow {
  flags: number;
  scenario: ScenarioName;
  /** The polling population, for `poll-etag`. */
  clients?: number;
  /** CPU µs per request over every measured slice. */
  flagProxyUs: number;
  bareUs: number;
  /** flagProxyUs / bareUs, and the lowest and highest of the slices taken in turn. */
  ratio: number;
  low: number;
  high: number;
  sliceSeconds: number;
  /** Unmeasured slices per target before them, in each set of processes. */
  warmupSlices: number;
  /** flag-proxy / bare over the slices of each set of fresh processes (see {@link processSets}), in order. */
  setRatios: number[];
  /** Answers the scenario does not expect, and connection errors, over every target's measured slices. */
  unexpected: number;
  bare: Slice[];
  flagProxy: Slice[];
  /** @unleash/proxy's CPU µs per request and slices, in the rows whose goals compare with it (taking turns with both). */
  unleashUs?: number;
  unleash?: Slice[];
}

/**
 * How many measured slices each set of fresh processes takes: `slices` split over `sets` (at most
 * one set per slice), the first sets taking one more where it does not divide evenly. Two
 * processes of the same build, taking turns, differ in CPU per 304 by where their code and heap
 * happened to land: `bench:ab` of one build against itself read 1.032, 0.998 and 0.924 at 2,000
 * clients. One process per target puts that on the ratio; several average it out.
 */
export function processSets(slices: number, sets: number): number[] {
  if (!Number.isInteger(slices) || slices < 1 || !Number.isInteger(sets) || sets < 1) throw new Error('processSets: slices and sets must be whole numbers from 1');
  const count = Math.min(sets, slices);
  return Array.from({ length: count }, (_, i) => Math.floor(slices / count) + (i < slices % count ? 1 : 0));
}

/** One target's share of one slice: its CPU, idle to idle, and the requests sent to it. */
export interface Slice {
  cpuUs: number;
  requests: number;
  /** Its answers by status (a dear slice of 304s is not a burst of 200s); absent where a caller builds slices itself. */
  statuses?: Record<string, number>;
}

export interface AbSummary {
  /** CPU µs per request over all slices, for A and B. */
  a: number;
  b: number;
  /** b / a. */
  ratio: number;
  /** The lowest and highest b / a of the slices taken in turn (slice i of A against slice i of B). */
  low: number;
  high: number;
}

/** Sums the slices of each target and compares them, pair by pair for the spread. */
export function summarize(a: readonly Slice[], b: readonly Slice[]): AbSummary {
  if (a.length === 0 || a.length !== b.length) throw new Error('summarize: A and B need the same number of slices, at least one');
  const perRequest = (slices: readonly Slice[]): number => {
    const requests = slices.reduce((sum, s) => sum + s.requests, 0);
    return requests > 0 ? slices.reduce((sum, s) => sum + s.cpuUs, 0) / requests : Number.NaN;
  };
  const pairs = a.map((sa, i) => perRequest([b[i] as Slice]) / perRequest([sa]));
  const totalA = perRequest(a);
  const totalB = perRequest(b);
  return { a: totalA, b: totalB, ratio: totalB / totalA, low: Math.min(...pairs), high: Math.max(...pairs) };
}

export interface TurnSettings {
  /** The targets, each with the load it is sent (its own requests, already primed where the scenario primes). */
  targets: ReadonlyArray<{ target: TargetProcess; load: LoadSettings }>;
  scenario: Pick<Scenario, 'expected'>;
  /** Measured slices per target. */
  slices: number;
  /** Seconds per slice. */
  sliceSeconds: number;
  /** Unmeasured slices per target first, taking turns the same way. */
  warmupSlices: number;
}

export interface Turns {
  /** Each target's measured slices, in the order of `targets`. */
  slices: Slice[][];
  /** Answers of the measured slices that the scenario does not expect, and connection errors. */
  unexpected: number;
}

/**
 * The targets with the load each is sent in turns, in their order: the scenario's own sequence of
 * contexts for each, its polling clients primed as in a window.
 */
export async function primedForTurns(
  targets: readonly TargetProcess[],
  scenario: Pick<Scenario, 'create'>,
  input: ScenarioInput,
  { connections, loader, quick }: { connections: number; loader: Loader; quick: boolean },
): Promise<TurnSettings['targets']> {
  const primed: Array<{ target: TargetProcess; load: LoadSettings }> = [];
  for (const target of targets) {
    const run = scenario.create(input);
    const load: LoadSettings = { base: target.base, requests: run.requests, connections, loader };
    await primeClients(load, run, quick);
    primed.push({ target, load });
  }
  return primed;
}

/**
 * The targets take turns, a slice each, the first of a turn rotating every turn (for two: the
 * order flips) so that none always follows another; each slice's CPU is read with its target
 * idle before and after.
 */
export async function takeTurns({ targets, scenario, slices, sliceSeconds, warmupSlices }: TurnSettings): Promise<Turns> {
  if (targets.length < 2) throw new Error('takeTurns: needs at least two targets');
  const measured: Slice[][] = targets.map(() => []);
  let unexpected = 0;
  for (let turn = -warmupSlices; turn < slices; turn++) {
    const first = ((turn % targets.length) + targets.length) % targets.length;
    for (let k = 0; k < targets.length; k++) {
      const i = (first + k) % targets.length;
      const { target, load: settings } = targets[i] as { target: TargetProcess; load: LoadSettings };
      const before = await waitForIdle(target);
      const load = await runLoad({ ...settings, duration: sliceSeconds });
      const after = await waitForIdle(target);
      if (turn < 0) continue;
      unexpected += unexpectedAnswers(scenario, load);
      (measured[i] as Slice[]).push({ cpuUs: after.totalUs - before.totalUs, requests: load.count + load.inFlight, statuses: load.statuses });
    }
  }
  return { slices: measured, unexpected };
}
