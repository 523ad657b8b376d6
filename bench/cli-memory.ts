/**
 * The CLI's memory rows: at every flag count, flag-proxy's own CLI as one process
 * (`FLAG_PROXY_WORKERS=1`, pinned like the main table's targets) through the windows
 * @unleash/proxy runs, in the same order, for its peak RSS beside the predecessor's. The main
 * table runs flag-proxy's handler in a plain node:http server, a host that sets no V8 flag; the
 * CLI owns its process and caps its young generation (src/young-generation.ts), as issue 16 allows
 * ("the CLI may tune its own process"). One pass per flag count: its figures are peaks, and the
 * CPU column is there to show the same work was done. See bench/README.md, "The CLI's memory".
 */
import path from 'node:path';
import type { BuiltTargets } from './build.js';
import { measureWindow } from './measure.js';
import type { BenchOptions } from './options.js';
import { readMemory, startCliTarget } from './processes.js';
import type { CliMemoryMeasurement, IdleMemory } from './report.js';
import type { Scenario, ScenarioInput } from './scenarios.js';
import { checkTarget, type Reference } from './verify.js';

export interface CliMemoryRun {
  options: BenchOptions;
  cli: NonNullable<BuiltTargets['cli']>;
  flags: number;
  /** The core the main table's targets run on (taskset list), or undefined when nothing is pinned. */
  core: string | undefined;
  /** The CLI's variables for the upstream, key, app name and intervals. */
  variables: Record<string, string>;
  reference: Reference;
  clientKey: string;
  named: string[];
  input: ScenarioInput;
  /** The windows @unleash/proxy ran at this flag count, in its order. */
  windows: Array<{ scenario: Scenario; clients?: number }>;
  log(line: string): void;
  warnings: string[];
}

/** Runs the pass; returns its windows and the CLI's idle RSS (read as the main table's targets' is). */
export async function runCliMemory(run: CliMemoryRun): Promise<{ measurements: CliMemoryMeasurement[]; idle: IdleMemory }> {
  const target = await startCliTarget({
    entry: run.cli.entry,
    guard: run.cli.guard,
    workers: 1,
    variables: run.variables,
    cores: run.core,
    nodeArgs: run.options.nodeArgs,
    scratch: path.dirname(run.cli.guard),
  });
  const measurements: CliMemoryMeasurement[] = [];
  try {
    await checkTarget('flag-proxy CLI (FLAG_PROXY_WORKERS=1)', target.base, run.reference, run.clientKey, run.named);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const idle: IdleMemory = { flags: run.flags, target: 'flag-proxy', round: 0, rssBytes: readMemory(target.pid).rss };
    for (const [index, { scenario, clients }] of run.windows.entries()) {
      const input = clients === undefined ? run.input : { ...run.input, pollClients: clients };
      const w = await measureWindow(run.options, target, scenario, input, index === 0);
      const label = clients === undefined ? scenario.name : `${scenario.name}@${clients}`;
      const m: CliMemoryMeasurement = {
        flags: run.flags,
        scenario: scenario.name,
        ...(clients !== undefined ? { clients } : {}),
        rps: w.load.rps,
        cpuUsPerRequest: w.worked > 0 ? w.cpuUs / w.worked : Number.NaN,
        peakRssBytes: w.peakRssBytes,
        unexpected: w.unexpected,
      };
      measurements.push(m);
      run.log(
        `   CLI, 1 process   ${label.padEnd(18)} ${Math.round(m.rps).toLocaleString('en-US').padStart(8)} req/s` +
          `  ${m.cpuUsPerRequest.toFixed(0).padStart(6)} µs/req  RSS ${(m.peakRssBytes / 1048576).toFixed(0).padStart(4)} MB`,
      );
      if (w.unexpected > 0) {
        const warning = `flag-proxy CLI (memory rows), ${label}, ${run.flags} flags: ${w.unexpected} of ${w.load.count} answers were unexpected (statuses ${JSON.stringify(w.load.statuses)}, ${w.load.errors} errors)`;
        run.warnings.push(warning);
        run.log(`  ⚠ ${warning}`);
      }
    }
    return { measurements, idle };
  } finally {
    await target.stop();
  }
}
