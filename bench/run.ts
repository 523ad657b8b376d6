/**
 * `npm run bench`: flag-proxy side by side with @unleash/proxy 1.4.19 and a bare node:http server.
 *
 * For each flag count: start an in-memory upstream with a realistic flag set, check that the
 * targets answer correctly (aborting if not), then run every scenario against every target, each
 * target in its own process on core 1 while this process (load generator and upstream) stays on
 * core 0, interleaving the targets' order across rounds; then flag-proxy's own CLI as one process
 * through the windows @unleash/proxy ran, for its memory (bench/cli-memory.ts). Then, at the first
 * flag count, flag-proxy's own CLI with FLAG_PROXY_WORKERS=1 and 2 (bench/cluster.ts). Writes bench/results.md (and a JSON
 * file of every round beside it) and prints the table. See bench/README.md.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createTestFlagServer, type TestFlagServer } from '../src/testing/index.js';
import { sampleCoreLoad } from './cores.js';
import { buildTargets, type BuiltTargets } from './build.js';
import { runCliMemory } from './cli-memory.js';
import { CLUSTER_SCENARIOS, runCluster } from './cluster.js';
import { APP_NAME, CLIENT_KEY, generateFlags, namedToggles, UPSTREAM_TOKEN } from './flags.js';
import { measureWindow } from './measure.js';
import { renderChart } from './chart.js';
import { checkFileLimit, describeFanout, FileLimitError, runFanout, type FanoutResult } from './fanout.js';
import { runInProcess, type InProcessResult } from './in-process.js';
import { INTERLEAVED_SCENARIOS, PREDECESSOR_GOALS, primedForTurns, processSets, summarize, takeTurns, type InterleavedRow, type Slice } from './interleave.js';
import { runRefresh, type RefreshResult } from './refresh.js';
import { givenSettings, ONE_ROUND_ABOVE, parseOptions, quoteShell, UNLEASH_POLL_LIMIT, usage, type BenchOptions, type TargetName } from './options.js';
import { wrkVersion } from './wrk.js';
import {
  killAllTargets,
  METRICS_INTERVAL_MS,
  pinningAvailable,
  pinSelf,
  readMemory,
  REFRESH_INTERVAL_MS,
  RUNNER_CORE,
  startTarget,
  TARGET_CORE,
  targetConfig,
  type TargetProcess,
} from './processes.js';
import type { TargetConfig } from './protocol.js';
import { renderReport, rowName, type CliMemoryMeasurement, type ClusterMeasurement, type ClusterMeta, type IdleMemory, type Measurement, type ReportMeta } from './report.js';
import { FLAG_PROXY_ONLY, POLLING, SCENARIOS, type Scenario, type ScenarioInput } from './scenarios.js';
import { adoptUpstreamChange, bareAnswers, checkTarget, verifyAgainstReference, type Reference } from './verify.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface Context {
  options: BenchOptions;
  built: BuiltTargets;
  core: number | undefined;
  /** Cores of the machine (nproc). */
  cores: number;
  measurements: Measurement[];
  /** Whether the cluster comparison runs (at the first flag count). */
  withCluster: boolean;
  cluster: ClusterMeasurement[];
  clusterMeta: ClusterMeta | undefined;
  /** Each target process's RSS once started and checked, before any load. */
  idle: IdleMemory[];
  /** The refresh rows, one per flag count. */
  refresh: RefreshResult[];
  /** Whether the CLI's memory rows run (at every flag count, after the main rounds). */
  withCliMemory: boolean;
  cliMemory: CliMemoryMeasurement[];
  /** The CLI's idle RSS in those rows, one per flag count. */
  cliIdle: IdleMemory[];
  /** The rows taken in turns with the bare server, at the first flag count. */
  interleaved: InterleavedRow[];
  warnings: string[];
}

const startedAt = performance.now();
const log = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
/** Seconds since start, for the progress lines. */
const clock = (): string => `[${((performance.now() - startedAt) / 1000).toFixed(0).padStart(3)} s]`;

function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

function gitDescription(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    return `${commit}${dirty ? ' + uncommitted changes in src/' : ''}`;
  } catch {
    return 'unknown commit';
  }
}

function commandLine(argv: string[]): string {
  const settings = givenSettings(process.env);
  const viaNpm = process.env.npm_lifecycle_event === 'bench';
  const base = viaNpm ? 'npm run bench' : 'npx tsx bench/run.ts';
  const args = argv.map(quoteShell).join(' ');
  return [...settings, base].join(' ') + (args ? (viaNpm ? ` -- ${args}` : ` ${args}`) : '');
}

function describeSource(from: string): string {
  if (from === 'dist') return 'dist/ as built by npm run build';
  if (from.startsWith('git:')) return `src/ at ${from.slice(4)} (${gitRevision(from.slice(4))}), bundled by esbuild`;
  return 'src/ bundled by esbuild into bench/.build';
}

function gitRevision(revision: string): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', revision], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

const formatNs = (ns: number): string => (ns < 10_000 ? `${Math.round(ns)} ns` : `${(ns / 1000).toFixed(1)} µs`);

