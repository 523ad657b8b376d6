/**
 * The in-process rows (issue 15): flag-proxy's `proxy.isEnabled`, `proxy.getVariant` and
 * `proxy.evaluate(context)` against `unleash-client`'s own `isEnabled` and `getVariant`, on the
 * benchmark's flag set and contexts, in one process, both fed by the same in-memory upstream.
 *
 * The runner (bench/run.ts) bundles this file like a target and starts it in a process of its
 * own, pinned to the targets' core, with `NODE_ENV=production`: `runInProcess` is the runner's
 * side, `measure` the measuring side (bench/child.ts). Rounds interleave the operations (their order rotated
 * each round); the table reports medians over the rounds after one unreported warm-up round.
 */
import { performance } from 'node:perf_hooks';
import { createTestFlagServer } from '../src/testing/index.js';
import { contextFor, generateFlags } from './flags.js';
import { countHeapAllocation } from './heap.js';
import { quietFlagProxy, quietUnleash, runChild, serveChild, synchronized } from './child.js';
import { median } from './stats.js';

/** What the measuring process needs. */
export interface InProcessConfig {
  flagProxyModule: string;
  flags: number;
  /** Measured rounds (one warm-up round comes first). */
  rounds: number;
  /** Milliseconds per operation and round. */
  batchMs: number;
}

/** One operation's medians. */
export interface InProcessFigure {
  /** Nanoseconds per call. */
  ns: number;
  /** Half the spread between rounds, relative to the median. */
  spread: number;
  /** Bytes allocated on the V8 heap per call. */
  heapBytes: number;
}

/** One row: a question answered by flag-proxy and by unleash-client. */
export interface InProcessRow {
  name: string;
  /** What flag-proxy calls and what unleash-client calls for it. */
  ours: string;
  theirs: string;
  flagProxy: InProcessFigure;
  unleashClient: InProcessFigure;
}

export interface InProcessResult {
  flags: number;
  /** Toggles in the set, and how many the whole-set rows evaluate per context. */
  toggles: number;
  rounds: number;
  batchMs: number;
  /** Calls compared for agreement before timing, and how many differed. */
  checked: number;
  differences: number;
  rows: InProcessRow[];
}

/** Set in the environment of the measuring process. */
const CHILD_MARKER = 'BENCH_IN_PROCESS_CHILD';

/** Context ids of the in-process section, apart from every HTTP scenario's. */
const BASE = 60_000_000;
/** Contexts the per-call operations cycle through. */
const POOL = 4096;

/** The bench context without `appName` and `environment`: both sides take those from their configuration, as a host's code would. */
function contextOf(n: number): { userId: string; sessionId: string; properties: Record<string, string> } {
  const { userId, sessionId, properties } = contextFor(n);
  return { userId, sessionId, properties };
}

/** Runs the measuring process (the bundle of this file), pinned to `core` when given, and returns its result. */
export function runInProcess(entry: string, config: InProcessConfig, core: number | undefined, nodeArgs: string[]): Promise<InProcessResult> {
  return runChild<InProcessConfig, InProcessResult>(entry, CHILD_MARKER, config, core, nodeArgs, 'the in-process measurement');
}

interface Operation {
  row: string;
  side: 'flagProxy' | 'unleashClient';
  /** Calls made per context given. */
  perContext: number;
  /** Runs the operation over these contexts; returns a checksum so nothing is optimised away. */
  run(contexts: ReturnType<typeof contextOf>[]): number;
  /** Where the next batch's contexts start (whole-set rows: always new users). */
  next: number;
  fresh: boolean;
  /** Estimated ns per context, to size the next batch. */
  estimate: number;
  ns: number[];
  heap: number[];
}

