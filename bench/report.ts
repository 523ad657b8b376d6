/**
 * Turns the per-round measurements into the markdown report: one table per flag count with the
 * median of each figure over the rounds, ratios to @unleash/proxy and to the bare server, the
 * in-process rows, and a check of issue 16's targets.
 */
import { DEFAULT_ANSWER_CACHE_BYTES } from '../src/config/resolve.js';
import { PROBE_GAP_MS, REFETCH_SOCKETS, type FanoutResult } from './fanout.js';
import type { InProcessResult } from './in-process.js';
import type { InterleavedRow } from './interleave.js';
import type { RefreshResult } from './refresh.js';
import type { ScenarioName, TargetName } from './options.js';
import type { MemoryParts } from './protocol.js';
import { POLLING } from './scenarios.js';
import { median } from './stats.js';

export interface Measurement {
  flags: number;
  scenario: ScenarioName;
  /** The polling population (polling scenarios only): the row is `poll-etag@<clients>`. */
  clients?: number;
  target: TargetName;
  round: number;
  count: number;
  /** Requests still in flight when the window closed (their CPU is in the window, see run.ts). */
  inFlight: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerRequest: number;
  /** The part of `cpuUsPerRequest` spent in the kernel (system time; absent in results of older runs). */
  systemUsPerRequest?: number;
  /** CPU time of the target over wall time of the window (1 = one core fully busy). */
  cpuBusy: number;
  /** CPU time of the runner (load generator and upstream) over wall time. */
  runnerBusy: number;
  /** Share of each pinned core used by other processes on the machine (when pinned). */
  otherLoad?: { targetCore: number; runnerCore: number };
  peakRssBytes: number;
  /** Bytes allocated on the target's V8 heap per request sent (bench/heap.ts), idle to idle like the CPU. */
  heapBytesPerRequest: number;
  /** The target's V8 heap in use after a full collection right after the window: what it keeps. */
  liveHeapBytes: number;
  /** Where the target's memory was at the end of the window, before that collection (bench/heap.ts). */
  memoryParts?: MemoryParts;
  /** Seconds the priming before the warm-up took (polling). */
  primeSeconds?: number;
  /** Seconds the warm-up took, for a process's first scenario (until its CPU per request settled: bench/measure.ts). */
  warmupSeconds?: number;
  /** That warm-up's CPU µs per request in each of its slices, in order (in results.json). */
  warmupCosts?: number[];
  statuses: Record<string, number>;
  errors: number;
  /** Responses with a status the scenario does not expect, plus errors. */
  unexpected: number;
  /** Anything the scenario reports about this window (e.g. how many polling clients took part). */
  note?: string;
}

/** A target process's resident memory once started and checked, before any load. */
/** One window of the CLI's memory rows (bench/cli-memory.ts): the CLI as one process, through @unleash/proxy's windows. */
export interface CliMemoryMeasurement {
  flags: number;
  scenario: ScenarioName;
  clients?: number;
  rps: number;
  cpuUsPerRequest: number;
  peakRssBytes: number;
  unexpected: number;
}

export interface IdleMemory {
  flags: number;
  target: TargetName;
  round: number;
  rssBytes: number;
}

/** One window of the cluster comparison: flag-proxy's CLI with FLAG_PROXY_WORKERS=N. */
export interface ClusterMeasurement {
  flags: number;
  scenario: ScenarioName;
  /** Which of the cluster variants (see bench/cluster.ts): e.g. `1-pinned`, `1`, `2`. */
  variant: string;
  workers: number;
  /** True when the CLI was pinned to core 1 and the runner to core 0; false when nothing was pinned. */
  pinned: boolean;
  round: number;
  count: number;
  inFlight: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  /** CPU of the primary and every worker, idle to idle, per request sent. */
  cpuUsPerRequest: number;
  /** The primary's share of that CPU within the window (0 with one worker: there is no primary). */
  primaryShare: number;
  /** CPU of the CLI's processes over the window's wall time, in cores. */
  targetCores: number;
  /** CPU of the runner (load generator and upstream) over the window's wall time, in cores. */
  runnerCores: number;
  /** The runner's CPU per request sent. */
  runnerUsPerRequest: number;
  /** CPU used by other processes on the machine over the window's wall time, in cores (all cores together). */
  otherCores: number;
  /** Sum over the processes of each one's peak RSS in the window. */
  peakRssBytes: number;
  statuses: Record<string, number>;
  errors: number;
  unexpected: number;
  note?: string;
}

/** What the report says about the cluster comparison. */
export interface ClusterMeta {
  flags: number;
  cores: number;
  /** Each variant in table order, with how it was placed. */
  variants: Array<{ name: string; workers: number; pinned: boolean; label: string }>;
  /** The variant the others are compared with (1 worker, placed like the 2-worker one). */
  baseline: string;
  /** Where the CLI came from (e.g. "src/cli.ts bundled by esbuild"). */
  source: string;
  /** Anything else the section must say about how the rows were measured. */
  notes: string[];
}

export interface ReportMeta {
  date: string;
  command: string;
  machine: string;
  node: string;
  pinning: string;
  software: string;
  load: string;
  /** The polling populations. */
  pollClients: number[];
  flagSets: Array<{ flags: number; line: string }>;
  scenarios: Array<{ name: ScenarioName; description: string; perFlagCount: boolean; maxFlags?: number }>;
  runtimeSeconds: number;
  /** How busy each core was in the second before the run started. */
  busyAtStart: string;
  warnings: string[];
  /** Set when the cluster comparison ran. */
  cluster?: ClusterMeta;
  /** The chart's path relative to the report, when one is drawn. */
  chart?: string;
}

interface Cell {
  rps: number;
  rpsSpread: number;
  p50: number;
  p99: number;
  cpu: number;
  /** The kernel's part of `cpu` (median; NaN when not measured). */
  system: number;
  busy: number;
  runnerBusy: number;
  peak: number;
  /** Bytes allocated on the V8 heap per request (median). */
  heap: number;
  /** Heap kept after a full collection (highest over the rounds). */
  live: number;
  /** Where memory was at the end of the round with the highest peak, when the target told. */
  parts?: MemoryParts;
  statuses: Record<string, number>;
  unexpected: number;
  rounds: number;
  notes: string[];
  /** Requests still in flight when a window closed (the most over the rounds). */
  inFlight: number;
}

export const TARGET_LABEL: Record<TargetName, string> = { 'flag-proxy': 'flag-proxy', 'unleash-proxy': '@unleash/proxy', 'bare-node': 'bare node:http' };

/** A measurement's row: the scenario, with the population for polling (`poll-etag@20000`). */
export const rowName = (m: Pick<Measurement, 'scenario' | 'clients'>): string => (m.clients === undefined ? m.scenario : `${m.scenario}@${m.clients}`);