const rotate = <T>(list: T[], by: number): T[] => list.map((_, i) => list[(i + by) % list.length] as T);

async function withTarget<T>(ctx: Context, name: TargetName, config: TargetConfig, use: (target: TargetProcess) => Promise<T>): Promise<T> {
  const target = await startTarget(name, { entry: ctx.built.entries[name], config, core: ctx.core, nodeArgs: ctx.options.nodeArgs });
  try {
    return await use(target);
  } finally {
    await target.stop();
  }
}

/** One window of a round: a scenario, and the polling population for the polling ones. */
interface RoundWindow {
  scenario: Scenario;
  clients?: number;
}

const windowKey = (w: RoundWindow): string => `${w.scenario.name}@${w.clients ?? ''}`;

/**
 * One round: every target of `order` in a fresh process of its own, all started (and `prepare`d)
 * first, then taking turns window by window in that order, each process stopped after its last
 * window. The windows a target runs are a subsequence of flag-proxy's (every target's rows first,
 * see `windows`), so that list gives the turns. A row's targets are thus measured seconds apart
 * rather than a process's whole run apart: the machine's slower spells (whole minutes, on a shared
 * host) then fall on all of them alike instead of on one target's every row.
 */
async function inTurns(
  ctx: Context,
  order: TargetName[],
  config: TargetConfig,
  round: number,
  windows: (name: TargetName, round: number) => RoundWindow[],
  prepare: (name: TargetName, target: TargetProcess) => Promise<void>,
  run: (name: TargetName, target: TargetProcess, window: RoundWindow, first: boolean) => Promise<void>,
): Promise<void> {
  const running = new Map<TargetName, TargetProcess>();
  const own = new Map(order.map((name) => [name, windows(name, round)] as const));
  try {
    for (const name of order) {
      const target = await startTarget(name, { entry: ctx.built.entries[name], config, core: ctx.core, nodeArgs: ctx.options.nodeArgs });
      running.set(name, target);
      await prepare(name, target);
    }
    for (const turn of windows('flag-proxy', round)) {
      for (const name of order) {
        const list = own.get(name) ?? [];
        const index = list.findIndex((w) => windowKey(w) === windowKey(turn));
        const target = running.get(name);
        if (index === -1 || target === undefined) continue;
        await run(name, target, list[index] as RoundWindow, index === 0);
        if (index === list.length - 1) {
          running.delete(name);
          await target.stop();
        }
      }
    }
  } finally {
    for (const target of running.values()) await target.stop();
  }
}

/** The CLI's variables for what the in-process targets get in code (the cluster and memory rows). */
function cliVariables(upstream: TestFlagServer): Record<string, string> {
  return {
    FLAG_URL: upstream.url,
    FLAG_API_TOKEN: upstream.token,
    FLAG_PROXY_CLIENT_KEYS: CLIENT_KEY,
    FLAG_APP_NAME: APP_NAME,
    FLAG_FETCH_INTERVAL: String(REFRESH_INTERVAL_MS),
    FLAG_METRICS_INTERVAL: String(METRICS_INTERVAL_MS),
    LOG_LEVEL: 'error',
  };
}

async function measure(
  ctx: Context,
  target: TargetProcess,
  scenario: Scenario,
  input: ScenarioInput,
  flags: number,
  round: number,
  first: boolean,
  clients?: number,
  afterPriming?: () => Promise<void>,
): Promise<Measurement> {
  const w = await measureWindow(ctx.options, target, scenario, input, first, afterPriming);
  const { load, wallUs } = w;
  // What else ran on the two cores: their busy time minus our own processes' CPU time.
  const others =
    ctx.core === undefined
      ? undefined
      : {
          targetCore: Math.max(0, ((w.coreDeltaUs[ctx.core] ?? 0) - w.cpuInWindowUs) / wallUs),
          runnerCore: Math.max(0, ((w.coreDeltaUs[RUNNER_CORE] ?? 0) - w.runnerUs) / wallUs),
        };
  const m: Measurement = {
    flags,
    scenario: scenario.name,
    ...(clients !== undefined ? { clients } : {}),
    target: target.name,
    round,
    count: load.count,
    inFlight: load.inFlight,
    seconds: load.seconds,
    rps: load.rps,
    p50: load.p50,
    p99: load.p99,
    cpuUsPerRequest: w.worked > 0 ? w.cpuUs / w.worked : Number.NaN,
    systemUsPerRequest: w.worked > 0 ? w.systemUs / w.worked : Number.NaN,
    cpuBusy: w.cpuInWindowUs / wallUs,
    runnerBusy: w.runnerUs / wallUs,
    ...(others ? { otherLoad: others } : {}),
    peakRssBytes: w.peakRssBytes,
    heapBytesPerRequest: w.worked > 0 ? w.heapBytes / w.worked : Number.NaN,
    liveHeapBytes: w.liveHeapBytes,
    ...(w.memoryParts ? { memoryParts: w.memoryParts } : {}),
    ...(w.primeSeconds > 0 ? { primeSeconds: w.primeSeconds } : {}),
    ...(first ? { warmupSeconds: w.warmupSeconds } : {}),
    ...(w.warmupCosts ? { warmupCosts: w.warmupCosts } : {}),
    statuses: load.statuses,
    errors: load.errors,
    unexpected: w.unexpected,
    ...(w.note ? { note: w.note } : {}),
  };
  if (w.unexpected > 0) {
    const warning = `${target.name}, ${scenario.name}${clients !== undefined ? `@${clients}` : ''}, ${flags} flags, round ${round + 1}: ${w.unexpected} of ${load.count} answers were unexpected (statuses ${JSON.stringify(load.statuses)}, ${load.errors} errors)`;
    ctx.warnings.push(warning);
    log(`  ⚠ ${warning}`);
  }
  return m;
}

