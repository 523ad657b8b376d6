/**
 * The cluster comparison of issue 7: flag-proxy's own CLI with FLAG_PROXY_WORKERS=1 and =2, on the
 * unique-context GET and the SDK polling scenarios, at one flag count. On a 2-core machine the
 * load generator must share the cores with 2 workers, so the comparison that counts is between
 * two unpinned runs (everything on any core); a 1-worker run in the main table's pinned placement
 * is shown beside them. See bench/README.md, "Scale-out".
 */
import path from 'node:path';
import type { BuiltTargets } from './build.js';
import { measureWindow } from './measure.js';
import type { BenchOptions, ScenarioName } from './options.js';
import { pinSelf, startCliTarget, type CliTarget } from './processes.js';
import type { ClusterMeasurement, ClusterMeta } from './report.js';
import type { Scenario, ScenarioInput } from './scenarios.js';
import { checkTarget, type Reference } from './verify.js';

/** The scenarios the comparison runs (those of them the run selected). */
export const CLUSTER_SCENARIOS: readonly ScenarioName[] = ['get-unique', 'poll-etag'];

interface Variant {
  name: string;
  workers: number;
  pinned: boolean;
  label: string;
  /** Undefined: every cluster scenario. */
  scenarios?: readonly ScenarioName[];
}

const VARIANTS: readonly Variant[] = [
  // The main table's placement, for comparison; only the headline scenario, to keep the run short.
  { name: '1-pinned', workers: 1, pinned: true, label: '1 worker, pinned', scenarios: ['get-unique'] },
  { name: '1', workers: 1, pinned: false, label: '1 worker, unpinned' },
  { name: '2', workers: 2, pinned: false, label: '2 workers, unpinned' },
];
const BASELINE = '1';

export interface ClusterRun {
  options: BenchOptions;
  cli: NonNullable<BuiltTargets['cli']>;
  /** Where the CLI came from, for the report. */
  source: string;
  flags: number;
  cores: number;
  /** Cores as taskset lists: the runner's own and the target's when pinned; undefined when pinning is off. */
  placement: { runner: string; target: string; all: string } | undefined;
  /** The CLI's variables for the upstream, key, app name and intervals (as the in-process targets get them). */
  variables: Record<string, string>;
  reference: Reference;
  clientKey: string;
  named: string[];
  input: ScenarioInput;
  scenarios: Scenario[];
  log(line: string): void;
  warnings: string[];
}

const rotate = <T>(list: readonly T[], by: number): T[] => list.map((_, i) => list[(i + by) % list.length] as T);

/** Runs every round of the comparison; returns its measurements and what the report says about it. */
export async function runCluster(run: ClusterRun): Promise<{ measurements: ClusterMeasurement[]; meta: ClusterMeta }> {
  const { options, placement } = run;
  const scenarios = run.scenarios.filter((s) => CLUSTER_SCENARIOS.includes(s.name));
  const scenariosOf = (v: Variant): Scenario[] => scenarios.filter((s) => v.scenarios === undefined || v.scenarios.includes(s.name));
  // Without pinning there is no pinned placement to compare with; a variant none of whose
  // scenarios was selected is not started at all.
  const variants = VARIANTS.filter((v) => (!v.pinned || placement !== undefined) && scenariosOf(v).length > 0);
  const measurements: ClusterMeasurement[] = [];
  const meta: ClusterMeta = {
    flags: run.flags,
    cores: run.cores,
    variants: variants.map(({ name, workers, pinned, label }) => ({ name, workers, pinned, label })),
    baseline: BASELINE,
    source: run.source,
    notes: scenarios.some((s) => s.name === 'poll-etag')
      ? [
          `\`poll-etag\` with workers: each worker keeps its own answer cache, and a polling client is not sticky to a worker (autocannon deals clients to whichever ` +
            `connection is free, as a load balancer's keep-alive pool would). So before the warm-up every client polls ${primePasses(2)} times with 2 workers (once with 1), ` +
            'until each worker has seen nearly every client, and the window measures steady polling, as in a fleet that has run for a while. ' +
            "A client's first poll on a worker costs that worker a full evaluation (the `get-unique` cost).",
        ]
      : [],
  };
  if (scenarios.length === 0) return { measurements, meta };
  try {
    for (let round = 0; round < options.rounds; round++) {
      const order = rotate(variants, round);
      run.log(`-- cluster, ${run.flags} flags, round ${round + 1}/${options.rounds}: ${order.map((v) => v.label).join(', ')}`);
      for (const variant of order) {
        // The runner follows the variant's placement: alone on core 0, or on every core like the CLI.
        if (placement) pinSelf(variant.pinned ? placement.runner : placement.all);
        const target = await startCliTarget({
          entry: run.cli.entry,
          guard: run.cli.guard,
          workers: variant.workers,
          variables: run.variables,
          cores: variant.pinned && placement ? placement.target : undefined,
          nodeArgs: options.nodeArgs,
          scratch: path.dirname(run.cli.guard),
        });
        try {
          // Connections are dealt round-robin to the workers: one check per worker reaches them all.
          for (let i = 0; i < variant.workers; i++) await checkTarget(`flag-proxy CLI (${variant.label})`, target.base, run.reference, run.clientKey, run.named);
          for (const [index, scenario] of scenariosOf(variant).entries()) {
            const input = { ...run.input, primePasses: primePasses(variant.workers) };
            const m = await measureOne(run, target, variant, { scenario, input }, round, index === 0);
            measurements.push(m);
            run.log(
              `   ${variant.label.padEnd(20)} ${scenario.name.padEnd(10)} ${Math.round(m.rps).toLocaleString('en-US').padStart(8)} req/s` +
                `  p99 ${m.p99.toFixed(2).padStart(7)} ms  ${m.cpuUsPerRequest.toFixed(0).padStart(6)} µs/req` +
                `  CLI ${m.targetCores.toFixed(2)} cores${m.workers > 1 ? ` (primary ${(m.primaryShare * 100).toFixed(1)}%)` : ''}` +
                `  load-gen ${m.runnerCores.toFixed(2)}  others ${m.otherCores.toFixed(2)}  RSS ${(m.peakRssBytes / 1048576).toFixed(0)} MB`,
            );
          }
        } finally {
          await target.stop();
        }
      }
    }
  } finally {
    if (placement) pinSelf(placement.runner);
  }
  return { measurements, meta };
}