/** The rows measured at a flag count, in the scenarios' order (polling: one per population, ascending). */
export function rowsAt(flags: number, scenarios: ReportMeta['scenarios'], measurements: Measurement[]): string[] {
  const rows: string[] = [];
  for (const scenario of scenarios) {
    const here = measurements.filter((m) => m.flags === flags && m.scenario === scenario.name);
    const populations = [...new Set(here.flatMap((m) => (m.clients === undefined ? [] : [m.clients])))].sort((a, b) => a - b);
    if (populations.length) rows.push(...populations.map((n) => `${scenario.name}@${n}`));
    else if (here.length) rows.push(scenario.name);
  }
  return rows;
}

export function summarize(measurements: Measurement[]): Map<string, Cell> {
  const groups = new Map<string, Measurement[]>();
  for (const m of measurements) {
    const key = cellKey(m.flags, rowName(m), m.target);
    groups.set(key, [...(groups.get(key) ?? []), m]);
  }
  const cells = new Map<string, Cell>();
  for (const [key, list] of groups) {
    const rps = list.map((m) => m.rps);
    const statuses: Record<string, number> = {};
    for (const m of list) for (const [s, n] of Object.entries(m.statuses)) statuses[s] = (statuses[s] ?? 0) + n;
    const mid = median(rps);
    const highest = list.reduce((a, b) => (b.peakRssBytes > a.peakRssBytes ? b : a));
    cells.set(key, {
      rps: mid,
      rpsSpread: list.length > 1 && mid > 0 ? (Math.max(...rps) - Math.min(...rps)) / 2 / mid : 0,
      p50: median(list.map((m) => m.p50)),
      p99: median(list.map((m) => m.p99)),
      cpu: median(list.map((m) => m.cpuUsPerRequest)),
      system: median(list.map((m) => m.systemUsPerRequest ?? Number.NaN)),
      busy: median(list.map((m) => m.cpuBusy)),
      runnerBusy: median(list.map((m) => m.runnerBusy)),
      peak: Math.max(...list.map((m) => m.peakRssBytes)),
      heap: median(list.map((m) => m.heapBytesPerRequest)),
      live: Math.max(...list.map((m) => m.liveHeapBytes)),
      ...(highest.memoryParts ? { parts: highest.memoryParts } : {}),
      statuses,
      unexpected: list.reduce((sum, m) => sum + m.unexpected, 0),
      rounds: list.length,
      inFlight: Math.max(...list.map((m) => m.inFlight)),
      notes: [...new Set(list.flatMap((m) => (m.note ? [m.note] : [])))],
    });
  }
  return cells;
}

export const cellKey = (flags: number, scenario: string, target: string): string => `${flags}|${scenario}|${target}`;

const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const ms = (n: number): string => (Number.isNaN(n) ? '—' : n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0));
const us = (n: number): string => (n < 10 ? n.toFixed(1) : int(n));
const ratio = (n: number): string => (!Number.isFinite(n) ? '—' : n < 10 ? `${n.toFixed(2)}×` : `${n.toFixed(1)}×`);
const percent = (n: number): string => (!Number.isFinite(n) ? '—' : `${Math.round(n * 100)}%`);
const mb = (bytes: number): string => (bytes / 1024 / 1024).toFixed(0);
const kb = (bytes: number): string => (!Number.isFinite(bytes) ? '—' : bytes < 10 * 1024 ? (bytes / 1024).toFixed(1) : int(bytes / 1024));
const nsOrUs = (ns: number): string => (!Number.isFinite(ns) ? '—' : ns < 10_000 ? `${int(ns)} ns` : `${(ns / 1000).toFixed(ns < 100_000 ? 1 : 0)} µs`);

/**
 * No answer arrived within any of the cell's windows (@unleash/proxy at 5000 flags, 2026-11-28):
 * its CPU per request is then that of the requests left in flight, no figure to compare with.
 */
const answeredNothing = (cell: Pick<Cell, 'statuses'>): boolean => Object.values(cell.statuses).every((n) => n === 0);

/** flag-proxy's cell of a row and another target's, when both answered something (else there is no ratio). */
function comparable(cells: Map<string, Cell>, flags: number, row: string, other: TargetName): { ours: Cell; other: Cell } | undefined {
  const ours = cells.get(cellKey(flags, row, 'flag-proxy'));
  const theirs = cells.get(cellKey(flags, row, other));
  return ours && theirs && !answeredNothing(ours) && !answeredNothing(theirs) ? { ours, other: theirs } : undefined;
}

function answers(cell: Pick<Cell, 'statuses' | 'unexpected' | 'notes'> & { inFlight?: number }): string {
  const total = Object.values(cell.statuses).reduce((a, b) => a + b, 0);
  if (total === 0 && cell.unexpected === 0) {
    return `none within the windows${cell.inFlight ? ` (${int(cell.inFlight)} requests still in flight when each closed)` : ''}`;
  }
  const parts = Object.entries(cell.statuses)
    .sort((a, b) => b[1] - a[1])
    .map(([status, n]) => (n === total ? status : `${status} ${n / total >= 0.001 ? (100 * n / total).toFixed(1) : '<0.1'}%`));
  const notes = cell.notes.length ? ` (${cell.notes.join('; ')})` : '';
  return `${cell.unexpected > 0 ? `⚠ ${int(cell.unexpected)} unexpected · ` : ''}${parts.join(' · ') || '—'}${notes}`;
}

/** The load generator's core was full while the target's was not: req/s is a lower bound. */
const loadGeneratorBound = (cell: Cell): boolean => cell.runnerBusy >= 0.9 && cell.busy < 0.85;

/** Why a target has no row of a flag-proxy-only scenario (bench/scenarios.ts FLAG_PROXY_ONLY), or undefined for another row. */
function flagProxyOnlyReason(row: string, target: TargetName): string | undefined {
  if (row.startsWith('ofrep-')) return target === 'unleash-proxy' ? 'it has no OFREP' : 'it does not fake OFREP';
  if (row.startsWith('post-poll')) return target === 'unleash-proxy' ? 'it never answers a POST 304 (and has no /api/frontend)' : 'it does not fake the frontend API';
  if (row.startsWith('poll-after-change')) {
    return target === 'unleash-proxy' ? "its polls cost what poll-etag's do, a full evaluation each" : "it holds no flag set: the ratio is to its poll-etag row's 304";
  }
  if (row.startsWith('poll-scheduled')) {
    return target === 'unleash-proxy' ? "its polls cost what poll-etag's do, a full evaluation each" : "it holds no flag set: the ratio is to its poll-etag row's 304";
  }
  return undefined;
}