async function benchFlagCount(ctx: Context, flags: number, first: boolean, flagSets: ReportMeta['flagSets']): Promise<void> {
  const { options } = ctx;
  const { features, segments } = generateFlags(flags);
  const named = namedToggles(features);
  const upstream = await createTestFlagServer({ features, segments, clientTokens: [UPSTREAM_TOKEN] });
  try {
    log(`\n${clock()} == ${flags} flags: verifying answers before timing`);
    const config = targetConfig(upstream, ctx.built.flagProxyModule);
    // flag-proxy's answers are the reference (and the bare server's bodies), so it is always started here.
    const reference: Reference = await withTarget(ctx, 'flag-proxy', config, (ours) =>
      withTarget(ctx, 'unleash-proxy', config, (theirs) => verifyAgainstReference(ours.base, theirs.base, CLIENT_KEY, named)),
    );
    const { stats } = reference;
    const line =
      `${features.filter((f) => f.enabled).length} of ${flags} flags enabled, ${segments.length} segments. ` +
      `The GET answer for a typical context lists ${stats.enabled} toggles (${stats.withPayload} with a variant payload) in ${(stats.fullBytes / 1024).toFixed(1)} kB` +
      `${stats.unleashFullBytes !== undefined ? ` (@unleash/proxy: ${(stats.unleashFullBytes / 1024).toFixed(1)} kB)` : ''}; ` +
      `the 10-name POST answer is ${stats.namedBytes} B. The bare server returns exactly these bytes.`;
    flagSets.push({ flags, line });
    log(`${clock()}    ok: flag-proxy and @unleash/proxy agree on every sample. ${line}`);
    // The cluster rows poll with the smallest population.
    const input: ScenarioInput = { clientKey: CLIENT_KEY, namedToggles: named, pollClients: options.pollClients[0] as number };
    const scenarios = SCENARIOS.filter((s) => options.scenarios.includes(s.name) && (s.perFlagCount || first) && flags <= (s.maxFlags ?? flags));
    // One window per scenario, and one per population for polling (ascending, in the same process,
    // so that memory kept from a smaller population shows in the larger one's peak). Windows that
    // not every target runs (flag-proxy's own scenarios, populations @unleash/proxy is not primed
    // with) come after all the others: a process keeps much of what earlier windows grew its memory
    // to, and each row every target runs then follows the same load in every target's process.
    const everyTargetRuns = (w: RoundWindow): boolean =>
      !FLAG_PROXY_ONLY.includes(w.scenario.name) && (w.clients === undefined || w.clients <= UNLEASH_POLL_LIMIT);
    const windows = (name: TargetName, round: number): RoundWindow[] => {
      const all = scenarios.flatMap((scenario): RoundWindow[] =>
        FLAG_PROXY_ONLY.includes(scenario.name) && name !== 'flag-proxy'
          ? []
          : !POLLING.includes(scenario.name)
          ? [{ scenario }]
          : options.pollClients
              .filter((n) => (name !== 'unleash-proxy' || n <= UNLEASH_POLL_LIMIT) && (round === 0 || n <= ONE_ROUND_ABOVE))
              .map((clients) => ({ scenario, clients })),
      );
      return [...all.filter(everyTargetRuns), ...all.filter((w) => !everyTargetRuns(w))];
    };
    const withBare: TargetConfig = { ...config, bare: bareAnswers(reference) };
    const mainRounds = options.cluster === 'only' || options.inProcess === 'only' || scenarios.length === 0 ? 0 : options.rounds;
    for (let round = 0; round < mainRounds; round++) {
      // A target with nothing to run here (the OFREP rows alone, for @unleash/proxy) is not started.
      const order = rotate(options.targets, round).filter((name) => windows(name, round).length > 0);
      log(`${clock()} -- ${flags} flags, round ${round + 1}/${options.rounds}: ${order.join(', ')}, taking turns window by window`);
      await inTurns(ctx, order, withBare, round, windows, async (name, target) => {
        await checkTarget(name, target.base, reference, CLIENT_KEY, named);
        await new Promise((resolve) => setTimeout(resolve, 200));
        ctx.idle.push({ flags, target: name, round, rssBytes: readMemory(target.pid).rss });
      }, async (name, target, { scenario, clients }, first) => {
        const change = scenario.upstream;
        // A few refreshes' time: the target fetches the upstream every REFRESH_INTERVAL_MS.
        const timeout = 3 * REFRESH_INTERVAL_MS;
        const add = async (): Promise<void> => {
          if (change) await adoptUpstreamChange(target.base, CLIENT_KEY, { apply: () => change.add(upstream), toggle: change.toggle, listed: true }, timeout);
        };
        if (!change?.afterPriming) await add();
        const windowInput = clients === undefined ? input : { ...input, pollClients: clients };
        const m = await measure(ctx, target, scenario, windowInput, flags, round, first, clients, change?.afterPriming ? add : undefined);
        if (change) await adoptUpstreamChange(target.base, CLIENT_KEY, { apply: () => upstream.removeFeature(change.toggle), toggle: change.toggle, listed: false }, timeout);
        ctx.measurements.push(m);
        const label = clients === undefined ? scenario.name : `${scenario.name}@${clients}`;
        log(
          `${clock()}    ${name.padEnd(14)} ${label.padEnd(18)} ${Math.round(m.rps).toLocaleString('en-US').padStart(8)} req/s` +
            `  p50 ${m.p50.toFixed(2).padStart(7)} ms  p99 ${m.p99.toFixed(2).padStart(7)} ms` +
            `  ${m.cpuUsPerRequest.toFixed(0).padStart(6)} µs/req  CPU ${(m.cpuBusy * 100).toFixed(0).padStart(3)}%  RSS ${(m.peakRssBytes / 1048576).toFixed(0).padStart(4)} MB` +
            `  load-gen ${(m.runnerBusy * 100).toFixed(0).padStart(3)}%` +
            `  heap ${(m.heapBytesPerRequest / 1024).toFixed(1)} kB/req` +
            (m.primeSeconds !== undefined ? `  primed in ${m.primeSeconds.toFixed(1)} s` : '') +
            (m.warmupSeconds !== undefined ? `  warmed up in ${m.warmupSeconds.toFixed(1)} s` : '') +
            (m.otherLoad ? `  others ${(m.otherLoad.targetCore * 100).toFixed(0)}%/${(m.otherLoad.runnerCore * 100).toFixed(0)}%` : ''),
        );
      });
    }
    if (first && mainRounds > 0 && options.interleaved > 0 && options.targets.includes('flag-proxy') && options.targets.includes('bare-node')) {
      const rows = scenarios
        .filter((s) => INTERLEAVED_SCENARIOS.includes(s.name))
        .flatMap((scenario): RoundWindow[] => (POLLING.includes(scenario.name) ? options.pollClients.map((clients) => ({ scenario, clients })) : [{ scenario }]));
      if (rows.length > 0) await inTurnsWithBare(ctx, flags, rows, { config, withBare, reference, named, input });
    }
    if (ctx.withCliMemory && ctx.built.cli && mainRounds > 0) {
      log(`${clock()} -- ${flags} flags: flag-proxy's CLI as one process, through @unleash/proxy's windows, for its memory`);
      const result = await runCliMemory({
        options,
        cli: ctx.built.cli,
        flags,
        core: ctx.core === undefined ? undefined : String(ctx.core),
        variables: cliVariables(upstream),
        reference,
        clientKey: CLIENT_KEY,
        named,
        input,
        windows: windows('unleash-proxy', 0),
        log: (line) => log(`${clock()} ${line}`),
        warnings: ctx.warnings,
      });
      ctx.cliMemory.push(...result.measurements);
      ctx.cliIdle.push(result.idle);
    }
    if (options.refresh && options.cluster !== 'only' && options.targets.includes('flag-proxy')) {
      // One more change than measured comes first (a warm-up): odd here, so each side makes an even number.
      const changes = options.quick ? 5 : 15;
      log(`${clock()} -- ${flags} flags: adopting a changed flag set, flag-proxy and unleash-client, ${changes} changes each`);
      const result = await runRefresh(
        ctx.built.refresh,
        { flagProxyModule: ctx.built.flagProxyModule, upstream, flags, flag: features[0] as { name: string; enabled: boolean }, changes },
        ctx.core,
        options.nodeArgs,
      );
      ctx.refresh.push(result);
      for (const [side, figure] of [['flag-proxy', result.flagProxy], ['unleash-client', result.unleashClient]] as const) {
        log(
          `${clock()}    ${side.padEnd(14)} adopted in ${figure.adoptMs.toFixed(1).padStart(6)} ms  longest block ${figure.blockMs.toFixed(1).padStart(6)} ms (worst ${figure.worstBlockMs.toFixed(1)} ms)`,
        );
      }
    }
    if (ctx.withCluster && first && ctx.built.cli) {
      const cores = ctx.cores;
      const { measurements, meta } = await runCluster({
        options,
        cli: ctx.built.cli,
        source: describeCliSource(options.flagProxyFrom),
        flags,
        cores,
        placement: ctx.core === undefined ? undefined : { runner: String(RUNNER_CORE), target: String(ctx.core), all: `0-${cores - 1}` },
        // The same settings the in-process target gets in code, as the CLI's variables.
        variables: cliVariables(upstream),
        reference,
        clientKey: CLIENT_KEY,
        named,
        input,
        scenarios,
        log: (line) => log(`${clock()} ${line}`),
        warnings: ctx.warnings,
      });
      ctx.cluster.push(...measurements);
      ctx.clusterMeta = meta;
    }
  } finally {
    await upstream.close();
  }
}