async function measure(config: InProcessConfig): Promise<InProcessResult> {
  const { features, segments } = generateFlags(config.flags);
  const names = features.map((f) => f.name);
  const upstream = await createTestFlagServer({ features, segments, clientTokens: ['in-process-token'] });
  const proxy = await quietFlagProxy(config.flagProxyModule, { url: upstream.url, token: upstream.token, clientKey: 'in-process-key', environment: 'production' });
  const sdk = quietUnleash({ url: upstream.url, token: upstream.token, instanceId: 'bench-in-process', environment: 'production' });
  try {
    await proxy.ready;
    await synchronized(sdk);

    // The same answers first: every flag for 100 contexts, by isEnabled, getVariant and the whole set.
    let checked = 0;
    let differences = 0;
    for (let i = 0; i < 100; i++) {
      const context = contextOf(BASE + 9_000_000 + i * 7919);
      const enabled = new Set(proxy.evaluate(context).map((t) => t.name));
      for (const name of names) {
        const theirs = sdk.isEnabled(name, context);
        const ours = proxy.isEnabled(name, context);
        const ourVariant = proxy.getVariant(name, context);
        const theirVariant = sdk.getVariant(name, context);
        checked += 3;
        if (ours !== theirs) differences++;
        if (enabled.has(name) !== theirs) differences++;
        if (ourVariant.name !== theirVariant.name || ourVariant.enabled !== theirVariant.enabled) differences++;
      }
    }

    const pool = Array.from({ length: POOL }, (_, i) => contextOf(BASE + 5_000_000 + i));
    // Per-call rows: call i asks for flag i mod N in context i mod POOL (POOL and N differ, so the pairs vary).
    const perCall = (row: string, side: Operation['side'], call: (name: string, context: ReturnType<typeof contextOf>) => boolean): Operation => {
      let i = 0;
      return {
        row,
        side,
        perContext: 1,
        fresh: false,
        next: 0,
        estimate: 1000,
        ns: [],
        heap: [],
        run(contexts) {
          let sum = 0;
          for (const context of contexts) {
            if (call(names[i % names.length] as string, context)) sum++;
            i++;
          }
          return sum;
        },
      };
    };
    const wholeSet = (side: Operation['side'], run: (context: ReturnType<typeof contextOf>) => number): Operation => ({
      row: 'whole-set',
      side,
      perContext: 1,
      fresh: true,
      next: BASE,
      estimate: 100_000,
      ns: [],
      heap: [],
      run(contexts) {
        let sum = 0;
        for (const context of contexts) sum += run(context);
        return sum;
      },
    });
    // A request that asks 10 flags for one user: flag-proxy prepares the context once (withContext).
    const PER_REQUEST = 10;
    const request = (side: Operation['side'], check: (context: ReturnType<typeof contextOf>, first: number) => number): Operation => {
      let i = 0;
      return {
        row: 'request-10',
        side,
        perContext: 1,
        fresh: false,
        next: 0,
        estimate: 10_000,
        ns: [],
        heap: [],
        run(contexts) {
          let sum = 0;
          for (const context of contexts) sum += check(context, (i += PER_REQUEST));
          return sum;
        },
      };
    };
    const nameAt = (n: number): string => names[n % names.length] as string;
    const operations: Operation[] = [
      request('flagProxy', (context, first) => {
        const flags = proxy.withContext(context);
        let on = 0;
        for (let k = 0; k < PER_REQUEST; k++) if (flags.isEnabled(nameAt(first + k))) on++;
        return on;
      }),
      request('unleashClient', (context, first) => {
        let on = 0;
        for (let k = 0; k < PER_REQUEST; k++) if (sdk.isEnabled(nameAt(first + k), context)) on++;
        return on;
      }),
      perCall('isEnabled', 'flagProxy', (name, context) => proxy.isEnabled(name, context)),
      perCall('isEnabled', 'unleashClient', (name, context) => sdk.isEnabled(name, context)),
      perCall('getVariant', 'flagProxy', (name, context) => proxy.getVariant(name, context).enabled),
      perCall('getVariant', 'unleashClient', (name, context) => sdk.getVariant(name, context).enabled),
      wholeSet('flagProxy', (context) => proxy.evaluate(context).length),
      wholeSet('unleashClient', (context) => {
        let on = 0;
        for (const name of names) if (sdk.isEnabled(name, context)) on++;
        return on;
      }),
    ];
    let sink = 0;
    for (let round = 0; round <= config.rounds; round++) {
      const order = operations.map((_, i) => operations[(i + round) % operations.length] as Operation);
      for (const op of order) {
        // Round 0 warms up (and calibrates the batch size); its figures are not kept.
        const count = Math.max(16, Math.ceil(((round === 0 ? 0.3 : 1) * config.batchMs * 1e6) / op.estimate));
        let contexts: ReturnType<typeof contextOf>[];
        if (op.fresh) {
          contexts = Array.from({ length: count }, (_, i) => contextOf(op.next + i));
          op.next += count;
        } else {
          contexts = Array.from({ length: count }, (_, i) => pool[i % POOL] as ReturnType<typeof contextOf>);
        }
        const heap = countHeapAllocation();
        const started = performance.now();
        sink += op.run(contexts);
        const ns = ((performance.now() - started) * 1e6) / count;
        const bytes = heap.stop() / count;
        op.estimate = ns;
        if (round > 0) {
          op.ns.push(ns);
          op.heap.push(bytes);
        }
      }
    }
    if (sink < 0) process.stdout.write('');

    const figure = (op: Operation | undefined): InProcessFigure => {
      if (!op) return { ns: Number.NaN, spread: 0, heapBytes: Number.NaN };
      const mid = median(op.ns);
      return { ns: mid, spread: op.ns.length > 1 ? (Math.max(...op.ns) - Math.min(...op.ns)) / 2 / mid : 0, heapBytes: median(op.heap) };
    };
    const find = (row: string, side: Operation['side']): Operation | undefined => operations.find((o) => o.row === row && o.side === side);
    const rows: InProcessRow[] = [
      { name: 'isEnabled', ours: '`proxy.isEnabled(name, context)`', theirs: '`unleash.isEnabled(name, context)`' },
      { name: 'getVariant', ours: '`proxy.getVariant(name, context)`', theirs: '`unleash.getVariant(name, context)`' },
      {
        name: 'request-10',
        ours: '`proxy.withContext(context)`, then `isEnabled(name)` for 10 flags',
        theirs: '`unleash.isEnabled(name, context)` for the same 10 flags',
      },
      { name: 'whole-set', ours: '`proxy.evaluate(context)`', theirs: `\`unleash.isEnabled(name, context)\` for each of the ${names.length} flags` },
    ].map((r) => ({ ...r, flagProxy: figure(find(r.name, 'flagProxy')), unleashClient: figure(find(r.name, 'unleashClient')) }));
    return { flags: config.flags, toggles: names.length, rounds: config.rounds, batchMs: config.batchMs, checked, differences, rows };
  } finally {
    sdk.destroy();
    await proxy.close();
    await upstream.close();
  }
}

serveChild(CHILD_MARKER, measure);
