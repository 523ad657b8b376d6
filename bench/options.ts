/**
 * Bench options, from `BENCH_*` environment variables and `--name=value` arguments (arguments win).
 * Run `npm run bench -- --help` for the list.
 */
import { chooseLoader, type Loader } from './load.js';

export const TARGET_NAMES = ['flag-proxy', 'unleash-proxy', 'bare-node'] as const;
export type TargetName = (typeof TARGET_NAMES)[number];

export const SCENARIO_NAMES = ['get-unique', 'get-gzip', 'post-unique', 'post-named', 'poll-etag', 'ofrep-unique', 'ofrep-single', 'ofrep-poll', 'post-poll', 'poll-scheduled', 'poll-after-change', 'preflight', 'client-metrics', 'get-hot', 'health'] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];
/** flag-proxy's src/ at a git revision, as `--flag-proxy` and `bench:ab --baseline` take it. */
export const GIT_REVISION = /^git:[\w./~^@{}-]+$/;

/** The default flag counts. */
export const DEFAULT_FLAGS = '200,1000,5000';
/** The default polling populations. */
export const DEFAULT_POLL_CLIENTS = '2000,20000,200000';
/** Open streams in the SSE fan-out (issue 14 asks for 10,000). */
export const DEFAULT_FANOUT_STREAMS = 10_000;
/** Open streams in a quick run's fan-out. */
export const QUICK_FANOUT_STREAMS = 2000;
/** Measured slices per target of each row taken in turns with the bare server (see `interleaved`). */
export const DEFAULT_INTERLEAVED_SLICES = 20;
export const QUICK_INTERLEAVED_SLICES = 4;
/** Sets of fresh processes those slices are split over (see `turnProcesses`). */
export const DEFAULT_TURN_PROCESSES = 3;
/** The polling population of a quick run. */
export const QUICK_POLL_CLIENTS = '2000';
/**
 * @unleash/proxy is primed with at most this many polling clients (it evaluates each first poll in
 * full at about 2 ms, so more would take minutes per round); larger populations show '—' for it.
 */
export const UNLEASH_POLL_LIMIT = 20_000;
/**
 * Populations above this are measured in the first round only: priming one takes a full
 * evaluation per client (about a minute for 200,000 on one core), too long to repeat every round.
 */
export const ONE_ROUND_ABOVE = 20_000;

export interface BenchOptions {
  quick: boolean;
  flagCounts: number[];
  targets: TargetName[];
  scenarios: ScenarioName[];
  rounds: number;
  /** Seconds of measured load per scenario. */
  duration: number;
  /** Seconds of unmeasured load before each measurement. */
  warmup: number;
  connections: number;
  /**
   * What sends the measured windows and warm-ups: wrk when installed (it saturates a bare node
   * server; autocannon, JavaScript on one core, does not), else autocannon. Priming is autocannon's.
   */
  loader: Loader;
  /** The polling populations: one `poll-etag` row per count, at the first flag count. */
  pollClients: number[];
  /** Where flag-proxy is loaded from: a fresh bundle of src/, the existing dist/, or `git:<rev>` (src/ at a revision). */
  flagProxyFrom: string;
  /** Pin the runner to core 0 and each target to core 1. */
  pin: boolean;
  /** Extra node flags for the target processes (e.g. `--cpu-prof`). */
  nodeArgs: string[];
  /** The markdown file written; undefined means the default for the kind of run. */
  out: string | undefined;
  /**
   * The cluster rows (flag-proxy's CLI with FLAG_PROXY_WORKERS=1 and 2): 'on' runs them after the
   * main table when flag-proxy is a target, 'off' skips them, 'only' runs nothing else (the
   * correctness check still runs).
   */
  cluster: 'on' | 'off' | 'only';
  /**
   * The in-process section (bench/in-process.ts: `proxy.isEnabled`, `proxy.evaluate` against
   * `unleash-client`): 'on' runs it after the HTTP tables, 'off' skips it, 'only' runs nothing else.
   */
  inProcess: 'on' | 'off' | 'only';
  /**
   * The OFREP SSE fan-out (bench/fanout.ts: open streams, memory per stream, change → last
   * notified): 'on' runs it last, 'off' skips it, 'only' runs nothing else.
   */
  fanout: 'on' | 'off' | 'only';
  /** Streams the fan-out opens. */
  fanoutStreams: number;
  /**
   * The refresh rows (bench/refresh.ts: the event loop's longest block while a changed flag set
   * is adopted, flag-proxy against unleash-client), at every flag count: on unless 0.
   */
  refresh: boolean;
  /**
   * The CLI's memory rows (bench/run.ts): at every flag count, flag-proxy's own CLI as one process
   * (which caps its young generation) through the windows @unleash/proxy runs, for its peak RSS
   * beside the predecessor's: on unless 0.
   */
  cliMemory: boolean;
  /**
   * Measured slices per target of the rows issue 16 judges against the bare server, run again with
   * flag-proxy and the bare server (and @unleash/proxy in the rows whose goals compare with it)
   * taking turns on one core (bench/interleave.ts) after the main rounds, at the first flag count;
   * 0 skips them.
   */
  interleaved: number;
  /**
   * Sets of fresh processes (one per target) the slices of {@link interleaved} are split over,
   * each starting again from the first row; at most one per slice.
   */
  turnProcesses: number;
  /** True when the selection differs from the full default run. */
  partial: boolean;
}