/** One row's slices taken in turns, gathered over the sets of processes. */
interface TakenRow {
  bare: Slice[];
  ours: Slice[];
  theirs: Slice[];
  unexpected: number;
  /** flag-proxy / bare in each set. */
  setRatios: number[];
}

/** What {@link inTurnsWithBare} hands each set of processes. */
interface TurnsGiven {
  config: TargetConfig;
  withBare: TargetConfig;
  reference: Reference;
  named: string[];
  input: ScenarioInput;
}

/**
 * The rows issue 16 judges against the bare server, again, with flag-proxy and the bare server
 * taking turns on the targets' core in 1 s slices (bench/interleave.ts): the windows of the rounds
 * compare targets seconds apart, and on this kind of machine a row's three rounds then read from
 * 1.1× to 2.3× the bare server for the same build; slices taken in turn put the drift on all
 * alike. @unleash/proxy takes its turns too in the rows whose goals compare with it (unique
 * contexts, and the polling populations it is primed with). The slices are shared out over
 * `--turn-processes` sets of fresh processes, one process per target each: a process's speed
 * depends on where its code and heap landed, not only on the build (`processSets`). In each set
 * the rows run in the table's order in the same processes (get-unique first, which also warms up
 * the JIT), each after unmeasured slices.
 */
async function inTurnsWithBare(ctx: Context, flags: number, rows: readonly RoundWindow[], given: TurnsGiven): Promise<void> {
  const { options } = ctx;
  const slices = options.interleaved;
  const sets = processSets(slices, options.turnProcesses);
  const warmupSlices = options.quick ? 2 : 8;
  const withPredecessor = options.targets.includes('unleash-proxy');
  log(
    `${clock()} -- ${flags} flags: flag-proxy and the bare server${withPredecessor ? ' (and @unleash/proxy, where a goal compares with it)' : ''} taking turns on one core, ` +
      `${slices} slices of 1 s each per row over ${sets.length} set${sets.length === 1 ? '' : 's'} of fresh processes (${sets.join(' + ')}), each after ${warmupSlices} unmeasured`,
  );
  const taken: TakenRow[] = rows.map(() => ({ bare: [], ours: [], theirs: [], unexpected: 0, setRatios: [] }));
  for (const [set, setSlices] of sets.entries()) await takeOneSet(ctx, rows, given, taken, { set, slices: setSlices, warmupSlices });
  for (const [i, row] of rows.entries()) recordTurns(ctx, flags, row, taken[i] as TakenRow, warmupSlices);
}

