/**
 * `npm run bench:ab -- --baseline=git:<rev>`: flag-proxy of the working tree (B) against a git
 * revision (A), or with `--baseline=bare-node` against the bare server (A), on one scenario, the
 * two processes pinned to the same core and taking turns in short slices, so that the machine's
 * drift over minutes falls on both alike. A full run compares builds window by window, seconds to
 * minutes apart, and differences of a few percent drown in that drift; here they show. See
 * bench/README.md, "Comparing two builds".
 */
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestFlagServer, type TestFlagServer } from '../src/testing/index.js';
import { buildTargets, type BuiltTargets } from './build.js';
import { CLIENT_KEY, generateFlags, namedToggles, UPSTREAM_TOKEN } from './flags.js';
import { chooseLoader, type Loader } from './load.js';
import { primedForTurns, processSets, summarize, takeTurns, type Slice } from './interleave.js';
import { GIT_REVISION, SCENARIO_NAMES, type ScenarioName } from './options.js';
import { killAllTargets, pinningAvailable, pinSelf, RUNNER_CORE, startTarget, TARGET_CORE, targetConfig, type TargetProcess } from './processes.js';
import type { TargetConfig } from './protocol.js';
import { bareAnswers, checkTarget, verifyAgainstReference } from './verify.js';
import { FLAG_PROXY_ONLY, POLLING, SCENARIOS, type Scenario, type ScenarioInput } from './scenarios.js';

export interface AbOptions {
  /** What A is: flag-proxy built from `git:<rev>`, or the bare server (`bare-node`). */
  baseline: string;
  scenario: ScenarioName;
  flags: number;
  /** The polling population of a polling scenario. */
  clients: number;
  /** Measured slices per build. */
  slices: number;
  /** Seconds per slice. */
  sliceSeconds: number;
  /** Unmeasured slices per build first, taking turns the same way. */
  warmupSlices: number;
  /**
   * Sets of fresh processes (one per build each) the slices are shared out among, each warmed up
   * again: two processes of one build read several percent apart by where their code and heap
   * landed, and one pair would put that on the ratio.
   */
  processes: number;
  connections: number;
  /** What sends the slices: as in a full run, wrk when installed. */
  loader: Loader;
}

/** The baseline that is the bare server (bench/targets/bare-node.ts) rather than a build of flag-proxy. */
const BARE = 'bare-node';

/** Scenarios that change the upstream around their windows: the full run's business, not this tool's. */
const NOT_HERE: readonly ScenarioName[] = ['poll-scheduled', 'poll-after-change'];

const DEFAULTS: Omit<AbOptions, 'baseline' | 'loader'> = {
  scenario: 'poll-etag',
  flags: 200,
  clients: 2000,
  slices: 16,
  sliceSeconds: 1,
  warmupSlices: 8,
  processes: 3,
  connections: 16,
};

/** Reads `--name=value` arguments; throws with the option's name on anything it cannot use. */
export function parseAbArgs(argv: readonly string[]): AbOptions {
  const given = new Map<string, string>();
  for (const arg of argv) {
    const match = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (!match) throw new Error(`bench:ab: expected --name=value, got "${arg}"`);
    given.set(match[1] as string, match[2] as string);
  }
  const whole = (name: string, fallback: number, min: number): number => {
    const raw = given.get(name);
    given.delete(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) throw new Error(`bench:ab: --${name} must be a whole number from ${min}, got "${raw}"`);
    return value;
  };
  const baseline = given.get('baseline');
  given.delete('baseline');
  if (baseline === undefined || (baseline !== BARE && !GIT_REVISION.test(baseline))) {
    throw new Error(
      `bench:ab: --baseline=git:<rev> or --baseline=${BARE} is required (the build or the bare server to compare the working tree with), got ${baseline === undefined ? 'none' : `"${baseline}"`}`,
    );
  }
  const scenario = (given.get('scenario') ?? DEFAULTS.scenario) as ScenarioName;
  given.delete('scenario');
  if (!SCENARIO_NAMES.includes(scenario) || NOT_HERE.includes(scenario)) {
    throw new Error(`bench:ab: --scenario must be one of ${SCENARIO_NAMES.filter((n) => !NOT_HERE.includes(n)).join(', ')}, got "${scenario}"`);
  }
  if (baseline === BARE && FLAG_PROXY_ONLY.includes(scenario)) {
    throw new Error(`bench:ab: the bare server does not answer ${scenario} (it has no OFREP and no /api/frontend); compare it with git:<rev>`);
  }
  const options: AbOptions = {
    baseline,
    scenario,
    flags: whole('flags', DEFAULTS.flags, 1),
    clients: whole('clients', DEFAULTS.clients, 1),
    slices: whole('slices', DEFAULTS.slices, 2),
    sliceSeconds: whole('slice-seconds', DEFAULTS.sliceSeconds, 1),
    warmupSlices: whole('warmup-slices', DEFAULTS.warmupSlices, 0),
    processes: whole('processes', DEFAULTS.processes, 1),
    connections: whole('connections', DEFAULTS.connections, 1),
    loader: chooseLoader(given.get('load'), 'bench:ab: '),
  };
  given.delete('load');
  const unknown = [...given.keys()];
  if (unknown.length > 0) throw new Error(`bench:ab: unknown option --${unknown[0]}`);
  return options;
}