export function table(flags: number, rows: string[], targets: TargetName[], cells: Map<string, Cell>): string[] {
  const lines = [
    '| scenario | target | req/s | p50 ms | p99 ms | CPU µs/req | heap kB/req | CPU busy | peak RSS MB | vs @unleash/proxy (req/s · CPU) | vs bare node (req/s · CPU) | answers |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|',
  ];
  const comparable = (cell: Cell | undefined): Cell | undefined => (cell && !answeredNothing(cell) ? cell : undefined);
  for (const row of rows) {
    const unleash = comparable(cells.get(cellKey(flags, row, 'unleash-proxy')));
    // A 304 is a 304: a scheduled launch changes nothing for the bare server.
    const bare = comparable(cells.get(cellKey(flags, row.replace(/^poll-(scheduled|after-change)@/, 'poll-etag@'), 'bare-node')));
    for (const target of targets) {
      const cell = cells.get(cellKey(flags, row, target));
      if (!cell) {
        // @unleash/proxy is not primed with the largest populations (see UNLEASH_POLL_LIMIT).
        const only = flagProxyOnlyReason(row, target);
        if (only !== undefined) lines.push(`| ${row} | ${TARGET_LABEL[target]} | — | — | — | — | — | — | — | — | — | not measured: ${only} |`);
        else if (target === 'unleash-proxy' && row.includes('@')) lines.push(`| ${row} | ${TARGET_LABEL[target]} | — | — | — | — | — | — | — | — | — | not measured: priming it with this many clients takes too long |`);
        continue;
      }
      const spread = cell.rounds > 1 ? ` ±${Math.round(cell.rpsSpread * 100)}%` : '';
      const bound = loadGeneratorBound(cell) ? ' †' : '';
      const silent = answeredNothing(cell);
      const vsUnleash = unleash && !silent ? `${ratio(cell.rps / unleash.rps)} · ${ratio(unleash.cpu / cell.cpu)}` : '—';
      const vsBare = bare && !silent ? `${percent(cell.rps / bare.rps)} · ${percent(bare.cpu / cell.cpu)}` : '—';
      lines.push(
        `| ${row} | ${TARGET_LABEL[target]} | ${int(cell.rps)}${spread}${bound} | ${ms(cell.p50)} | ${ms(cell.p99)} | ${silent ? '—' : us(cell.cpu)} | ${kb(cell.heap)} | ${percent(cell.busy)} | ${mb(cell.peak)} | ${vsUnleash} | ${vsBare} | ${answers(cell)} |`,
      );
    }
  }
  return lines;
}

/**
 * Issue 16's targets (and issue 15's in-process one), checked against this run's medians, only
 * those it measured. Costs are judged by CPU per request, the figure that does not depend on
 * whether the load generator kept up; req/s is shown beside.
 */