/** Whether @unleash/proxy takes its turns in a row: where a goal compares with it, at populations it is primed with. */
function predecessorIn(options: BenchOptions, row: RoundWindow): boolean {
  return options.targets.includes('unleash-proxy') && PREDECESSOR_GOALS.includes(row.scenario.name) && (row.clients === undefined || row.clients <= UNLEASH_POLL_LIMIT);
}

/** One set of fresh processes takes its share of every row's slices; adds them to `taken`. */
async function takeOneSet(
  ctx: Context,
  rows: readonly RoundWindow[],
  given: TurnsGiven,
  taken: TakenRow[],
  { set, slices, warmupSlices }: { set: number; slices: number; warmupSlices: number },
): Promise<void> {
  const { options } = ctx;
  const running: TargetProcess[] = [];
  const start = async (name: TargetName, config: TargetConfig): Promise<TargetProcess> => {
    const target = await startTarget(name, { entry: ctx.built.entries[name], config, core: ctx.core, nodeArgs: options.nodeArgs });
    running.push(target);
    await checkTarget(name, target.base, given.reference, CLIENT_KEY, given.named);
    return target;
  };
  try {
    const ours = await start('flag-proxy', given.config);
    const bare = await start('bare-node', given.withBare);
    const theirs = rows.some((row) => predecessorIn(options, row)) ? await start('unleash-proxy', given.config) : undefined;
    for (const [i, row] of rows.entries()) {
      const { scenario, clients } = row;
      const rowInput = clients === undefined ? given.input : { ...given.input, pollClients: clients };
      // The bare server first, then flag-proxy, then the predecessor; each gets the scenario's own requests, primed as in a window.
      const participants = [bare, ours, ...(theirs !== undefined && predecessorIn(options, row) ? [theirs] : [])];
      const targets = await primedForTurns(participants, scenario, rowInput, { connections: options.connections, loader: options.loader, quick: options.quick });
      const turns = await takeTurns({ targets, scenario, slices, sliceSeconds: 1, warmupSlices });
      const [bareSlices, ourSlices, theirSlices] = turns.slices as [Slice[], Slice[], Slice[] | undefined];
      const gathered = taken[i] as TakenRow;
      gathered.bare.push(...bareSlices);
      gathered.ours.push(...ourSlices);
      if (theirSlices) gathered.theirs.push(...theirSlices);
      gathered.unexpected += turns.unexpected;
      const summary = summarize(bareSlices, ourSlices);
      gathered.setRatios.push(summary.ratio);
      log(
        `${clock()}    ${rowName({ scenario: scenario.name, clients }).padEnd(18)} set ${set + 1}: flag-proxy ${summary.b.toFixed(1).padStart(7)} µs/req  bare ${summary.a.toFixed(1).padStart(7)} µs/req  ` +
          `${summary.ratio.toFixed(3)}× (slices ${summary.low.toFixed(2)}–${summary.high.toFixed(2)}×)` +
          (theirSlices ? `  @unleash/proxy ${summarize(ourSlices, theirSlices).b.toFixed(0)} µs/req` : ''),
      );
    }
  } finally {
    for (const target of running) await target.stop();
  }
}