export { summarize, type AbSummary, type Slice } from './interleave.js';

async function main(options: AbOptions): Promise<void> {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const cores = availableParallelism();
  const pinning = pinningAvailable(cores);
  if (!pinning.ok) throw new Error(`bench:ab needs two cores and taskset to pin the builds together (${pinning.reason})`);
  const scenario = SCENARIOS.find((s) => s.name === options.scenario);
  if (!scenario) throw new Error(`no scenario ${options.scenario}`);
  const log = (line: string): void => void process.stdout.write(`${line}\n`);

  const bare = options.baseline === BARE;
  log(`bench:ab: ${options.scenario}${POLLING.includes(scenario.name) ? `@${options.clients}` : ''}, ${options.flags} flags; A = ${bare ? 'the bare server' : options.baseline}, B = the working tree`);
  const builtB = await buildTargets(root, 'src', false);
  const builtA = bare ? builtB : await buildTargets(root, options.baseline, false, path.join(root, 'bench', '.build', 'baseline'));
  const { features, segments } = generateFlags(options.flags);
  const named = namedToggles(features);
  const upstream = await createTestFlagServer({ features, segments, clientTokens: [UPSTREAM_TOKEN] });
  pinSelf(RUNNER_CORE);
  const input: ScenarioInput = { clientKey: CLIENT_KEY, namedToggles: named, pollClients: options.clients };
  const a: Slice[] = [];
  const b: Slice[] = [];
  const setRatios: number[] = [];
  let unexpected = 0;
  try {
    for (const slices of processSets(options.slices, options.processes)) {
      const set = await takeOneSet({ options, scenario, input, upstream, builtA, builtB, slices });
      a.push(...set.a);
      b.push(...set.b);
      setRatios.push(summarize(set.a, set.b).ratio);
      unexpected += set.unexpected;
    }
  } finally {
    killAllTargets();
    await upstream.close();
  }
  const summary = summarize(a, b);
  log(`A ${(bare ? 'bare server' : options.baseline).padEnd(20)} ${summary.a.toFixed(1)} µs CPU a request`);
  log(`B working tree${' '.repeat(10)} ${summary.b.toFixed(1)} µs CPU a request`);
  log(
    `B / A ${summary.ratio.toFixed(3)} (each set of processes: ${setRatios.map((r) => r.toFixed(3)).join(', ')}; slices taken in turn: ${summary.low.toFixed(3)} to ${summary.high.toFixed(3)}); ` +
      `${options.slices} slices of ${options.sliceSeconds} s each over ${setRatios.length} set${setRatios.length === 1 ? '' : 's'} of processes, each after ${options.warmupSlices} unmeasured`,
  );
  if (unexpected > 0) {
    log(`⚠ ${unexpected} answers were not ${scenario.expected.join(' or ')}: the two builds did not do the same work`);
    process.exitCode = 1;
  }
}

interface SetGiven {
  options: AbOptions;
  scenario: Scenario;
  input: ScenarioInput;
  upstream: TestFlagServer;
  builtA: BuiltTargets;
  builtB: BuiltTargets;
  /** Measured slices of this set. */
  slices: number;
}

/** Starts A and B afresh (B first: the bare server serves B's own answers, as in a full run), primes them, and lets them take turns. */
async function takeOneSet({ options, scenario, input, upstream, builtA, builtB, slices }: SetGiven): Promise<{ a: Slice[]; b: Slice[]; unexpected: number }> {
  const targets: TargetProcess[] = [];
  try {
    const start = (name: 'flag-proxy' | 'bare-node', built: BuiltTargets, extra: Partial<TargetConfig> = {}): Promise<TargetProcess> =>
      startTarget(name, { entry: built.entries[name], config: { ...targetConfig(upstream, built.flagProxyModule), ...extra }, core: TARGET_CORE, nodeArgs: [] });
    const b = await start('flag-proxy', builtB);
    targets.push(b);
    if (options.baseline === BARE) {
      const named = input.namedToggles;
      const reference = await verifyAgainstReference(b.base, undefined, CLIENT_KEY, named);
      const a = await start('bare-node', builtA, { bare: bareAnswers(reference) });
      targets.unshift(a);
      await checkTarget('bare-node', a.base, reference, CLIENT_KEY, named);
    } else {
      targets.unshift(await start('flag-proxy', builtA));
    }
    // Each build gets the scenario's own sequence of contexts, its polling clients primed, as in a full run.
    const turns = await takeTurns({
      targets: await primedForTurns(targets, scenario, input, { connections: options.connections, loader: options.loader, quick: false }),
      scenario,
      slices,
      sliceSeconds: options.sliceSeconds,
      warmupSlices: options.warmupSlices,
    });
    return { a: turns.slices[0] as Slice[], b: turns.slices[1] as Slice[], unexpected: turns.unexpected };
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(parseAbArgs(process.argv.slice(2))).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    killAllTargets();
    process.exit(1);
  });
}
