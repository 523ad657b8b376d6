/**
 * In-process costs, beside `unleash-client` on the same flags and contexts: `proxy.isEnabled`,
 * `proxy.evaluate` and `proxy.bootstrap` for a new user, against `unleash-client`'s `isEnabled`
 * and its per-flag `getVariant` over the whole set. Prints µs per call and the ratios.
 *
 * `npx tsx bench/in-process.ts [contexts]` (default 2000). Loopback only: an in-memory flag server
 * serves the benchmark's 200 flags to both. Not part of `npm run bench` (bench/run.ts).
 */
import { InMemStorageProvider, Unleash } from 'unleash-client';
import { createFlagProxy } from '../src/index.js';
import { createMemoryStorageProvider, createTestFlagServer } from '../src/testing/index.js';
import { APP_NAME, CLIENT_KEY, contextFor, generateFlags } from './flags.js';

const silent = { debug() {}, info() {}, warn() {}, error() {}, fatal() {} };

/** Runs `body` over `n` iterations after a warm-up, and returns µs per iteration (best of 3). */
function measure(n: number, body: (i: number) => void): number {
  for (let i = 0; i < Math.min(n, 500); i += 1) body(i);
  let best = Infinity;
  for (let round = 0; round < 3; round += 1) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i += 1) body(i);
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1000 / n);
  }
  return best;
}

const count = Number(process.argv[2] ?? 2000);
const { features, segments } = generateFlags(200);
const names = features.map((f) => f.name);
// Spread into object literals: an interface type does not meet the context types' index signatures.
const contexts = Array.from({ length: count }, (_, n) => ({ ...contextFor(n * 7919) }));

const upstream = await createTestFlagServer({ features, segments });
const proxy = createFlagProxy({
  flagUrl: upstream.url,
  flagApiToken: upstream.token,
  clientKeys: [CLIENT_KEY],
  flagAppName: APP_NAME,
  storageProvider: createMemoryStorageProvider(),
  metricsInterval: 0,
  logger: silent,
});
const sdk = new Unleash({
  url: upstream.url,
  appName: APP_NAME,
  customHeaders: { Authorization: upstream.token },
  refreshInterval: 60_000,
  disableMetrics: true,
  storageProvider: new InMemStorageProvider(),
  skipInstanceCountWarning: true,
});
try {
  await proxy.ready;
  await new Promise<void>((resolve, reject) => {
    if (sdk.isSynchronized()) return resolve();
    sdk.once('synchronized', () => resolve());
    sdk.once('error', reject);
  });

  // The same (flag, context) pairs for both: flag i % 200 with context i % count.
  const pairs = count * 10;
  const at = (i: number) => [names[i % names.length]!, contexts[i % count]!] as const;
  let sink = 0;
  const rows: Array<[string, number, number]> = [];
  const proxyIsEnabled = measure(pairs, (i) => {
    const [name, context] = at(i);
    if (proxy.isEnabled(name, context)) sink += 1;
  });
  const sdkIsEnabled = measure(pairs, (i) => {
    const [name, context] = at(i);
    if (sdk.isEnabled(name, context)) sink += 1;
  });
  rows.push(['isEnabled(name, context)', proxyIsEnabled, sdkIsEnabled]);

  // A new user: every flag for one context (the proxy: the answer of GET /proxy as objects).
  const proxyEvaluate = measure(count, (i) => {
    sink += proxy.evaluate(contexts[i]!).length;
  });
  const sdkAll = measure(count, (i) => {
    const context = contexts[i]!;
    for (const name of names) if (sdk.getVariant(name, context).feature_enabled) sink += 1;
  });
  rows.push([`evaluate(context), ${names.length} flags`, proxyEvaluate, sdkAll]);
  const proxyBootstrap = measure(count, (i) => {
    sink += proxy.bootstrap(contexts[i]!).toggles.length;
  });
  rows.push([`bootstrap(context), ${names.length} flags`, proxyBootstrap, sdkAll]);

  process.stdout.write(`in-process cost, ${names.length} flags, ${count} contexts (µs per call, best of 3; ratio = unleash-client / flag-proxy)\n`);
  process.stdout.write('| call | flag-proxy µs | unleash-client µs | ratio |\n|---|---:|---:|---:|\n');
  for (const [call, ours, theirs] of rows) {
    process.stdout.write(`| ${call} | ${ours.toFixed(2)} | ${theirs.toFixed(2)} | ${(theirs / ours).toFixed(1)}× |\n`);
  }
  if (sink < 0) process.stdout.write('unreachable\n');
} finally {
  sdk.destroy();
  await proxy.close();
  await upstream.close();
}