function goals(
  flagCounts: number[],
  pollClients: number[],
  cells: Map<string, Cell>,
  idle: IdleMemory[],
  inProcess: InProcessResult | undefined,
  cliMemory: CliMemoryMeasurement[],
  interleaved: InterleavedRow[] = [],
): string[] {
  const rows: string[] = [];
  const get = (flags: number, row: string, target: TargetName): Cell | undefined => cells.get(cellKey(flags, row, target));
  const first = flagCounts[0] as number;
  const mark = (ok: boolean): string => (ok ? '✓' : '✗');
  /**
   * flag-proxy's CPU per request at most `times` the bare server's: judged on the row taken in
   * turns where the run has it (the rounds' windows, seconds apart, carry the machine's drift),
   * the rounds' medians beside; `split` adds how those divide between user space and the kernel.
   */
  const nearBare = (goal: string, flags: number, row: string, times: number, split = false): void => {
    const pair = comparable(cells, flags, row, 'bare-node');
    const windowed = pair ? { ours: pair.ours, bare: pair.other, x: pair.ours.cpu / pair.other.cpu } : undefined;
    const turns = interleaved.find((r) => r.flags === flags && rowName(r) === row && Number.isFinite(r.ratio));
    if (!windowed && !turns) return;
    const parts =
      split && windowed && Number.isFinite(windowed.ours.system) && Number.isFinite(windowed.bare.system)
        ? `; in user space ${us(windowed.ours.cpu - windowed.ours.system)} vs ${us(windowed.bare.cpu - windowed.bare.system)} µs (${ratio((windowed.ours.cpu - windowed.ours.system) / (windowed.bare.cpu - windowed.bare.system))}), in the kernel ${us(windowed.ours.system)} vs ${us(windowed.bare.system)} µs`
        : '';
    const rounds = windowed ? `${us(windowed.ours.cpu)} vs ${us(windowed.bare.cpu)} µs: ${ratio(windowed.x)} bare (req/s ${percent(windowed.ours.rps / windowed.bare.rps)} of bare)${parts}` : '';
    const figure = turns
      ? `taking turns: ${us(turns.flagProxyUs)} vs ${us(turns.bareUs)} µs: ${ratio(turns.ratio)} bare (slices ${ratio(turns.low)} to ${ratio(turns.high)})${windowed ? `; the rounds' medians: ${rounds}` : ''}`
      : rounds;
    const x = turns ? turns.ratio : (windowed as { x: number }).x;
    rows.push(`| ${goal} | ${figure} | ${mark(x <= times)} |`);
  };
  /** @unleash/proxy's CPU per request at least `times` flag-proxy's: taken in turns where the run has it, as {@link nearBare}. */
  const versus = (goal: string, flags: number, row: string, times: number): void => {
    const pair = comparable(cells, flags, row, 'unleash-proxy');
    const windowed = pair ? { ours: pair.ours, theirs: pair.other, x: pair.other.cpu / pair.ours.cpu } : undefined;
    const turns = interleaved.find((r) => r.flags === flags && rowName(r) === row && r.unleashUs !== undefined && Number.isFinite(r.unleashUs / r.flagProxyUs));
    if (!windowed && !turns) return;
    const rounds = windowed ? `${us(windowed.ours.cpu)} vs ${us(windowed.theirs.cpu)} µs: ${ratio(windowed.x)} less CPU (req/s ${ratio(windowed.ours.rps / windowed.theirs.rps)})` : '';
    const taken = turns ? (turns.unleashUs as number) / turns.flagProxyUs : undefined;
    const figure = turns && taken !== undefined ? `taking turns: ${us(turns.flagProxyUs)} vs ${us(turns.unleashUs as number)} µs: ${ratio(taken)} less CPU${windowed ? `; the rounds' medians: ${rounds}` : ''}` : rounds;
    const x = taken ?? (windowed as { x: number }).x;
    rows.push(`| ${goal} | ${figure} | ${mark(x >= times)} |`);
  };
  for (const n of pollClients) nearBare(`304 polls, ${n.toLocaleString('en-US')} clients: CPU ≤ 1.5× bare node's`, first, `poll-etag@${n}`, 1.5);
  versus(`304 polls, 20,000 clients: ≥ 50× less CPU than @unleash/proxy`, first, 'poll-etag@20000', 50);
  if (pollClients.length > 1) {
    const polled = pollClients.map((n) => get(first, `poll-etag@${n}`, 'flag-proxy'));
    const low = polled[0]?.live;
    const high = polled[polled.length - 1]?.live;
    const nextToHigh = polled[polled.length - 2]?.live;
    if (low !== undefined && high !== undefined && nextToHigh !== undefined) {
      // Judged on the heap kept after a full collection: peak RSS also holds what V8 grew to while
      // priming (a full evaluation per client) and has not returned yet. The answer cache keeps what
      // clients ask for a second time without an ETag (each larger population's first clients are
      // the smaller one's), up to its budget and no further: allowed once, over the whole range.
      const slack = (from: number): number => from * 0.1 + 2 * 2 ** 20;
      const flat = high <= low + DEFAULT_ANSWER_CACHE_BYTES + slack(low) && high <= nextToHigh + slack(nextToHigh);
      rows.push(
        `| memory does not grow with the client count (heap kept after a full GC: within 10% + 2 MiB from ${pollClients[pollClients.length - 2]?.toLocaleString('en-US')} to ${pollClients[pollClients.length - 1]?.toLocaleString('en-US')} clients, ` +
          `and from ${pollClients[0]?.toLocaleString('en-US')} within that plus the answer cache's ${mb(DEFAULT_ANSWER_CACHE_BYTES)} MiB budget) | ` +
          `heap kept ${polled.map((c) => (c ? mb(c.live) : '—')).join(' → ')} MB; peak RSS ${polled.map((c) => (c ? mb(c.peak) : '—')).join(' → ')} MB | ${mark(flat)} |`,
      );
    }
  }
  // OFREP polls and POST polls have no bare counterpart: their cost must not grow with the population.
  const flatPolls = (label: string, scenario: string): void => {
    const polled = pollClients.map((n) => get(first, `${scenario}@${n}`, 'flag-proxy'));
    const [fewest, most] = [polled[0], polled[polled.length - 1]];
    if (pollClients.length < 2 || !fewest || !most) return;
    const x = most.cpu / fewest.cpu;
    rows.push(
      `| ${label}: CPU at ${pollClients[pollClients.length - 1]?.toLocaleString('en-US')} clients ≤ 1.5× at ${pollClients[0]?.toLocaleString('en-US')} | ` +
        `${polled.map((c) => (c ? us(c.cpu) : '—')).join(' → ')} µs: ${ratio(x)} | ${mark(x <= 1.5)} |`,
    );
  };
  flatPolls('OFREP 304 polls', 'ofrep-poll');
  flatPolls('frontend SDK POST 304 polls', 'post-poll');
  for (const flags of flagCounts.filter((f) => f === 200 || f === 1000)) versus(`unique contexts, GET, ${flags} flags: ≥ 15× less CPU than @unleash/proxy`, flags, 'get-unique', 15);
  if (flagCounts.includes(200)) nearBare('stretch: unique contexts, GET, 200 flags: CPU ≤ 4× bare node', 200, 'get-unique', 4, true);
  nearBare('preflight: CPU ≤ 1.25× bare node', first, 'preflight', 1.25);
  nearBare('health: CPU ≤ 1.25× bare node', first, 'health', 1.25);
  const idleOf = (target: TargetName): number | undefined => {
    const list = idle.filter((i) => i.flags === first && i.target === target).map((i) => i.rssBytes);
    return list.length ? median(list) : undefined;
  };
  const idleOurs = idleOf('flag-proxy');
  const idleBare = idleOf('bare-node');
  if (idleOurs !== undefined && idleBare !== undefined) {
    rows.push(`| idle RSS, ${first} flags: ≤ bare node + 15 MiB | ${mb(idleOurs)} MB vs ${mb(idleBare)} MB (+${mb(idleOurs - idleBare)}) | ${mark(idleOurs <= idleBare + 15 * 2 ** 20)} |`);
  }
  // Per flag count, the predecessor's peak over every row it ran, against ours over the same rows.
  const peakOver = (target: TargetName, keys: string[]): number | undefined => {
    const peaks = keys.flatMap((key) => {
      const cell = cells.get(`${key}|${target}`);
      return cell ? [cell.peak] : [];
    });
    return peaks.length ? Math.max(...peaks) : undefined;
  };
  const shared = [...cells.keys()].filter((key) => key.endsWith('|unleash-proxy')).map((key) => key.slice(0, -'|unleash-proxy'.length));
  for (const flags of flagCounts) {
    const here = shared.filter((key) => key.startsWith(`${flags}|`));
    const ours = peakOver('flag-proxy', here);
    const theirs = peakOver('unleash-proxy', here);
    if (ours === undefined || theirs === undefined) continue;
    rows.push(
      `| peak RSS under load, ${flags} flags (highest over the rows both ran): ≤ half of @unleash/proxy's | ${mb(ours)} MB vs ${mb(theirs)} MB (${percent(ours / theirs)}) | ${mark(ours <= theirs / 2)} |`,
    );
    const cli = cliMemory.filter((m) => m.flags === flags && here.includes(`${flags}|${rowName(m)}`));
    if (cli.length > 0) {
      const peak = Math.max(...cli.map((m) => m.peakRssBytes));
      rows.push(
        `| the same, flag-proxy's CLI as one process (it caps its own young generation; the rows above run the handler in a host that sets no V8 flag): ≤ half of @unleash/proxy's | ${mb(peak)} MB vs ${mb(theirs)} MB (${percent(peak / theirs)}) | ${mark(peak <= theirs / 2)} |`,
      );
    }
  }
  for (const row of inProcess?.rows.filter((r) => r.name === 'isEnabled' || r.name === 'whole-set') ?? []) {
    const x = row.unleashClient.ns / row.flagProxy.ns;
    rows.push(
      `| in process, ${row.name === 'isEnabled' ? '`isEnabled` per call' : 'the whole flag set of a new context'}: ≥ 10× faster than unleash-client (issue 15) | ${nsOrUs(row.flagProxy.ns)} vs ${nsOrUs(row.unleashClient.ns)}: ${ratio(x)} | ${mark(x >= 10)} |`,
    );
  }
  if (rows.length === 0) return [];
  return [
    '## Targets of issue 16, as measured in this run',
    '',
    'Costs are judged by CPU per request (the figure that does not depend on whether the load generator kept up), req/s beside;',
    ...(interleaved.length > 0 ? ["against the bare server and @unleash/proxy, by the rows taken in turns (above) where the run has them, the rounds' medians beside."] : []),
    '',
    '| goal | flag-proxy | met |',
    '|---|--:|:-:|',
    ...rows,
    '',
  ];
}

