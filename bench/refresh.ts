/**
 * The refresh rows: what adopting a changed flag set costs the process that serves, as a host
 * feels it. For each side, a process of its own (pinned to the targets' core) holds the
 * benchmark's flag set from the runner's upstream; the runner changes one flag, the process
 * fetches the whole set again and adopts it, and meanwhile measures the event loop's longest
 * block (`monitorEventLoopDelay`: how late a 1 ms timer ran). flag-proxy's side calls
 * `proxy.refresh()`; unleash-client's (what @unleash/proxy runs to hold its flags) calls its
 * repository's own `fetch()` and waits for `changed`. Neither polls by itself meanwhile.
 *
 * The runner (bench/run.ts) bundles this file like a target (bench/child.ts): `runRefresh` is the
 * runner's side, `measure` the measuring side.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { TestFlagServer } from '../src/testing/index.js';
import { quietFlagProxy, quietUnleash, runChild, serveChild, synchronized } from './child.js';
import { median } from './stats.js';

export type RefreshSide = 'flag-proxy' | 'unleash-client';

/** What the measuring process needs. */
interface RefreshConfig {
  side: RefreshSide;
  flagProxyModule: string;
  upstreamUrl: string;
  upstreamToken: string;
  /** Changes measured (one more comes first, unreported). */
  changes: number;
}

/** One side's medians over the changes. */
export interface RefreshFigure {
  /** From asking for the set to its being adopted, in ms. */
  adoptMs: number;
  /** The event loop's longest block while that happened, in ms (median over the changes). */
  blockMs: number;
  /** The longest block over all changes, in ms. */
  worstBlockMs: number;
}

export interface RefreshResult {
  flags: number;
  changes: number;
  flagProxy: RefreshFigure;
  unleashClient: RefreshFigure;
}

/** Set in the environment of the measuring process. */
const CHILD_MARKER = 'BENCH_REFRESH_CHILD';

/** The measuring side asks for a change of the upstream's flag set, and hears when it is made. */
type ChangeMessage = { type: 'change' } | { type: 'changed' };

/** Runs one side in a process of its own; `change` alters the upstream's flag set when it asks. */
function runSide(entry: string, config: RefreshConfig, change: () => void, core: number | undefined, nodeArgs: string[]): Promise<RefreshFigure> {
  return runChild<RefreshConfig, RefreshFigure>(entry, CHILD_MARKER, config, core, nodeArgs, `the refresh measurement (${config.side})`, (message, child) => {
    if (message.type !== 'change') return;
    change();
    child.send({ type: 'changed' } satisfies ChangeMessage);
  });
}

/** Measures both sides against `upstream`, one after the other, each in a fresh process. */
export async function runRefresh(
  entry: string,
  options: { flagProxyModule: string; upstream: TestFlagServer; flags: number; flag: { name: string; enabled: boolean }; changes: number },
  core: number | undefined,
  nodeArgs: string[],
): Promise<RefreshResult> {
  // Each change turns one flag off or back on: the whole set is fetched and adopted again. Each
  // side makes an even number of changes, so the upstream ends as it began.
  let enabled = options.flag.enabled;
  const change = (): void => {
    enabled = !enabled;
    options.upstream.setEnabled(options.flag.name, enabled);
  };
  const config = (side: RefreshSide): RefreshConfig => ({
    side,
    flagProxyModule: options.flagProxyModule,
    upstreamUrl: options.upstream.url,
    upstreamToken: options.upstream.token,
    changes: options.changes,
  });
  const flagProxy = await runSide(entry, config('flag-proxy'), change, core, nodeArgs);
  const unleashClient = await runSide(entry, config('unleash-client'), change, core, nodeArgs);
  return { flags: options.flags, changes: options.changes, flagProxy, unleashClient };
}

/** Asks the runner for a change and waits until it is made. */
function askForChange(): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (message: ChangeMessage): void => {
      if (message.type !== 'changed') return;
      process.off('message', onMessage);
      resolve();
    };
    process.on('message', onMessage);
    process.send?.({ type: 'change' } satisfies ChangeMessage);
  });
}

/** A side as the measurement drives it: `adopt` fetches the changed set and resolves once it is adopted. */
interface Side {
  adopt(): Promise<void>;
  close(): Promise<void>;
}

async function flagProxySide(config: RefreshConfig): Promise<Side> {
  const proxy = await quietFlagProxy(config.flagProxyModule, { url: config.upstreamUrl, token: config.upstreamToken, clientKey: 'refresh-key' });
  await proxy.ready;
  return { adopt: () => proxy.refresh(), close: () => proxy.close() };
}

async function unleashClientSide(config: RefreshConfig): Promise<Side> {
  const sdk = quietUnleash({ url: config.upstreamUrl, token: config.upstreamToken, instanceId: 'bench-refresh' });
  await synchronized(sdk);
  // Its repository's own fetch, as its timer would call it (not part of its typed interface).
  const repository = (sdk as unknown as { repository: { fetch(): Promise<void> } }).repository;
  return {
    adopt: async () => {
      const changed = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('unleash-client adopted no change within 30 s')), 30_000);
        sdk.once('changed', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      await repository.fetch();
      await changed;
    },
    close: async () => sdk.destroy(),
  };
}

async function measure(config: RefreshConfig): Promise<RefreshFigure> {
  const side = config.side === 'flag-proxy' ? await flagProxySide(config) : await unleashClientSide(config);
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const adoptMs: number[] = [];
  const blockMs: number[] = [];
  try {
    for (let i = 0; i <= config.changes; i += 1) {
      await askForChange();
      delay.reset();
      delay.enable();
      const started = performance.now();
      await side.adopt();
      const took = performance.now() - started;
      // The histogram records a timer's lateness when the timer runs: give the last one its turn.
      await new Promise((resolve) => setTimeout(resolve, 20));
      delay.disable();
      if (i === 0) continue; // warm-up
      adoptMs.push(took);
      blockMs.push(delay.max / 1e6);
    }
  } finally {
    await side.close();
  }
  return { adoptMs: median(adoptMs), blockMs: median(blockMs), worstBlockMs: Math.max(...blockMs) };
}

serveChild(CHILD_MARKER, measure);
