/**
 * The refresh rows: what adopting a changed flag set costs the process that serves, as a host
 * feels it. For each side, a process of its own (pinned to the targets' core) holds the
 * benchmark's flag set from the runner's upstream; the runner changes one flag, the process
 * fetches the whole set again and adopts it, and meanwhile measures the event loop's longest
 * block (`monitorEventLoopDelay`: how late a 1 ms timer ran). flag-proxy's side calls
 * `proxy.refresh()`; unleash-client's (what @unleash/proxy runs to hold its flags) calls its
 * repository's own `fetch()` and waits for `changed`. Neither polls by itself meanwhile.
 * flag-proxy's side then answers its first requests on the new set over HTTP (a tagged GET
 * `/proxy`, an OFREP bulk evaluation and a server SDK's gzipped poll of `/api/client/features`,
 * from a server in the same process) and measures the longest block again: whatever an answer
 * builds once per flag set is paid there.
 *
 * The runner (bench/run.ts) bundles this file like a target (bench/child.ts): `runRefresh` is the
 * runner's side, `measure` the measuring side.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
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
  /**
   * flag-proxy only: the event loop's longest block while the first requests after each change
   * were answered (a tagged GET `/proxy`, an OFREP bulk evaluation, then a gzipped client API
   * poll), in ms: median and worst.
   */
  firstAnswersBlockMs?: number;
  worstFirstAnswersBlockMs?: number;
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
  /** Answers the first requests on the set just adopted, each time for a user never seen before. */
  firstAnswers?(user: string): Promise<void>;
  close(): Promise<void>;
}

/** Sends one request to `port` on loopback and reads the answer; rejects unless it is a 200. */
function ask(port: number, method: string, path: string, body?: string, extra: http.OutgoingHttpHeaders = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = { authorization: 'refresh-key', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...extra };
    const req = http.request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${method} ${path} answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function flagProxySide(config: RefreshConfig): Promise<Side> {
  const proxy = await quietFlagProxy(config.flagProxyModule, {
    url: config.upstreamUrl,
    token: config.upstreamToken,
    clientKey: 'refresh-key',
    serverToken: 'refresh-server-token',
  });
  await proxy.ready;
  const server = http.createServer(proxy);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    adopt: () => proxy.refresh(),
    async firstAnswers(user) {
      // With a session, the answer holds as long as the set: its ETag carries a request tag.
      await ask(port, 'GET', `/proxy?userId=${user}&sessionId=${user}`);
      await ask(port, 'POST', '/ofrep/v1/evaluate/flags', JSON.stringify({ context: { targetingKey: user } }));
      // A server SDK's poll, as unleash-client sends it: the whole set, gzipped.
      await ask(port, 'GET', '/api/client/features', undefined, { authorization: 'refresh-server-token', 'accept-encoding': 'gzip' });
    },
    close: async () => {
      await new Promise((resolve) => server.close(resolve));
      await proxy.close();
    },
  };
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
  const firstAnswersMs: number[] = [];
  // The histogram records a timer's lateness when the timer runs: give the last one its turn.
  const settle = (): Promise<unknown> => new Promise((resolve) => setTimeout(resolve, 20));
  try {
    for (let i = 0; i <= config.changes; i += 1) {
      await askForChange();
      delay.reset();
      delay.enable();
      const started = performance.now();
      await side.adopt();
      const took = performance.now() - started;
      await settle();
      delay.disable();
      const block = delay.max / 1e6;
      if (side.firstAnswers) {
        delay.reset();
        delay.enable();
        await side.firstAnswers(`first-${i}`);
        await settle();
        delay.disable();
      }
      if (i === 0) continue; // warm-up
      adoptMs.push(took);
      blockMs.push(block);
      if (side.firstAnswers) firstAnswersMs.push(delay.max / 1e6);
    }
  } finally {
    await side.close();
  }
  const figure: RefreshFigure = { adoptMs: median(adoptMs), blockMs: median(blockMs), worstBlockMs: Math.max(...blockMs) };
  if (firstAnswersMs.length === 0) return figure;
  return { ...figure, firstAnswersBlockMs: median(firstAnswersMs), worstFirstAnswersBlockMs: Math.max(...firstAnswersMs) };
}

serveChild(CHILD_MARKER, measure);