/** The rows taken in turns with the bare server (bench/interleave.ts), beside the rounds' medians. */
export function interleavedSection(interleaved: InterleavedRow[], cells: Map<string, Cell>): string[] {
  if (interleaved.length === 0) return [];
  const first = interleaved[0] as InterleavedRow;
  const sets = first.setRatios.length;
  const lines = interleaved.map((r) => {
    const pair = comparable(cells, r.flags, rowName(r), 'bare-node');
    const rounds = pair ? ratio(pair.ours.cpu / pair.other.cpu) : '—';
    const predecessor = r.unleashUs !== undefined ? `${us(r.unleashUs)} | ${ratio(r.unleashUs / r.flagProxyUs)}` : '— | —';
    return (
      `| ${rowName(r)} | ${r.flags} | ${us(r.flagProxyUs)} | ${us(r.bareUs)} | ${ratio(r.ratio)} | ${r.setRatios.map(ratio).join(', ')} | ${ratio(r.low)} to ${ratio(r.high)} | ${rounds} | ${predecessor} | ` +
      `${r.unexpected > 0 ? `⚠ ${int(r.unexpected)} unexpected` : 'as expected'} |`
    );
  });
  return [
    '## Ratios to the bare server, taking turns',
    '',
    `After the rounds, flag-proxy and the bare server ran once more, in ${sets} set${sets === 1 ? '' : 's'} of fresh processes (one process per target each) on the targets' core, and took turns in ${first.sliceSeconds} s slices ` +
      `(${first.flagProxy.length} measured per target and row over all sets, each set's after ${first.warmupSlices} unmeasured; who goes first rotates every turn), the rows in the table's order in the same processes, ` +
      'each polling population primed as in its window. A row of the rounds compares windows seconds apart, and this machine\'s speed drifts within seconds: ' +
      'in the run of 2026-11-29 10:22 the same build read from 1.1× to 2.3× the bare server\'s 304 from one round to the next. Taking turns puts that drift on all of them alike; ' +
      'several sets of processes average out what one process\'s placement in memory adds or saves (two processes of one build, taking turns, read up to 8% apart). ' +
      'CPU µs per request is over every measured slice of every set; then the ratio of each set, and the range of the slices taken in turn. ' +
      '@unleash/proxy takes its turns too in the rows whose goals compare with it (unique contexts, the polling populations it is primed with).',
    '',
    "| row | flags | flag-proxy CPU µs/req | bare node CPU µs/req | flag-proxy / bare | each set of processes | slices taken in turn | the rounds' medians | @unleash/proxy CPU µs/req | @unleash/proxy / flag-proxy | answers |",
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|',
    ...lines,
    '',
  ];
}

/** Peak RSS and heap per request of each target at each polling population. */
function pollingMemory(flags: number, pollClients: number[], targets: TargetName[], cells: Map<string, Cell>): string[] {
  const rows = POLLING.flatMap((scenario) =>
    targets.flatMap((target) => {
      const here = pollClients.map((n) => cells.get(cellKey(flags, `${scenario}@${n}`, target)));
      if (here.every((c) => c === undefined)) return [];
      return [`| ${TARGET_LABEL[target]}${scenario === 'poll-etag' ? '' : ` (${scenario})`} | ${here.map((c) => (c ? `${mb(c.peak)} · ${mb(c.live)} · ${kb(c.heap)}` : '—')).join(' | ')} |`];
    }),
  );
  if (rows.length === 0 || pollClients.length < 2) return [];
  return [
    'Memory while polling, by population: peak RSS in the window (MB) · V8 heap kept after a full collection right after it (MB) · heap allocated per request (kB).',
    "Peak RSS includes what V8's heap grew to while priming (one full evaluation per client before the window) and has not given back; the heap kept is what the process holds on to.",
    '',
    `| target | ${pollClients.map((n) => `${n.toLocaleString('en-US')} clients`).join(' | ')} |`,
    `|---|${pollClients.map(() => '--:').join('|')}|`,
    ...rows,
    '',
  ];
}

/**
 * Where each target's memory was at the end of its window with the highest peak at a flag count:
 * what to read when a peak is to come down (the young generation reaches its maximum in any busy
 * Node server; the rest is what each target holds).
 */
function memoryPartsTable(flags: number, rows: string[], targets: TargetName[], cells: Map<string, Cell>): string[] {
  const lines = targets.flatMap((target) => {
    let top: { row: string; cell: Cell } | undefined;
    for (const row of rows) {
      const cell = cells.get(cellKey(flags, row, target));
      if (cell?.parts && (top === undefined || cell.peak > top.cell.peak)) top = { row, cell };
    }
    if (top === undefined) return [];
    const p = top.cell.parts as MemoryParts;
    return [
      `| ${TARGET_LABEL[target]} | ${top.row} | ${mb(top.cell.peak)} | ${mb(p.young)} | ${mb(p.old)} | ${mb(p.codeAndLarge)} | ${mb(p.mallocHeap)} | ${mb(p.otherAnonymous)} | ${mb(p.fileBacked)} |`,
    ];
  });
  if (lines.length === 0) return [];
  return [
    "Where memory was at the end of each target's window with the highest peak (MB): V8's young generation, old generation, and code and large objects as committed; then the resident pages of malloc's main heap, of other anonymous mappings (V8's heap pages among them) and of files (node itself).",
    '',
    '| target | window | peak RSS | young | old | code, large | malloc heap | other anonymous | file-backed |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|',
    ...lines,
    '',
  ];
}

/** Idle RSS of each target at a flag count: once started and checked, before any load (median over its processes). */
/**
 * The CLI's memory rows at one flag count: its peak RSS per window beside the main table's targets'
 * (the highest over their rounds), and its idle RSS.
 */
function cliMemorySection(flags: number, cliMemory: CliMemoryMeasurement[], cliIdle: IdleMemory[], cells: Map<string, Cell>): string[] {
  const list = cliMemory.filter((m) => m.flags === flags);
  if (list.length === 0) return [];
  const peakOf = (m: CliMemoryMeasurement, target: TargetName): string => {
    const cell = cells.get(cellKey(flags, rowName(m), target));
    return cell ? mb(cell.peak) : '—';
  };
  const idle = cliIdle.find((i) => i.flags === flags);
  return [
    "flag-proxy's CLI as one process (`FLAG_PROXY_WORKERS=1`, placed as the targets above; it caps its young generation at `FLAG_PROXY_YOUNG_GENERATION_MB`, see docs/performance.md), " +
      'through the windows @unleash/proxy ran, in its order, once: peak RSS (MB) per window, beside the highest of each target above over its rounds.',
    '',
    '| window | CLI peak RSS | CLI CPU µs/req | flag-proxy (handler in node:http) | @unleash/proxy | bare node:http |',
    '|---|--:|--:|--:|--:|--:|',
    ...list.map(
      (m) => `| ${rowName(m)} | ${mb(m.peakRssBytes)} | ${Number.isFinite(m.cpuUsPerRequest) ? us(m.cpuUsPerRequest) : '—'} | ${peakOf(m, 'flag-proxy')} | ${peakOf(m, 'unleash-proxy')} | ${peakOf(m, 'bare-node')} |`,
    ),
    '',
    ...(idle ? [`Idle RSS of the CLI (once started and checked, before any load): ${mb(idle.rssBytes)} MB.`, ''] : []),
  ];
}

function idleLine(flags: number, targets: TargetName[], idle: IdleMemory[]): string[] {
  const parts = targets.flatMap((target) => {
    const list = idle.filter((i) => i.flags === flags && i.target === target).map((i) => i.rssBytes);
    return list.length ? [`${TARGET_LABEL[target]} ${mb(median(list))} MB`] : [];
  });
  return parts.length ? [`Idle RSS (each process once started and checked, before any load; median): ${parts.join(', ')}.`, ''] : [];
}