const SETTINGS: Array<{ name: string; env: string; help: string }> = [
  { name: 'quick', env: 'BENCH_QUICK', help: `smoke run: 1 round, 0.25 s warm-up, 1.5 s per scenario, ${QUICK_POLL_CLIENTS} polling clients (1 = on)` },
  { name: 'flags', env: 'BENCH_FLAGS', help: `flag counts, comma-separated (default ${DEFAULT_FLAGS})` },
  { name: 'targets', env: 'BENCH_TARGETS', help: `targets, comma-separated (default ${TARGET_NAMES.join(',')})` },
  { name: 'scenarios', env: 'BENCH_SCENARIOS', help: `scenarios, comma-separated (default all: ${SCENARIO_NAMES.join(',')})` },
  { name: 'rounds', env: 'BENCH_ROUNDS', help: 'rounds; targets are interleaved, medians reported (default 3)' },
  { name: 'duration', env: 'BENCH_DURATION', help: 'measured seconds per scenario (default 3)' },
  { name: 'warmup', env: 'BENCH_WARMUP', help: "warm-up seconds before each measurement; a process's first warms up in slices this long until its CPU per request settles (default 0.5)" },
  { name: 'connections', env: 'BENCH_CONNECTIONS', help: 'concurrent keep-alive connections (default 16)' },
  { name: 'load', env: 'BENCH_LOAD', help: "what sends the measured load: 'wrk' (default when installed: apt-get install wrk) or 'autocannon'" },
  { name: 'poll-clients', env: 'BENCH_POLL_CLIENTS', help: `polling populations, comma-separated: one poll-etag row each, at the first flag count (default ${DEFAULT_POLL_CLIENTS})` },
  { name: 'flag-proxy', env: 'BENCH_FLAG_PROXY', help: "'src' (bundle src/ into bench/.build, default), 'dist' (run dist/ as built) or 'git:<rev>' (src/ at a revision)" },
  { name: 'pin', env: 'BENCH_PIN', help: 'pin runner to core 0 and targets to core 1 with taskset (default 1)' },
  { name: 'node-args', env: 'BENCH_NODE_ARGS', help: "extra node flags for targets, space-separated (e.g. '--cpu-prof --cpu-prof-dir=bench/.prof')" },
  {
    name: 'cluster',
    env: 'BENCH_CLUSTER',
    help: "flag-proxy's CLI with FLAG_PROXY_WORKERS=1 vs 2 (get-unique, poll-etag) at the first flag count: 1 (default, when flag-proxy is a target), 0 to skip, 'only' for nothing else",
  },
  {
    name: 'in-process',
    env: 'BENCH_IN_PROCESS',
    help: "proxy.isEnabled / proxy.evaluate against unleash-client's isEnabled, in one process: 1 (default), 0 to skip, 'only' for nothing else (--in-process-only)",
  },
  {
    name: 'fanout',
    env: 'BENCH_FANOUT',
    help: "OFREP SSE fan-out: open streams, memory per stream, upstream change -> last stream notified: 1 (default), 0 to skip, 'only' for nothing else (--fanout-only)",
  },
  { name: 'fanout-streams', env: 'BENCH_FANOUT_STREAMS', help: `streams the fan-out opens (default ${DEFAULT_FANOUT_STREAMS}, quick ${QUICK_FANOUT_STREAMS}); needs ulimit -n above it` },
  {
    name: 'refresh',
    env: 'BENCH_REFRESH',
    help: "adopting a changed flag set: the event loop's longest block, flag-proxy against unleash-client, at every flag count: 1 (default), 0 to skip",
  },
  {
    name: 'cli-memory',
    env: 'BENCH_CLI_MEMORY',
    help: "flag-proxy's CLI as one process through the windows @unleash/proxy runs, at every flag count, for its peak RSS: 1 (default, when flag-proxy is a target), 0 to skip",
  },
  {
    name: 'interleaved',
    env: 'BENCH_INTERLEAVED',
    help: `slices per target of the rows judged against the bare server (get-unique, poll-etag, preflight, health), flag-proxy and the bare server (and @unleash/proxy where a goal compares with it) taking turns on one core in 1 s slices, at the first flag count (default ${DEFAULT_INTERLEAVED_SLICES}, quick ${QUICK_INTERLEAVED_SLICES}); 0 to skip`,
  },
  {
    name: 'turn-processes',
    env: 'BENCH_TURN_PROCESSES',
    help: `sets of fresh processes those slices are split over, one process per target each: a process's speed depends on where its code and heap landed (default ${DEFAULT_TURN_PROCESSES}, quick 1)`,
  },
  { name: 'out', env: 'BENCH_OUT', help: 'markdown file to write (default bench/results.md; quick or partial runs: bench/results-quick.md / results-partial.md)' },
];

