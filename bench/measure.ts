/**
 * One measured window against one running target, whatever its shape (an in-process target of
 * the main table, or flag-proxy's CLI with its workers): priming, warm-up, then the window, with
 * the target's CPU read idle-to-idle, its memory, the runner's own CPU and every core's busy time.
 */
import { performance } from 'node:perf_hooks';
import type autocannon from 'autocannon';
import { coreBusyUs, endedChildrenCpuUs, processCpuUs, type CpuTime } from './cores.js';
import { prepareLoad, runLoad, type LoadResult, type LoadSettings } from './load.js';
import type { BenchOptions } from './options.js';
import { trackPeakMemory, type Measurable } from './processes.js';
import type { MemoryParts } from './protocol.js';
import type { Scenario, ScenarioInput, ScenarioRun } from './scenarios.js';

export interface Window {
  load: LoadResult;
  /** The target's CPU µs from idle before the window to idle after it: the work of the requests sent in it. */
  cpuUs: number;
  /** The part of {@link cpuUs} spent in the kernel (system time: sockets, wakeups, page faults). */
  systemUs: number;
  /** The target's CPU µs within the window itself, per process of `target.pids` (from /proc). */
  cpuInWindowByPidUs: number[];
  /** Their sum. */
  cpuInWindowUs: number;
  wallUs: number;
  /** CPU µs of the runner (load generator, wrk's included, and upstream) within the window. */
  runnerUs: number;
  /** Busy µs of each core within the window. */
  coreDeltaUs: number[];
  peakRssBytes: number;
  /** Bytes allocated on the target's V8 heap from idle before the window to idle after it (NaN when not measured). */
  heapBytes: number;
  /** The target's V8 heap in use after a full collection that follows the window (NaN when not measured). */
  liveHeapBytes: number;
  /** Where the target's memory was at the end of the window (bench/heap.ts), when it could tell. */
  memoryParts?: MemoryParts;
  /** How long priming took, in seconds (0 when the scenario has none). */
  primeSeconds: number;
  /** How long the warm-up took, in seconds (see {@link warmUp}). */
  warmupSeconds: number;
  /** A first scenario's warm-up: the target's CPU µs per request in each of its slices, in order. */
  warmupCosts?: number[];
  /** Requests sent in the window: answered, plus those in flight at its end. */
  worked: number;
  /** Answers with a status the scenario does not expect, plus errors. */
  unexpected: number;
  note?: string;
}

/** Waits until the target uses less than `target.idle.belowUs` per sample (at most 5 s) and returns its CPU time then. */
export async function waitForIdle(target: Measurable): Promise<CpuTime> {
  const deadline = performance.now() + 5000;
  let last = await target.cpuTime();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, target.idle.intervalMs));
    const now = await target.cpuTime();
    if (now.totalUs - last.totalUs < target.idle.belowUs || performance.now() > deadline) return now;
    last = now;
  }
}

/** Slices of a first scenario's warm-up compared at a time (see {@link warmUp}): 4 × 0.5 s by default. */
export const SETTLING_SLICES = 4;
/** The fewest slices a first scenario's warm-up runs: 8 s by default. */
export const MIN_WARMUP_SLICES = 16;
/** The most slices a first scenario's warm-up runs: 12 s by default. */
export const MAX_WARMUP_SLICES = 24;

/**
 * The unmeasured load before a window: how long it ran, in seconds, and for a first scenario what
 * each slice cost. A scenario that is not its process's first runs `options.warmup` seconds. The
 * first also warms up the process's JIT, which in flag-proxy's case means optimising the compiled
 * rules: measured on 2 cores, its CPU per request at 1000 flags fell from ~4,000 to ~800 µs over
 * the first 6–10 s of load, in steps with plateaus of up to 4 s between them, at 200 flags from
 * ~2,300 to ~300 µs over 3 s. So the first runs in slices of `options.warmup` seconds until its
 * CPU per request has settled ({@link settled}), at least {@link MIN_WARMUP_SLICES} slices and at
 * most {@link MAX_WARMUP_SLICES}.
 */
export async function warmUp(
  options: BenchOptions,
  target: Measurable,
  settings: LoadSettings,
  first: boolean,
): Promise<{ seconds: number; costs?: number[] }> {
  if (options.warmup <= 0) return { seconds: 0 };
  if (!first) {
    await runLoad({ ...settings, duration: options.warmup });
    return { seconds: options.warmup };
  }
  const costs: number[] = [];
  while (costs.length < MAX_WARMUP_SLICES) {
    const before = await target.cpuTime();
    const load = await runLoad({ ...settings, duration: options.warmup });
    const after = await target.cpuTime();
    costs.push(Math.round((after.totalUs - before.totalUs) / Math.max(1, load.count)));
    if (settled(costs)) break;
  }
  return { seconds: costs.length * options.warmup, costs };
}

/**
 * Whether a warm-up whose slices cost `costs` (CPU µs per request, in order) has settled: it ran
 * {@link MIN_WARMUP_SLICES} slices, and the last {@link SETTLING_SLICES} cost on average no less
 * than 90% of the ones before them. No rule on the costs alone sees a plateau end: comparing one
 * slice with the one before stopped at the first plateau, and 4 against 4 with 8 slices at least
 * stopped after 4.5 s in one round of 1000 flags, which then measured 1,676 µs a request against
 * 978 and 1,205 in the rounds that warmed up for 8 s. Hence the minimum.
 */