/** The in-process rows (issue 15). */
/** The OFREP SSE fan-out (bench/fanout.ts). */
function fanoutSection(results: FanoutResult[]): string[] {
  const first = results[0] as FanoutResult;
  const msOf = (n: number): string => (Number.isFinite(n) ? int(n) : '—');
  const ms1 = (n: number): string => (Number.isFinite(n) ? n.toFixed(1) : '—');
  const pacing = (r: FanoutResult): string => (r.noticesPerSecond === undefined ? 'default' : r.noticesPerSecond === 0 ? '0 (all at once)' : int(r.noticesPerSecond));
  const row = (r: FanoutResult): string => {
    const per = (before: number, after: number): string => (r.open > 0 && Number.isFinite(after - before) ? ((after - before) / r.open / 1024).toFixed(1) : '—');
    return (
      `| ${pacing(r)} | ${int(r.open)} of ${int(r.requested)}${r.refused ? ` (${int(r.refused)} refused)` : ''} | ${r.openSeconds.toFixed(1)} s | ${per(r.rssBefore, r.rssAfter)} kB | ${per(r.heapBefore, r.heapAfter)} kB | ` +
      `${int(r.notified)} | ${msOf(r.changeToFirstMs)} ms | ${msOf(r.changeToP50Ms)} ms | ${msOf(r.changeToLastMs)} ms | ${msOf(r.changeToLastMs - r.changeToFirstMs)} ms | ` +
      `${int(r.refetched)} | ${msOf(r.changeToLastRefetchMs)} ms | ${ms1(r.probeP50Ms)} · ${ms1(r.probeP99Ms)} · ${ms1(r.probeMaxMs)} ms |`
    );
  };
  return [
    '## OFREP event streams: fan-out',
    '',
    `One flag-proxy process (${first.flags} flags, \`maxEventStreams\` above the count) holding \`GET /ofrep/v1/sse\` streams opened by the runner on loopback,`,
    `one socket each; then one flag is flipped in the upstream, and every stream waits for its \`refetchEvaluation\` event.`,
    `The proxy polls the upstream every ${first.refreshIntervalMs} ms here, so "change → first" is mostly the wait for that poll`,
    `(0 to ${first.refreshIntervalMs} ms) and "first → last" is the proxy telling every stream. Memory per stream is the target's growth`,
    `divided by the open streams: RSS, and the V8 heap in use after a full collection (kernel socket buffers are in neither).`,
    `On its notice each stream fetches its flags again, as a browser's provider does (a bulk evaluation for a context of its own, over a pool of`,
    `${int(REFETCH_SOCKETS)} connections), while a probe asks for \`/proxy/health\` one request at a time, ${PROBE_GAP_MS} ms apart: its latency from the first notice`,
    `to the last refetch answered is how long the refetches keep other requests waiting. Once with the proxy's default pacing of the notices`,
    `(\`ofrep.refetchNoticesPerSecond\`), once with every stream told at once (0), each in a fresh process.`,
    `Open-file limit (\`ulimit -n\`) of the runner and target: ${Number.isFinite(first.fdLimit) ? int(first.fdLimit) : 'unlimited'}.`,
    '',
    '| notices per second | open streams | opened in | RSS per stream | heap per stream | notified | change → first | change → p50 | change → last | first → last | refetched | change → last refetch | health p50 · p99 · worst |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...results.map(row),
    '',
    ...results.map((r) => `${pacing(r)}: RSS ${mb(r.rssBefore)} → ${mb(r.rssAfter)} MB, heap ${mb(r.heapBefore)} → ${mb(r.heapAfter)} MB.`),
    '',
  ];
}

function inProcessSection(result: InProcessResult): string[] {
  const lines = [
    `## In process, ${result.flags} flags: flag-proxy's API against unleash-client`,
    '',
    `\`proxy.isEnabled\`, \`proxy.getVariant\` and \`proxy.evaluate\` against \`unleash-client\` ${'(an `Unleash` instance)'} on the same ${result.toggles} flags, fed by the same in-memory upstream,`,
    `in one process pinned to the targets' core (bench/in-process.ts): ${result.rounds} rounds of about ${result.batchMs} ms per operation, interleaved, after a warm-up round; medians.`,
    'Per call: each call asks for the next flag in a new pair of flag and context (from a pool of 4,096 contexts). Whole set: a context never seen before each time;',
    "flag-proxy's `evaluate` also picks each enabled toggle's variant, so its side does more than `isEnabled` over every flag does.",
    `Before timing, both sides answered ${result.checked.toLocaleString('en-US')} questions (isEnabled, the whole set, getVariant's name and state) for 100 contexts: ` +
      `${result.differences === 0 ? 'identical' : `⚠ ${result.differences} differed`}.`,
    '',
    '| question | flag-proxy | unleash-client | flag-proxy per call | unleash-client per call | faster | heap B/call (flag-proxy · unleash-client) |',
    '|---|---|---|--:|--:|--:|--:|',
  ];
  for (const row of result.rows) {
    const spread = (f: InProcessResult['rows'][number]['flagProxy']): string => (result.rounds > 1 ? ` ±${Math.round(f.spread * 100)}%` : '');
    lines.push(
      `| ${row.name === 'whole-set' ? 'whole flag set, new context' : `${row.name}, per call`} | ${row.ours} | ${row.theirs} | ${nsOrUs(row.flagProxy.ns)}${spread(row.flagProxy)} | ${nsOrUs(row.unleashClient.ns)}${spread(row.unleashClient)} | ` +
        `${ratio(row.unleashClient.ns / row.flagProxy.ns)} | ${int(row.flagProxy.heapBytes)} · ${int(row.unleashClient.heapBytes)} |`,
    );
  }
  lines.push('');
  return lines;
}

/** What the other processes on the machine took from the two cores while we measured. */
function otherLoad(measurements: Measurement[], cluster: boolean): { line: string; caveat?: string } {
  const loads = measurements.flatMap((m) => (m.otherLoad ? [m.otherLoad] : []));
  if (measurements.length === 0) return { line: cluster ? 'see the scale-out section' : 'not measured (no HTTP rows in this run)' };
  if (loads.length === 0) return { line: 'not measured (processes not pinned)' };
  const target = loads.map((l) => l.targetCore);
  const runner = loads.map((l) => l.runnerCore);
  const line =
    `other processes took a median ${percent(median(target))} (max ${percent(Math.max(...target))}) of the targets' core ` +
    `and ${percent(median(runner))} (max ${percent(Math.max(...runner))}) of the load generator's core during the measurements`;
  const noisy = loads.filter((l) => l.targetCore > NOISY || l.runnerCore > NOISY).length;
  return noisy
    ? {
        line,
        caveat:
          `${noisy} of ${loads.length} measurements shared a core with other processes for more than ${percent(NOISY)} of the time: the machine was not quiet. ` +
          'req/s, latencies and their ratios then depend on how much of its core each target happened to get, so they are low and noisy; ' +
          'CPU per request (and its ratios) is the figure that holds up best. Re-run on an idle machine before quoting.',
      }
    : { line };
}