/** A row's slices over every set, summed up into the report's row. */
function recordTurns(ctx: Context, flags: number, { scenario, clients }: RoundWindow, row: TakenRow, warmupSlices: number): void {
  const summary = summarize(row.bare, row.ours);
  const predecessor = row.theirs.length > 0 ? summarize(row.ours, row.theirs) : undefined;
  const label = rowName({ scenario: scenario.name, clients });
  ctx.interleaved.push({
    flags,
    scenario: scenario.name,
    ...(clients === undefined ? {} : { clients }),
    flagProxyUs: summary.b,
    bareUs: summary.a,
    ratio: summary.ratio,
    low: summary.low,
    high: summary.high,
    sliceSeconds: 1,
    warmupSlices,
    setRatios: row.setRatios,
    unexpected: row.unexpected,
    bare: row.bare,
    flagProxy: row.ours,
    ...(predecessor ? { unleashUs: predecessor.b, unleash: row.theirs } : {}),
  });
  if (row.unexpected > 0) ctx.warnings.push(`Taking turns with the bare server, ${label}: ${row.unexpected} answers were not ${scenario.expected.join(' or ')}.`);
  log(
    `${clock()}    ${label.padEnd(18)} all sets: flag-proxy ${summary.b.toFixed(1).padStart(7)} µs/req  bare ${summary.a.toFixed(1).padStart(7)} µs/req  ` +
      `${summary.ratio.toFixed(3)}× (sets ${row.setRatios.map((r) => r.toFixed(2)).join(', ')})` +
      (predecessor ? `  @unleash/proxy ${predecessor.b.toFixed(0)} µs/req: ${predecessor.ratio.toFixed(1)}× flag-proxy's` : ''),
  );
}

/** How long the first scenarios' warm-ups took, per target: `flag-proxy 4.0–6.5 s, ...`. */
function firstWarmups(measurements: readonly Measurement[]): string {
  const byTarget = new Map<string, number[]>();
  for (const m of measurements) {
    if (m.warmupSeconds === undefined) continue;
    const seen = byTarget.get(m.target) ?? [];
    seen.push(m.warmupSeconds);
    byTarget.set(m.target, seen);
  }
  if (byTarget.size === 0) return 'none ran';
  return [...byTarget].map(([target, seconds]) => `${target} ${Math.min(...seconds).toFixed(1)}–${Math.max(...seconds).toFixed(1)} s`).join(', ');
}