/**
 * Priming passes of the polling clients. Each worker has its own answer cache, and a client is not
 * sticky to a worker (autocannon deals clients to whichever connection is free, as a balancer's
 * keep-alive pool would), so a client lands on a given one of 2 workers about every other time:
 * after 8 passes a worker has missed about 0.5^8 = 0.4% of the clients. Without this, the window
 * would measure mostly first contacts, each a full evaluation, instead of steady polling.
 */
export const primePasses = (workers: number): number => (workers > 1 ? 8 : 1);

async function measureOne(
  run: ClusterRun,
  target: CliTarget,
  variant: Variant,
  { scenario, input }: { scenario: Scenario; input: ScenarioInput },
  round: number,
  first: boolean,
): Promise<ClusterMeasurement> {
  // Each worker has its own JIT and caches to warm up and gets only its share of the warm-up's
  // requests, so the warm-up lasts `workers` times as long: every worker gets at least as many as
  // the single worker did.
  const w = await measureWindow({ ...run.options, warmup: run.options.warmup * variant.workers }, target, scenario, input, first);
  const { load, wallUs } = w;
  const machineBusy = w.coreDeltaUs.reduce((a, b) => a + b, 0);
  const m: ClusterMeasurement = {
    flags: run.flags,
    scenario: scenario.name,
    variant: variant.name,
    workers: variant.workers,
    pinned: variant.pinned,
    round,
    count: load.count,
    inFlight: load.inFlight,
    seconds: load.seconds,
    rps: load.rps,
    p50: load.p50,
    p99: load.p99,
    cpuUsPerRequest: w.worked > 0 ? w.cpuUs / w.worked : Number.NaN,
    // target.pids[0] is the process started: the primary when there are workers.
    primaryShare: variant.workers > 1 && w.cpuInWindowUs > 0 ? (w.cpuInWindowByPidUs[0] ?? 0) / w.cpuInWindowUs : 0,
    targetCores: w.cpuInWindowUs / wallUs,
    runnerCores: w.runnerUs / wallUs,
    runnerUsPerRequest: w.worked > 0 ? w.runnerUs / w.worked : Number.NaN,
    otherCores: Math.max(0, (machineBusy - w.cpuInWindowUs - w.runnerUs) / wallUs),
    peakRssBytes: w.peakRssBytes,
    statuses: load.statuses,
    errors: load.errors,
    unexpected: w.unexpected,
    ...(w.note ? { note: w.note } : {}),
  };
  if (w.unexpected > 0) {
    const warning = `flag-proxy CLI (${variant.label}), ${scenario.name}, ${run.flags} flags, round ${round + 1}: ${w.unexpected} of ${load.count} answers were unexpected (statuses ${JSON.stringify(load.statuses)}, ${load.errors} errors)`;
    run.warnings.push(warning);
    run.log(`  ⚠ ${warning}`);
  }
  return m;
}