interface ClusterCell {
  rps: number;
  rpsSpread: number;
  p50: number;
  p99: number;
  cpu: number;
  primaryShare: number;
  targetCores: number;
  runnerCores: number;
  runnerUs: number;
  otherCores: number;
  otherMax: number;
  /** CLI, load generator and others together, in cores. */
  machineCores: number;
  peak: number;
  statuses: Record<string, number>;
  unexpected: number;
  rounds: number;
  notes: string[];
}

function summarizeCluster(measurements: ClusterMeasurement[]): Map<string, ClusterCell> {
  const groups = new Map<string, ClusterMeasurement[]>();
  for (const m of measurements) {
    const key = `${m.scenario}|${m.variant}`;
    groups.set(key, [...(groups.get(key) ?? []), m]);
  }
  const cells = new Map<string, ClusterCell>();
  for (const [key, list] of groups) {
    const rps = list.map((m) => m.rps);
    const statuses: Record<string, number> = {};
    for (const m of list) for (const [st, n] of Object.entries(m.statuses)) statuses[st] = (statuses[st] ?? 0) + n;
    const mid = median(rps);
    cells.set(key, {
      rps: mid,
      rpsSpread: list.length > 1 && mid > 0 ? (Math.max(...rps) - Math.min(...rps)) / 2 / mid : 0,
      p50: median(list.map((m) => m.p50)),
      p99: median(list.map((m) => m.p99)),
      cpu: median(list.map((m) => m.cpuUsPerRequest)),
      primaryShare: median(list.map((m) => m.primaryShare)),
      targetCores: median(list.map((m) => m.targetCores)),
      runnerCores: median(list.map((m) => m.runnerCores)),
      runnerUs: median(list.map((m) => m.runnerUsPerRequest)),
      otherCores: median(list.map((m) => m.otherCores)),
      otherMax: Math.max(...list.map((m) => m.otherCores)),
      machineCores: median(list.map((m) => m.targetCores + m.runnerCores + m.otherCores)),
      peak: Math.max(...list.map((m) => m.peakRssBytes)),
      statuses,
      unexpected: list.reduce((sum, m) => sum + m.unexpected, 0),
      rounds: list.length,
      notes: [...new Set(list.flatMap((m) => (m.note ? [m.note] : [])))],
    });
  }
  return cells;
}

const cores = (n: number): string => n.toFixed(2);
/** Share of all cores busy at which a cluster row counts as bound by the machine rather than by the proxy. */
const SATURATED = 0.9;

/** The cluster comparison's section: a table, what was placed where, and the 2-vs-1 ratios in words. */
function clusterSection(meta: ClusterMeta, scenarios: ReportMeta['scenarios'], measurements: ClusterMeasurement[]): string[] {
  const cells = summarizeCluster(measurements);
  const measured = scenarios.filter((s) => measurements.some((m) => m.scenario === s.name));
  if (measured.length === 0) return [];
  const baselineLabel = meta.variants.find((v) => v.name === meta.baseline)?.label ?? meta.baseline;
  const rows = [
    `| scenario | workers | placement | req/s | p50 ms | p99 ms | CPU µs/req (all processes) | CLI CPU (cores) | load generator CPU (cores · µs/req) | others (cores) | machine busy | peak RSS MB (sum) | vs ${baselineLabel} (req/s · CPU) | answers |`,
    '|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|',
  ];
  const summary: string[] = [];
  for (const scenario of measured) {
    const base = cells.get(`${scenario.name}|${meta.baseline}`);
    for (const variant of meta.variants) {
      const cell = cells.get(`${scenario.name}|${variant.name}`);
      if (!cell) continue;
      const spread = cell.rounds > 1 ? ` ±${Math.round(cell.rpsSpread * 100)}%` : '';
      const vs = base && variant.name !== meta.baseline ? `${ratio(cell.rps / base.rps)} · ${ratio(base.cpu / cell.cpu)}` : variant.name === meta.baseline ? '1.00× · 1.00×' : '—';
      const primary = variant.workers > 1 ? ` (primary ${(cell.primaryShare * 100).toFixed(1)}%)` : '';
      rows.push(
        `| ${scenario.name} | ${variant.workers} | ${variant.pinned ? `pinned: CLI on core 1, load generator on core 0` : 'unpinned: all processes on any core'} | ${int(cell.rps)}${spread} | ${ms(cell.p50)} | ${ms(cell.p99)} | ${us(cell.cpu)}${primary} | ${cores(cell.targetCores)} | ${cores(cell.runnerCores)} · ${us(cell.runnerUs)} | ${cores(cell.otherCores)} | ${percent(cell.machineCores / meta.cores)} | ${mb(cell.peak)} | ${vs} | ${answers(cell)} |`,
      );
    }
    const two = meta.variants.find((v) => v.workers === 2);
    const cell = two ? cells.get(`${scenario.name}|${two.name}`) : undefined;
    if (base && cell) {
      summary.push(
        `- **${scenario.name}**: 2 workers serve ${ratio(cell.rps / base.rps)} the req/s of 1 (${int(cell.rps)} vs ${int(base.rps)}; p99 ${ms(cell.p99)} vs ${ms(base.p99)} ms), ` +
          `at ${ratio(base.cpu / cell.cpu)} the CPU efficiency (${us(cell.cpu)} vs ${us(base.cpu)} µs per request, primary included). ` +
          `The 2 workers and primary used ${cores(cell.targetCores)} of the ${meta.cores} cores, the load generator ${cores(cell.runnerCores)}, other processes ${cores(cell.otherCores)}` +
          (cell.machineCores / meta.cores >= SATURATED
            ? `: the machine was saturated (${percent(cell.machineCores / meta.cores)} busy), so this req/s is what the cores left to the workers allow.`
            : '.'),
      );
    }
  }
  const noisy = [...cells.values()].some((c) => c.otherMax > NOISY);
  return [
    `## Scale-out: flag-proxy's CLI with FLAG_PROXY_WORKERS=1 and 2, ${meta.flags} flags`,
    '',
    `flag-proxy's own CLI (${meta.source}), configured by environment variables as in production (its default backup file in a fresh temp directory),`,
    'with `FLAG_PROXY_WORKERS=1` (one process: the CLI then starts no cluster primary) and `FLAG_PROXY_WORKERS=2` (a `node:cluster` primary that hands',
    'connections round-robin to 2 workers; the 16 keep-alive connections end up 8 per worker). Every process is checked against the reference answers before it is timed.',
    "With 2 workers the warm-up lasts twice as long, so each worker's JIT and cache get at least the requests the single worker's did.",
    '',
    `This machine has ${meta.cores} cores and the load generator runs on it too${meta.cores < 3 ? ', so 2 workers cannot have a core each to themselves' : ''}. In the **unpinned** rows nothing`,
    'is pinned: the load generator (with the upstream), the primary and the workers share all cores as the kernel schedules them, and the',
    `2-vs-1 ratio compares the 2-worker row with the 1-worker unpinned row, placed the same way. The **pinned** row is the 1-worker CLI in the main`,
    "table's placement (CLI on core 1, load generator alone on core 0), for comparison. CPU µs/req counts the primary and every worker (from /proc, 10 ms ticks),",
    "idle to idle, per request sent; the load generator column is the runner's own CPU (wrk or autocannon, and the in-memory upstream) over the window;",
    `"others" is what other processes used of all ${meta.cores} cores together. With ${meta.cores} cores, the 2 workers can use at most what the load generator and`,
    'the other processes leave, so the req/s ratio stays below 2× by about that much; the CPU ratio shows what a worker costs per request.',
    '',
    ...rows,
    '',
    ...meta.notes.map((n) => `${n}`),
    ...(meta.notes.length ? [''] : []),
    ...summary,
    ...(noisy
      ? [
          '',
          `Other processes took more than ${cores(NOISY)} of a core during some of these windows: the machine was not quiet, and req/s figures and ratios are noisy. Re-run on an idle machine before quoting.`,
        ]
      : []),
    '',
  ];
}