function describeCliSource(from: string): string {
  if (from === 'dist') return 'dist/cli.js as built by npm run build';
  if (from.startsWith('git:')) return `src/cli.ts at ${from.slice(4)}, bundled by esbuild`;
  return 'src/cli.ts bundled by esbuild into bench/.build';
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    log(usage());
    return 0;
  }
  const options = parseOptions(argv, process.env);
  const started = performance.now();
  const command = commandLine(argv);
  const warnings: string[] = [];

  // A benchmark on a busy machine measures the machine: say so at once, so the run can be stopped.
  const before = await sampleCoreLoad(1000);
  const busyAtStart = before.map((load, core) => `core ${core} ${Math.round(load * 100)}%`).join(', ');
  if (before.some((load) => load > 0.2)) log(`WARNING: the machine is busy before the run (${busyAtStart}); figures will be low and noisy.`);

  // The cluster rows are flag-proxy's: by default they come with it, and BENCH_CLUSTER=only asks for them alone.
  const withCluster =
    options.inProcess !== 'only' &&
    options.fanout !== 'only' &&
    options.scenarios.some((s) => CLUSTER_SCENARIOS.includes(s)) &&
    (options.cluster === 'only' || (options.cluster === 'on' && options.targets.includes('flag-proxy')));
  if (options.cluster === 'only' && !withCluster) throw new Error(`BENCH_CLUSTER=only needs one of the scenarios ${CLUSTER_SCENARIOS.join(', ')}`);
  // Before anything is built or timed: a fan-out the open-file limit cannot hold would only fail at
  // the end. Asked for alone it stops the run; as part of a run (where a 1024 default is common) it
  // is skipped with a warning, so the rest still runs.
  let fanoutSkipped: string | undefined;
  if (options.fanout === 'only') checkFileLimit(options.fanoutStreams);
  else if (options.fanout === 'on') {
    try {
      checkFileLimit(options.fanoutStreams);
    } catch (error) {
      if (!(error instanceof FileLimitError)) throw error;
      fanoutSkipped = `SSE fan-out skipped: ${error.message}`;
      warnings.push(fanoutSkipped);
      log(`WARNING: ${fanoutSkipped}`);
    }
  }
  log(`Building the targets (flag-proxy from ${describeSource(options.flagProxyFrom)})...`);
  // The CLI's memory rows come with flag-proxy in the main table.
  const withCliMemory =
    options.cliMemory && options.targets.includes('flag-proxy') && options.cluster !== 'only' && options.inProcess !== 'only' && options.fanout !== 'only';
  const built = await buildTargets(ROOT, options.flagProxyFrom, withCluster || withCliMemory);

  const cores = os.availableParallelism();
  let core: number | undefined;
  let pinning: string;
  const available = pinningAvailable(cores);
  if (options.pin && available.ok) {
    pinSelf(RUNNER_CORE);
    core = TARGET_CORE;
    pinning = 'runner (load generator and upstream) pinned to core 0, each target process to core 1 (`taskset`)';
  } else {
    const why = options.pin ? (available.reason ?? 'unknown') : 'BENCH_PIN=0';
    pinning = `not pinned (${why}): runner and targets share the cores, figures are less comparable`;
    warnings.push(`Processes were not pinned to cores (${why}).`);
    log(`WARNING: ${pinning}`);
  }

  const ctx: Context = {
    options,
    built,
    core,
    cores,
    measurements: [],
    withCluster,
    cluster: [],
    clusterMeta: undefined,
    idle: [],
    refresh: [],
    withCliMemory,
    cliMemory: [],
    cliIdle: [],
    interleaved: [],
    warnings,
  };
  const flagSets: ReportMeta['flagSets'] = [];
  if (options.inProcess !== 'only' && options.fanout !== 'only') {
    for (const [i, flags] of options.flagCounts.entries()) await benchFlagCount(ctx, flags, i === 0, flagSets);
  }
  let inProcess: InProcessResult | undefined;
  if (options.inProcess !== 'off' && options.fanout !== 'only') {
    const flags = options.flagCounts[0] as number;
    const config = { flagProxyModule: built.flagProxyModule, flags, rounds: options.quick ? 3 : 9, batchMs: options.quick ? 100 : 250 };
    log(`\n${clock()} == in process, ${flags} flags: proxy.isEnabled / getVariant / evaluate against unleash-client, ${config.rounds} rounds`);
    inProcess = await runInProcess(built.inProcess, config, core, options.nodeArgs);
    for (const row of inProcess.rows) {
      log(
        `${clock()}    ${row.name.padEnd(10)} flag-proxy ${formatNs(row.flagProxy.ns).padStart(9)}  unleash-client ${formatNs(row.unleashClient.ns).padStart(9)}` +
          `  ${(row.unleashClient.ns / row.flagProxy.ns).toFixed(1)}× faster`,
      );
    }
    if (inProcess.differences > 0) {
      const warning = `In process: flag-proxy and unleash-client differed on ${inProcess.differences} of ${inProcess.checked} answers compared before timing.`;
      warnings.push(warning);
      log(`  ⚠ ${warning}`);
    }
  }

  let fanout: FanoutResult[] | undefined;
  if (options.fanout !== 'off' && fanoutSkipped === undefined) {
    const flags = options.flagCounts[0] as number;
    fanout = [];
    // The proxy's default pacing of refetch notices, then every stream told at once.
    for (const noticesPerSecond of [undefined, 0]) {
      const pacing = noticesPerSecond === undefined ? 'default pacing' : 'every stream told at once';
      log(`\n${clock()} == OFREP SSE fan-out, ${flags} flags: ${options.fanoutStreams.toLocaleString('en-US')} streams on one flag-proxy process, ${pacing}`);
      const result = await runFanout({
        flagProxyModule: built.flagProxyModule,
        entry: built.entries['flag-proxy'],
        streams: options.fanoutStreams,
        flags,
        core,
        nodeArgs: options.nodeArgs,
        noticesPerSecond,
        log: (line) => log(`${clock()} ${line}`),
      });
      fanout.push(result);
      log(`${clock()}    ${describeFanout(result)}`);
      if (result.open < result.requested || result.notified < result.open || result.refetched < result.notified) {
        const warning = `SSE fan-out (${pacing}): ${result.open} of ${result.requested} streams opened, ${result.notified} of them notified, ${result.refetched} refetched (answers by status: ${JSON.stringify(result.refetchStatuses)}).`;
        warnings.push(warning);
        log(`  ⚠ ${warning}`);
      }
    }
  }

  const runtimeSeconds = (performance.now() - started) / 1000;
  const cpuModel = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  const meta: ReportMeta = {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    command,
    machine: `${cores} cores (nproc), ${cpuModel}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GB, Linux ${os.release()}`,
    node: process.version,
    pinning,
    software:
      `flag-proxy ${(JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version} ` +
      `${options.flagProxyFrom.startsWith('git:') ? '' : `@ ${gitDescription()} `}(${describeSource(options.flagProxyFrom)}, run by plain node), ` +
      `@unleash/proxy ${packageVersion('@unleash/proxy')} (createApp, clientMode 'new'), unleash-client ${packageVersion('unleash-client')}, ${options.loader === 'wrk' ? `wrk ${wrkVersion() ?? '?'} and ` : ''}autocannon ${packageVersion('autocannon')}; ` +
      `targets run with NODE_ENV=production${options.nodeArgs.length ? ` and ${options.nodeArgs.join(' ')}` : ''}, refresh every ${REFRESH_INTERVAL_MS / 1000} s, usage report every ${METRICS_INTERVAL_MS / 1000} s`,
    load:
      `${options.loader === 'wrk' ? 'wrk (one thread; autocannon primes the polling clients, reading their ETags)' : 'autocannon'}, ${options.connections} keep-alive connections on loopback, ${options.warmup} s warm-up (before a process's first scenario, in ${options.warmup} s slices until its CPU per request settled: ${firstWarmups(ctx.measurements)}) then ${options.duration} s measured per scenario, ` +
      `${options.rounds} round${options.rounds > 1 ? 's' : ''} (a fresh process per target and round; the targets take turns window by window, their order rotated each round), ` +
      `polling populations of ${options.pollClients.map((n) => n.toLocaleString('en-US')).join(', ')} clients at ${options.flagCounts[0]} flags ` +
      `(populations above ${ONE_ROUND_ABOVE.toLocaleString('en-US')} in the first round only; @unleash/proxy at most ${UNLEASH_POLL_LIMIT.toLocaleString('en-US')}); ` +
      `in each process the windows every target runs come first, in the table's order, then those only some run (larger populations, OFREP)` +
      `${options.quick ? '; QUICK smoke run, not for quoting' : ''}`,
    pollClients: options.pollClients,
    flagSets,
    scenarios: SCENARIOS.filter((s) => options.scenarios.includes(s.name) && (options.cluster !== 'only' || CLUSTER_SCENARIOS.includes(s.name))).map((s) => ({ name: s.name, description: s.description, perFlagCount: s.perFlagCount, ...(s.maxFlags ? { maxFlags: s.maxFlags } : {}) })),
    runtimeSeconds,
    busyAtStart,
    warnings,
    ...(ctx.clusterMeta ? { cluster: ctx.clusterMeta } : {}),
  };
  const out = path.resolve(ROOT, options.out ?? path.join('bench', options.quick ? 'results-quick.md' : options.partial ? 'results-partial.md' : 'results.md'));
  // The chart the README shows comes from a full default run only; any other run draws it beside its own report.
  const chart = options.out === undefined && !options.quick && !options.partial ? path.join(ROOT, 'docs', 'bench.svg') : out.replace(/\.md$/, '') + '.svg';
  if (ctx.measurements.length > 0) {
    meta.chart = path.relative(path.dirname(out), chart);
    writeFileSync(chart, renderChart(meta, options.flagCounts, options.targets, ctx.measurements, inProcess));
  }
  const markdown = renderReport(meta, options.flagCounts, options.targets, ctx.measurements, ctx.cluster, ctx.idle, inProcess, fanout, ctx.refresh, ctx.cliMemory, ctx.cliIdle, ctx.interleaved);
  writeFileSync(out, `${markdown}\n`);
  writeFileSync(out.replace(/\.md$/, '') + '.json', `${JSON.stringify({ meta, measurements: ctx.measurements, cluster: ctx.cluster, idle: ctx.idle, inProcess, fanout, refresh: ctx.refresh, cliMemory: ctx.cliMemory, cliIdle: ctx.cliIdle, interleaved: ctx.interleaved }, null, 2)}\n`);
  if (meta.chart) log(`Chart written to ${path.relative(ROOT, chart)}.`);
  log(`\n${markdown}`);
  log(`Written to ${path.relative(ROOT, out)} (every round in ${path.relative(ROOT, out.replace(/\.md$/, ''))}.json) in ${Math.round(runtimeSeconds)} s.`);
  if (warnings.length) {
    log(`\nFinished with ${warnings.length} warning(s); see the Warnings section.`);
    return 3;
  }
  return 0;
}

// Every target dies with the runner: on normal exit, on Ctrl-C, on SIGTERM and on any error.
process.on('exit', killAllTargets);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    killAllTargets();
    process.exit(130);
  });
}

main().then(
  (code) => {
    killAllTargets();
    process.exit(code);
  },
  (error: unknown) => {
    killAllTargets();
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    process.stderr.write(`\nBENCH ABORTED\n${message}\n`);
    if (error instanceof Error && !['VerificationError', 'FileLimitError'].includes(error.name) && error.stack) process.stderr.write(`${error.stack}\n`);
    process.exit(1);
  },
);