export function settled(costs: readonly number[]): boolean {
  const n = costs.length;
  if (n < MIN_WARMUP_SLICES) return false;
  const mean = (from: number, to: number): number => costs.slice(from, to).reduce((a, b) => a + b, 0) / (to - from);
  return mean(n - SETTLING_SLICES, n) >= 0.9 * mean(n - 2 * SETTLING_SLICES, n - SETTLING_SLICES);
}

/** Answers of a load with a status `scenario` does not expect, plus its errors. */
export function unexpectedAnswers(scenario: Pick<Scenario, 'expected'>, load: LoadResult): number {
  const expected = scenario.expected.reduce((sum, status) => sum + (load.statuses[status] ?? 0), 0);
  return load.count - expected + load.errors;
}

/**
 * A note when wrk ran out of the requests drawn for a window of requests that differ one from the
 * next (unique contexts, a population's polls) and sent them again from the first: the window then
 * repeated what it meant to send once, which an answer cache may serve for less.
 */
export function wrapped(requests: readonly autocannon.Request[], load: LoadResult): string | undefined {
  if (!load.wraps || !requests.some((request) => request.setupRequest !== undefined)) return undefined;
  return `the requests drawn for the window ran out ${load.wraps} time${load.wraps === 1 ? '' : 's'} and were sent again`;
}

/**
 * Sends a scenario's priming requests, if it has any (each polling client's first request, for
 * its ETag): bounded in time, `run.primeSeconds` or 6 s (3 in a quick run), so a target too slow to
 * answer every client once is then polled by the clients it answered.
 */
export async function primeClients(settings: LoadSettings, run: ScenarioRun, quick: boolean): Promise<void> {
  if (run.prime) await runLoad({ ...settings, amount: run.prime, maxSeconds: run.primeSeconds ?? (quick ? 3 : 6) });
}

/**
 * One window. `afterPriming`, when given, runs once priming is done (a change upstream, say), and
 * then every client is primed once more: what the window measures is what follows that.
 */
export async function measureWindow(
  options: BenchOptions,
  target: Measurable,
  scenario: Scenario,
  input: ScenarioInput,
  first: boolean,
  afterPriming?: () => Promise<void>,
): Promise<Window> {
  const run = scenario.create(input);
  const settings = { base: target.base, requests: run.requests, connections: options.connections, loader: options.loader };
  // A target too slow to be primed by every client is polled by those it answered (the report notes how many).
  const primeStarted = performance.now();
  await primeClients(settings, run, options.quick);
  if (afterPriming) {
    await afterPriming();
    await primeClients(settings, run, options.quick);
  }
  const primeSeconds = run.prime ? (performance.now() - primeStarted) / 1000 : 0;
  const warmup = await warmUp(options, target, settings, first);
  const note = run.beforeMeasure?.();
  const send = prepareLoad({ ...settings, duration: options.duration });
  // A window that fails (the target died, say) leaves no request files and no memory sampling behind.
  let memory: ReturnType<typeof trackPeakMemory> | undefined;
  try {
    // CPU is read with the target idle at both ends, so the window holds the work of exactly the
    // requests sent in it: those answered, plus those still in flight when it closed (the target
    // finishes them after autocannon hangs up).
    const cpuBefore = await waitForIdle(target);
    target.heap?.start();
    memory = trackPeakMemory(target.pids);
    const procBefore = target.pids.map(processCpuUs);
    const coresBefore = coreBusyUs();
    const runnerBefore = process.cpuUsage();
    const childrenBefore = endedChildrenCpuUs();
    const started = performance.now();
    const load = await send.start();
    const wallUs = (performance.now() - started) * 1000;
    const runner = process.cpuUsage(runnerBefore);
    // wrk, when it sent the load, has exited and been waited for by now.
    const loadGeneratorUs = endedChildrenCpuUs() - childrenBefore;
    const coresAfter = coreBusyUs();
    // Read from /proc at the instant the window closes (an IPC question would wait behind the
    // requests still queued in the target); tick resolution (10 ms) is fine for a share of the window.
    const procAtStop = target.pids.map(processCpuUs);
    const peakRssBytes = memory.stop();
    memory = undefined;
    const cpuAfter = await waitForIdle(target);
    // After the idle read: the full collection it triggers is not part of the window's CPU.
    const heap: { allocatedBytes: number; liveBytes: number; parts?: MemoryParts } = target.heap
      ? await target.heap.stop()
      : { allocatedBytes: Number.NaN, liveBytes: Number.NaN };
    const heapBytes = heap.allocatedBytes;
    const cpuInWindowByPidUs = procAtStop.map((after, i) => after - (procBefore[i] ?? 0));
    const notes = [note, wrapped(run.requests, load)].filter((n) => n !== undefined).join('; ');
    return {
      load,
      cpuUs: cpuAfter.totalUs - cpuBefore.totalUs,
      systemUs: cpuAfter.systemUs - cpuBefore.systemUs,
      cpuInWindowByPidUs,
      cpuInWindowUs: cpuInWindowByPidUs.reduce((a, b) => a + b, 0),
      wallUs,
      runnerUs: runner.user + runner.system + loadGeneratorUs,
      coreDeltaUs: coresAfter.map((busy, core) => busy - (coresBefore[core] ?? 0)),
      peakRssBytes,
      heapBytes,
      liveHeapBytes: heap.liveBytes,
      ...(heap.parts ? { memoryParts: heap.parts } : {}),
      primeSeconds,
      warmupSeconds: warmup.seconds,
      ...(warmup.costs ? { warmupCosts: warmup.costs } : {}),
      worked: load.count + load.inFlight,
      unexpected: unexpectedAnswers(scenario, load),
      ...(notes ? { note: notes } : {}),
    };
  } finally {
    send.discard();
    memory?.cancel();
  }
}