/** Share of a core taken by others above which a measurement is called noisy. */
const NOISY = 0.15;

/** The refresh rows (bench/refresh.ts): adopting a changed flag set, per flag count. */
function refreshSection(results: RefreshResult[]): string[] {
  const ms = (n: number): string => (n < 10 ? n.toFixed(1) : n.toFixed(0));
  // Results written before the first-answers columns existed have none.
  const optionalMs = (n: number | undefined): string => (n === undefined ? '—' : `${ms(n)} ms`);
  return [
    '## Adopting a changed flag set',
    '',
    `Each side in a process of its own on the targets' core, holding the flag set from the runner's upstream: one flag changes, the whole set is fetched and adopted,`,
    "and meanwhile the event loop's longest block is measured (how late a 1 ms timer ran, `monitorEventLoopDelay`): what every request the host serves then waits at most.",
    "flag-proxy calls `proxy.refresh()`; unleash-client (what @unleash/proxy runs to hold its flags) its repository's `fetch()`, then waits for `changed`. Medians over the changes (after one unreported), and the worst.",
    "Then flag-proxy answers its first requests on the new set over loopback (a tagged GET /proxy and an OFREP bulk evaluation for a new user, and a server SDK's gzipped poll of /api/client/features), and the longest block is measured again: what an answer builds once per flag set.",
    '',
    "| flags | changes | flag-proxy: adopted in | longest block | worst | first answers' longest block | worst | unleash-client: adopted in | longest block | worst | longest block, unleash-client ÷ flag-proxy |",
    '|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...results.map(
      (r) =>
        `| ${r.flags} | ${r.changes} | ${ms(r.flagProxy.adoptMs)} ms | ${ms(r.flagProxy.blockMs)} ms | ${ms(r.flagProxy.worstBlockMs)} ms | ${optionalMs(r.flagProxy.firstAnswersBlockMs)} | ${optionalMs(r.flagProxy.worstFirstAnswersBlockMs)} | ${ms(r.unleashClient.adoptMs)} ms | ${ms(r.unleashClient.blockMs)} ms | ${ms(r.unleashClient.worstBlockMs)} ms | ${(r.unleashClient.blockMs / r.flagProxy.blockMs).toFixed(2)}× |`,
    ),
    '',
  ];
}

export function renderReport(
  meta: ReportMeta,
  flagCounts: number[],
  targets: TargetName[],
  measurements: Measurement[],
  cluster: ClusterMeasurement[] = [],
  idle: IdleMemory[] = [],
  inProcess?: InProcessResult,
  fanout?: FanoutResult[],
  refresh: RefreshResult[] = [],
  cliMemory: CliMemoryMeasurement[] = [],
  cliIdle: IdleMemory[] = [],
  interleaved: InterleavedRow[] = [],
): string {
  const cells = summarize(measurements);
  const others = otherLoad(measurements, meta.cluster !== undefined);
  const bound = [...cells.values()].some(loadGeneratorBound);
  const out = [
    '# flag-proxy benchmark',
    '',
    `- **Date**: ${meta.date}`,
    `- **Command**: \`${meta.command}\``,
    `- **Machine**: ${meta.machine}; Node ${meta.node}`,
    `- **Placement**: ${meta.pinning}`,
    `- **Software**: ${meta.software}`,
    `- **Load**: ${meta.load}`,
    `- **Runtime**: ${Math.round(meta.runtimeSeconds)} s in total`,
    `- **Other load**: ${others.line}; in the second before the run: ${meta.busyAtStart} busy`,
    '',
    'Figures are medians over the rounds (± is half the spread of req/s between rounds); peak RSS is the',
    'highest over the rounds. CPU µs/req is the target process\'s CPU time (all threads) divided by the',
    'requests sent in the window; heap kB/req is what the target allocated on its V8 heap over the same span (garbage included),',
    'per request; CPU busy near 100% means the target, not the load generator, was the limit.',
    'Ratios compare req/s and, after the dot, CPU per request (both higher is better for flag-proxy).',
    ...(bound ? ['† the load generator\'s core was saturated before the target\'s: that req/s is a lower bound, and the CPU ratio is the fairer comparison.'] : []),
    'See bench/README.md for what each scenario does.',
    '',
  ];
  for (const flags of flagCounts) {
    const set = meta.flagSets.find((f) => f.flags === flags);
    const rows = rowsAt(flags, meta.scenarios, measurements);
    if (rows.length === 0) continue;
    out.push(
      `## ${flags} flags`,
      '',
      ...(set ? [set.line, ''] : []),
      ...table(flags, rows, targets, cells),
      '',
      ...pollingMemory(flags, meta.pollClients, targets, cells),
      ...memoryPartsTable(flags, rows, targets, cells),
      ...idleLine(flags, targets, idle),
      ...cliMemorySection(flags, cliMemory, cliIdle, cells),
    );
  }
  if (measurements.length > 0) out.push('![req/s and CPU per request, per scenario and target](' + (meta.chart ?? '../docs/bench.svg') + ')', '');
  if (refresh.length > 0) out.push(...refreshSection(refresh));
  if (inProcess) out.push(...inProcessSection(inProcess));
  if (fanout && fanout.length > 0) out.push(...fanoutSection(fanout));
  if (meta.cluster) out.push(...clusterSection(meta.cluster, meta.scenarios, cluster));
  out.push(...interleavedSection(interleaved, cells));
  out.push(...goals(flagCounts, meta.pollClients, cells, idle, inProcess, cliMemory, interleaved));
  if (measurements.length > 0 || cluster.length > 0) out.push('## Scenarios', '', ...meta.scenarios.map((s) => `- \`${s.name}\`: ${s.description}${s.perFlagCount ? '' : ' (measured at the first flag count only)'}${s.maxFlags ? ` (up to ${s.maxFlags} flags)` : ''}`), '');
  if (others.caveat) out.push('## Caveats', '', `- ${others.caveat}`, '');
  if (meta.warnings.length) out.push('## Warnings', '', ...meta.warnings.map((w) => `- ${w}`), '');
  return out.join('\n');
}