export function usage(): string {
  const lines = SETTINGS.map((s) => `  --${s.name.padEnd(13)} ${s.env.padEnd(19)} ${s.help}`);
  return ['Usage: npm run bench -- [--name=value ...]   (or the BENCH_* variables)', '', ...lines, '  --help'].join('\n');
}

function list<T extends string>(value: string, allowed: readonly T[], what: string): T[] {
  const items = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of items) {
    if (!allowed.includes(item as T)) throw new Error(`Unknown ${what} '${item}'; choose from ${allowed.join(', ')}`);
  }
  if (items.length === 0) throw new Error(`No ${what} selected`);
  return allowed.filter((a) => items.includes(a));
}

function positive(value: string, name: string, integer: boolean): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n))) throw new Error(`--${name} must be a non-negative ${integer ? 'integer' : 'number'}, got '${value}'`);
  return n;
}

const truthy = (value: string): boolean => ['1', 'true', 'yes', 'on'].includes(value.trim().toLowerCase());

/** Reads the options; throws with a message naming the setting on a bad value. */
export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions {
  const given = new Map<string, string>();
  for (const s of SETTINGS) {
    const value = env[s.env];
    if (value !== undefined && value !== '') given.set(s.name, value);
  }
  for (const arg of argv) {
    if (arg === '--in-process-only') {
      given.set('in-process', 'only');
      continue;
    }
    if (arg === '--fanout-only') {
      given.set('fanout', 'only');
      continue;
    }
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    const name = match?.[1];
    if (!match || !name || !SETTINGS.some((s) => s.name === name)) throw new Error(`Unknown argument '${arg}'\n\n${usage()}`);
    given.set(name, match[2] ?? '1');
  }
  const quick = given.has('quick') && truthy(given.get('quick') ?? '');
  const get = (name: string): string | undefined => given.get(name);
  const flagCounts = (get('flags') ?? DEFAULT_FLAGS).split(',').map((s) => positive(s.trim(), 'flags', true));
  if (flagCounts.some((n) => n < 20)) throw new Error('--flags: each count must be at least 20');
  const options: BenchOptions = {
    quick,
    flagCounts,
    targets: list(get('targets') ?? TARGET_NAMES.join(','), TARGET_NAMES, 'target'),
    scenarios: list(get('scenarios') ?? SCENARIO_NAMES.join(','), SCENARIO_NAMES, 'scenario'),
    rounds: positive(get('rounds') ?? (quick ? '1' : '3'), 'rounds', true),
    duration: positive(get('duration') ?? (quick ? '1.5' : '3'), 'duration', false),
    warmup: positive(get('warmup') ?? (quick ? '0.25' : '0.5'), 'warmup', false),
    connections: positive(get('connections') ?? '16', 'connections', true),
    loader: chooseLoader(get('load')),
    // A quick run polls with the smallest population only: priming the larger ones takes minutes.
    pollClients: [...new Set((get('poll-clients') ?? (quick ? QUICK_POLL_CLIENTS : DEFAULT_POLL_CLIENTS)).split(',').map((s) => positive(s.trim(), 'poll-clients', true)))].sort((a, b) => a - b),
    flagProxyFrom: (() => {
      const v = get('flag-proxy') ?? 'src';
      if (v !== 'src' && v !== 'dist' && !GIT_REVISION.test(v)) throw new Error(`--flag-proxy must be 'src', 'dist' or 'git:<rev>', got '${v}'`);
      return v;
    })(),
    pin: get('pin') === undefined ? true : truthy(get('pin') ?? ''),
    nodeArgs: (get('node-args') ?? '').split(/\s+/).filter(Boolean),
    out: get('out'),
    cluster: (() => {
      const v = (get('cluster') ?? '1').trim().toLowerCase();
      if (v === 'only') return 'only';
      if (['1', 'true', 'yes', 'on'].includes(v)) return 'on';
      if (['0', 'false', 'no', 'off'].includes(v)) return 'off';
      throw new Error(`--cluster must be 1, 0 or 'only', got '${v}'`);
    })(),
    inProcess: (() => {
      const v = (get('in-process') ?? '1').trim().toLowerCase();
      if (v === 'only') return 'only';
      if (['1', 'true', 'yes', 'on'].includes(v)) return 'on';
      if (['0', 'false', 'no', 'off'].includes(v)) return 'off';
      throw new Error(`--in-process must be 1, 0 or 'only', got '${v}'`);
    })(),
    fanout: (() => {
      const v = (get('fanout') ?? '1').trim().toLowerCase();
      if (v === 'only') return 'only';
      if (['1', 'true', 'yes', 'on'].includes(v)) return 'on';
      if (['0', 'false', 'no', 'off'].includes(v)) return 'off';
      throw new Error(`--fanout must be 1, 0 or 'only', got '${v}'`);
    })(),
    fanoutStreams: positive(get('fanout-streams') ?? String(quick ? QUICK_FANOUT_STREAMS : DEFAULT_FANOUT_STREAMS), 'fanout-streams', true),
    refresh: (() => {
      const v = (get('refresh') ?? '1').trim().toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(v)) return true;
      if (['0', 'false', 'no', 'off'].includes(v)) return false;
      throw new Error(`--refresh must be 1 or 0, got '${v}'`);
    })(),
    cliMemory: (() => {
      const v = (get('cli-memory') ?? '1').trim().toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(v)) return true;
      if (['0', 'false', 'no', 'off'].includes(v)) return false;
      throw new Error(`--cli-memory must be 1 or 0, got '${v}'`);
    })(),
    interleaved: (() => {
      const raw = get('interleaved') ?? String(quick ? QUICK_INTERLEAVED_SLICES : DEFAULT_INTERLEAVED_SLICES);
      const value = Number(raw);
      if (!Number.isInteger(value) || value < 0 || value === 1) throw new Error(`--interleaved must be 0 or a whole number from 2, got '${raw}'`);
      return value;
    })(),
    turnProcesses: (() => {
      const raw = get('turn-processes') ?? String(quick ? 1 : DEFAULT_TURN_PROCESSES);
      const value = Number(raw);
      if (!Number.isInteger(value) || value < 1) throw new Error(`--turn-processes must be a whole number from 1, got '${raw}'`);
      return value;
    })(),
    partial: false,
  };
  if (options.rounds < 1 || options.duration <= 0 || options.connections < 1 || options.pollClients.some((n) => n < options.connections)) {
    throw new Error('rounds, duration and connections must be positive, and poll-clients at least the number of connections');
  }
  if ([options.cluster, options.inProcess, options.fanout].filter((v) => v === 'only').length > 1) throw new Error("--cluster=only, --in-process=only and --fanout=only exclude each other");
  if (options.fanoutStreams < 1) throw new Error('--fanout-streams must be at least 1');
  options.partial =
    options.flagCounts.join(',') !== DEFAULT_FLAGS ||
    options.pollClients.join(',') !== DEFAULT_POLL_CLIENTS ||
    options.inProcess !== 'on' ||
    options.fanout !== 'on' ||
    options.fanoutStreams !== DEFAULT_FANOUT_STREAMS ||
    !options.refresh ||
    !options.cliMemory ||
    options.interleaved !== DEFAULT_INTERLEAVED_SLICES ||
    options.turnProcesses !== DEFAULT_TURN_PROCESSES ||
    options.targets.length !== TARGET_NAMES.length ||
    options.scenarios.length !== SCENARIO_NAMES.length ||
    options.cluster !== 'on';
  return options;
}

/** Settings the user gave, as they would be typed again (for the report's command line). */
export function givenSettings(env: NodeJS.ProcessEnv): string[] {
  return SETTINGS.filter((s) => env[s.env] !== undefined && env[s.env] !== '').map((s) => `${s.env}=${quoteShell(env[s.env] ?? '')}`);
}

export function quoteShell(value: string): string {
  return /^[\w.,:/=@+-]*$/.test(value) ? value : `'${value.replace(/'/g, "'\\''")}'`;
}
