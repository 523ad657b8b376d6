#!/usr/bin/env node
/**
 * `flag-proxy`: the standalone server, configured only by environment variables. When nothing is
 * configured (and not in production), or with `--demo`, it starts an embedded demo flag server so
 * a newcomer sees it work at once.
 * `FLAG_ENV_<NAME>_*` variables serve several environments from one proxy, `FLAG_PROXY_REDIS_URL`
 * shares the flag snapshot through Redis, and `FLAG_PROXY_WORKERS=N` runs N worker processes.
 * `flag-proxy events ...` prints the flag server's admin event log.
 */
import cluster, { type Worker } from 'node:cluster';
import http from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { createFlagProxy, type FlagProxy } from './create-flag-proxy.js';
import { configurationHint, hostFromEnv, mayStartDemo, optionsFromEnv, portFromEnv, readyTimeoutFromEnv } from './config/env.js';
import { resolveConfig } from './config/resolve.js';
import { FlagProxyError, isFlagProxyError } from './errors.js';
import { createDefaultLogger, redactUrlCredentials } from './logger.js';
import { createTestFlagServer, type TestFlagServer } from './testing/flag-server.js';
import { createMemoryStorageProvider } from './testing/storage.js';
import { demoFlags, DEMO_CLIENT_KEY, DEMO_UPSTREAM_TOKEN } from './demo/flags.js';
import type { FlagProxyOptions } from './config/options.js';
import {
  createMultiEnvironmentProxy,
  planEnvironments,
  type MultiEnvironmentProxy,
  type MultiEnvironmentProxyOptions,
} from './multi-env/create-multi-environment-proxy.js';
import { multiEnvironmentOptionsFromEnv } from './multi-env/env.js';
import { createRedisStorageProvider, redisStorageOptionsFromEnv, type RedisStorageOptions, type RedisStorageProvider } from './redis/index.js';
import { capYoungGeneration, holdYoungGeneration } from './young-generation.js';
import { collectAfterChanges, fullCollection } from './collect-after-change.js';

/** How long in-flight requests may take to finish after SIGTERM/SIGINT. */
const SHUTDOWN_GRACE_MS = 10_000;
/** A worker's exit code for "not ready within FLAG_PROXY_READY_TIMEOUT": the primary gives up instead of restarting it. */
const NOT_READY_EXIT_CODE = 3;

function fatal(message: string): never {
  process.stderr.write(`flag-proxy: ${redactUrlCredentials(message)}\n`);
  process.exit(1);
}

function demoBanner(base: string, port: number, ownKeys: boolean): string {
  // A configured client key is a secret of the operator's: never print it.
  const key = `-H 'Authorization: ${ownKeys ? '<your client key>' : DEMO_CLIENT_KEY}'`;
  const page = port + 1;
  return [
    '',
    'flag-proxy is running in DEMO mode: an embedded flag server with sample flags stands in for the upstream.',
    `Set FLAG_URL, FLAG_API_TOKEN and FLAG_PROXY_CLIENT_KEYS to proxy a real flag server.`,
    '',
    'Try it:',
    `  curl ${base}/proxy/health`,
    `  curl ${key} '${base}/proxy?userId=1'`,
    `  curl ${key} '${base}/proxy?userId=7&properties%5Bregion%5D=eu'`,
    `  curl ${key} -H 'Content-Type: application/json' -d '{"context":{"userId":"2"},"toggles":["demo.beta-testers","demo.switched-off"]}' ${base}/proxy`,
    `  curl ${base}/proxy/internal-backstage/prometheus`,
    '',
    'See the flags in a browser (the Express example, calling this proxy cross-origin):',
    `  PORT=${page} npx tsx examples/express/server.ts, then open http://localhost:${page}/?proxy=${encodeURIComponent(`${base}/proxy`)}${ownKeys ? '&key=<your client key>' : ''}`,
    '',
  ].join('\n');
}

/** The variable that sets the number of worker processes. */
const WORKERS_VARIABLE = 'FLAG_PROXY_WORKERS';
/** A worker that exits before listening this many times in a row means the fleet cannot start. */
const MAX_FAILED_STARTS = 5;
/**
 * The pause before retrying a worker that could not start while another serves: doubled for each
 * such retry in a row, up to {@link RETRY_MAX_MS}, and back to the first once a worker is ready or
 * listens. Retried forever (stopping would take the serving workers down), but not once a second.
 */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 60_000;
/**
 * Set by the primary (to `1`) on a worker it starts while another worker has its flags: that
 * worker listens only once it has them too. Not a setting: the primary sets or clears it on every fork.
 */
const WAIT_FOR_FLAGS_VARIABLE = 'FLAG_PROXY_WORKER_WAITS_FOR_FLAGS';
/** The message a worker sends its primary once its proxy is ready. */
const READY_MESSAGE = 'flag-proxy:ready';

/** `FLAG_PROXY_WORKERS`: a positive integer or `auto` (one per CPU). @default 1, no cluster */
function workersFromEnv(env: NodeJS.ProcessEnv): number {
  const raw = env[WORKERS_VARIABLE]?.trim();
  if (raw === undefined || raw === '') return 1;
  if (raw.toLowerCase() === 'auto') return availableParallelism();
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 1024) {
    throw new FlagProxyError('INVALID_OPTION', `Invalid option workers (${WORKERS_VARIABLE}): expected a positive integer or "auto", got "${raw}"`, {
      status: 500,
    });
  }
  return Number(raw);
}

/**
 * glibc's limit on malloc arenas, read once when a process starts, so only the workers the primary
 * forks can have it set by the CLI. Without it each of V8's background threads keeps an arena of
 * its own, which holds on to what optimizing code took (2–3 MB each, about 9 MB in all at 5000 flags).
 */
const MALLOC_ARENA_VARIABLE = 'MALLOC_ARENA_MAX';
const WORKER_MALLOC_ARENAS = '1';

/** The variable that caps V8's young generation in each serving process. */
const YOUNG_GENERATION_VARIABLE = 'FLAG_PROXY_YOUNG_GENERATION_MB';
/** The cap measured to save 7–11 MB of peak RSS for about 1% more CPU in young collections (docs/performance.md, "Memory"). */
const DEFAULT_YOUNG_GENERATION_MB = 8;

/** `FLAG_PROXY_YOUNG_GENERATION_MB`: MiB, or 0 to leave V8's young generation as Node sets it. @default 8 */
function youngGenerationFromEnv(env: NodeJS.ProcessEnv): number {
  const raw = env[YOUNG_GENERATION_VARIABLE]?.trim();
  if (raw === undefined || raw === '') return DEFAULT_YOUNG_GENERATION_MB;
  if (!/^\d+$/.test(raw) || Number(raw) > 1024) {
    throw new FlagProxyError(
      'INVALID_OPTION',
      `Invalid option youngGenerationMb (${YOUNG_GENERATION_VARIABLE}): expected a whole number of MiB from 0 (as Node sets it) to 1024, got "${raw}"`,
      { status: 500 },
    );
  }
  return Number(raw);
}

/** The configuration read from the environment, validated before anything starts. */
interface Setup {
  port: number;
  /** The bind address; undefined: every interface. */
  host: string | undefined;
  /** Set when `FLAG_ENV_*` variables configure several environments. */
  multi: MultiEnvironmentProxyOptions | undefined;
  /** The single-environment options (also the shared ones' source in multi mode). */
  single: FlagProxyOptions;
  redis: RedisStorageOptions | undefined;
  /** Whether the embedded demo flag server stands in for the upstream. */
  demo: boolean;
  /** `FLAG_PROXY_READY_TIMEOUT`: exit when not ready after this many ms. */
  readyTimeoutMs: number | undefined;
}

/** What the command line asks for besides the environment. */
interface Flags {
  /** `--demo`: the embedded demo upstream, even when variables are set or in production. */
  demo: boolean;
}

/** Reads and validates everything; throws FlagProxyError on the first bad value. Starts nothing. */
function setupFromEnv(env: NodeJS.ProcessEnv, flags: Flags): Setup {
  const multi = multiEnvironmentOptionsFromEnv(env);
  const single = multi === undefined ? optionsFromEnv(env) : {};
  const port = portFromEnv(env);
  const host = hostFromEnv(env);
  const readyTimeoutMs = readyTimeoutFromEnv(env);
  const redis = redisStorageOptionsFromEnv(env);
  if (redis) createRedisStorageProvider(redis); // validates; connects only on first use
  const upstreamGiven = multi !== undefined || single.flagUrl !== undefined;
  if (flags.demo && upstreamGiven) {
    throw new FlagProxyError('INVALID_OPTION', '--demo runs the embedded demo flag server: unset FLAG_URL (and FLAG_ENV_*) to use it');
  }
  // A demo answering with sample flags in place of a forgotten or misnamed FLAG_URL would pass
  // every health check: it starts only when nothing at all is configured, or when asked for.
  const demo = !upstreamGiven && (flags.demo || mayStartDemo(env));
  try {
    if (multi) planEnvironments(multi);
    else if (!demo) resolveConfig(single);
  } catch (error) {
    const hint = configurationHint(env);
    if (!isFlagProxyError(error) || hint === '') throw error;
    throw new FlagProxyError(error.code, `${error.message}${hint}`, { status: error.status, cause: error });
  }
  return { port, host, multi, single, redis, demo, readyTimeoutMs };
}

/** How to reach a server bound to `host` from this machine, for the printed URLs. */
function reachableHost(host: string | undefined): string {
  if (host === undefined || host === '::' || host === '0.0.0.0') return 'localhost';
  return isIP(host) === 6 ? `[${host}]` : host;
}

// Over ~80 lines: the CLI's one start-to-shutdown sequence (listen, ready bound, signals, drain),
// read top to bottom as it happens.
async function serve(setup: Setup, worker: Worker | undefined, youngGenerationCap: number | undefined): Promise<void> {
  const { port, host, multi } = setup;
  let options = setup.single;
  const ownKeys = options.clientKeys !== undefined || options.proxySecrets !== undefined;
  let demo: TestFlagServer | undefined;
  let storage: RedisStorageProvider | undefined;
  if (setup.demo) {
    demo = await createTestFlagServer({ features: demoFlags, clientTokens: [DEMO_UPSTREAM_TOKEN] });
    options = {
      ...options,
      flagUrl: demo.url,
      flagApiToken: DEMO_UPSTREAM_TOKEN,
      clientKeys: ownKeys ? options.clientKeys : [DEMO_CLIENT_KEY],
      // The demo must not leave a backup behind (in a file or Redis) that a real run could start from.
      storageProvider: createMemoryStorageProvider(),
    };
  } else if (setup.redis) {
    const logLevel = (multi ?? options).logLevel ?? 'warn';
    const json = (multi ?? options).useJsonLogger ?? false;
    storage = createRedisStorageProvider({ ...setup.redis, logger: createDefaultLogger({ level: logLevel, json }) });
  }

  let proxy: FlagProxy | MultiEnvironmentProxy;
  /** Each environment's proxy (the one, when not multi). */
  let each: FlagProxy[];
  let basePath: string;
  try {
    if (multi) {
      const multiProxy = createMultiEnvironmentProxy(storage ? { ...multi, storageProvider: storage } : multi);
      proxy = multiProxy;
      each = [...multiProxy.environments.values()];
    } else {
      const singleProxy = createFlagProxy(storage ? { ...options, storageProvider: storage } : options);
      proxy = singleProxy;
      each = [singleProxy];
    }
    basePath = each[0]!.config.basePath;
  } catch (error) {
    await demo?.close();
    await storage?.close();
    fatal(isFlagProxyError(error) ? error.message : String(error));
  }

  // Held small while starting (see start()); from the first flag set on, it may grow to the cap.
  if (youngGenerationCap !== undefined) void proxy.ready.then(() => capYoungGeneration(youngGenerationCap), () => undefined);
  // What adopting a flag set leaves behind is freed once, soon after (src/collect-after-change.ts):
  // one collection for changes that come together, in one environment or several.
  const collect = fullCollection();
  const stopCollecting = collect
    ? collectAfterChanges((listener) => {
        const offs = each.map((one) => one.onChange(listener));
        return () => offs.forEach((off) => off());
      }, collect)
    : () => undefined;

  let draining = false;
  // While shutting down, every answer tells keep-alive clients to reconnect (elsewhere): a
  // connection that is never idle would otherwise keep this process up until the grace period.
  const server = http.createServer((req, res) => {
    if (draining) res.setHeader('Connection', 'close');
    proxy(req, res);
  });
  server.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EADDRINUSE') fatal(`port ${port} is already in use (set PORT)`);
    if (error.code === 'EADDRNOTAVAIL') fatal(`cannot listen on ${host}: the address is not one of this machine's (set HOST)`);
    fatal(error.message);
  });
  const listen = (): void => {
    server.listen(port, host, () => {
      const { port: bound } = server.address() as AddressInfo;
      const base = `http://${reachableHost(host)}:${bound}${basePath}`;
      // The pid is what an operator needs to stop it, whatever started it (npm, a shell, a supervisor).
      const who = worker ? `flag-proxy worker ${worker.id} (pid ${process.pid})` : `flag-proxy (pid ${process.pid})`;
      process.stdout.write(`${who} listening on ${base}/proxy\n`);
      if (multi && !worker) process.stdout.write(`flag-proxy serving environments: ${multi.environments.map((e) => e.name).join(', ')}\n`);
      // Every worker runs its own demo upstream; one banner is enough.
      if (demo && (worker === undefined || worker.id === 1)) process.stdout.write(`${demoBanner(base, (server.address() as AddressInfo).port, ownKeys)}\n`);
    });
  };

  let stopping = false;
  const stop = (signal: string, exitCode = 0): void => {
    if (stopping) return;
    stopping = true;
    draining = true;
    stopCollecting();
    if (exitCode === 0) process.stdout.write(`flag-proxy: ${signal} received, shutting down\n`);
    const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    force.unref();
    // Stop accepting; idle keep-alive sockets are closed, in-flight requests finish. Event
    // streams never finish by themselves: they are ended now, or the server would wait for them.
    server.close(() => {
      void proxy
        .close()
        .then(() => storage?.close())
        .then(() => demo?.close())
        .finally(() => process.exit(exitCode));
    });
    server.closeIdleConnections();
    proxy.closeStreams();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // A worker whose primary is gone has no one left to restart or stop it.
  if (worker) process.on('disconnect', () => stop('disconnect from the primary'));

  // The primary deals connections to every worker that listens. One started while another has
  // its flags (a worker replacing one that died) would answer its share 503 until it has its
  // own, so it listens only then; the others serve meanwhile. Any other listens at once, so that
  // its health endpoint says why it is not ready yet.
  if (worker) void proxy.ready.then(() => process.send?.(READY_MESSAGE), () => undefined);
  if (worker && process.env[WAIT_FOR_FLAGS_VARIABLE] === '1') {
    process.stdout.write(`flag-proxy worker ${worker.id} (pid ${process.pid}) waits for its flags before it listens; the other workers serve meanwhile\n`);
    void proxy.ready.then(() => {
      if (!stopping) listen();
    }, () => undefined);
  } else {
    listen();
  }

  if (setup.readyTimeoutMs !== undefined) {
    proxy.waitUntilReady({ timeoutMs: setup.readyTimeoutMs }).catch((error: unknown) => {
      if (stopping) return; // closed by a signal first
      process.stderr.write(`flag-proxy: ${error instanceof Error ? error.message : String(error)}\n`);
      stop('not ready', worker ? NOT_READY_EXIT_CODE : 1);
    });
  }
}

/**
 * The primary of `FLAG_PROXY_WORKERS=N`: forks N workers that share the listening port (the
 * primary hands out connections round-robin), starts a new worker when one dies, and on
 * SIGTERM/SIGINT asks every worker to shut down gracefully, then exits.
 */
function runPrimary(count: number): void {
  let stopping = false;
  let failedStarts = 0;
  /** Retries in a row of workers that could not start while another serves (see {@link RETRY_FIRST_MS}). */
  let retries = 0;
  const retryDelay = (): number => Math.min(RETRY_FIRST_MS * 2 ** retries++, RETRY_MAX_MS);
  const live = new Set<Worker>();
  const listened = new WeakSet<Worker>();
  /** Workers whose proxy is ready (they said so). */
  const ready = new WeakSet<Worker>();
  /** Whether a live worker has its flags and serves. */
  const anyServes = (): boolean => [...live].some((w) => ready.has(w));
  const stopAll = (signal: NodeJS.Signals): void => {
    for (const worker of live) worker.process.kill(signal);
  };
  const fork = (): void => {
    if (stopping) return;
    const worker = cluster.fork({
      // Set or cleared on every fork, so that a value in the primary's own environment never applies.
      [WAIT_FOR_FLAGS_VARIABLE]: anyServes() ? '1' : '',
      // One malloc arena, unless the operator set the variable: then theirs (see MALLOC_ARENA_VARIABLE).
      ...(process.env[MALLOC_ARENA_VARIABLE] === undefined ? { [MALLOC_ARENA_VARIABLE]: WORKER_MALLOC_ARENAS } : {}),
    });
    live.add(worker);
    worker.on('message', (message: unknown) => {
      if (message !== READY_MESSAGE) return;
      ready.add(worker);
      retries = 0;
    });
    worker.once('listening', () => {
      listened.add(worker);
      failedStarts = 0;
      retries = 0;
    });
  };
  cluster.on('exit', (worker, code, signal) => {
    live.delete(worker);
    if (stopping) {
      if (code !== 0) process.exitCode = 1;
      if (live.size === 0) process.exit();
      return;
    }
    // While another worker has its flags and serves, a worker that could not start is retried
    // (after a pause) without counting towards giving up: stopping would take the serving ones down.
    const othersServe = anyServes();
    if (code === NOT_READY_EXIT_CODE && othersServe) {
      const delay = retryDelay();
      process.stderr.write(
        `flag-proxy: worker ${worker.id} was not ready in time (FLAG_PROXY_READY_TIMEOUT) while another serves; starting another in ${delay / 1000} s\n`,
      );
      setTimeout(fork, delay);
      return;
    }
    if (code === NOT_READY_EXIT_CODE) {
      // Every worker waits for the same upstream: a new one would not fare better.
      process.stderr.write(`flag-proxy: worker ${worker.id} was not ready in time (FLAG_PROXY_READY_TIMEOUT); stopping\n`);
      stopping = true;
      process.exitCode = 1;
      stopAll('SIGTERM');
      if (live.size === 0) process.exit();
      return;
    }
    if (!listened.has(worker) && !othersServe) failedStarts += 1;
    if (failedStarts >= MAX_FAILED_STARTS) {
      process.stderr.write(`flag-proxy: ${failedStarts} workers in a row exited before listening; giving up\n`);
      stopping = true;
      process.exitCode = 1;
      stopAll('SIGTERM');
      if (live.size === 0) process.exit();
      return;
    }
    // A worker that dies at start is retried after a pause, so a crash loop does not spin; while
    // another serves (and nothing counts towards giving up), after longer and longer ones.
    const delay = listened.has(worker) ? 0 : othersServe ? retryDelay() : RETRY_FIRST_MS;
    const after = delay > 0 ? ` in ${delay / 1000} s` : '';
    process.stderr.write(`flag-proxy: worker ${worker.id} (pid ${worker.process.pid}) exited with ${signal ?? `code ${code}`}; starting another${after}\n`);
    setTimeout(fork, delay);
  });
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`flag-proxy: ${signal} received, stopping ${live.size} workers\n`);
    if (live.size === 0) process.exit(0);
    stopAll('SIGTERM');
    // Workers get the same grace as a single process, plus time to send their last usage report.
    setTimeout(() => {
      stopAll('SIGKILL');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS + 5000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.stdout.write(`flag-proxy primary (pid ${process.pid}) starting ${count} workers\n`);
  for (let i = 0; i < count; i++) fork();
}

async function start(flags: Flags): Promise<void> {
  let setup: Setup;
  let workers: number;
  let youngGenerationMb: number;
  try {
    // Checked once, before any fork, so a bad value is one line and not a crash loop.
    workers = workersFromEnv(process.env);
    youngGenerationMb = youngGenerationFromEnv(process.env);
    setup = setupFromEnv(process.env, flags);
  } catch (error) {
    fatal(isFlagProxyError(error) ? error.message : String(error));
  }
  if (workers > 1 && !cluster.isWorker) return runPrimary(workers);
  // Each serving process (this one, or each worker) holds its young generation while it starts,
  // then caps it once ready (src/young-generation.ts); a cluster primary serves nothing.
  const young = youngGenerationMb > 0 ? youngGenerationMb * 1024 * 1024 : undefined;
  if (young !== undefined) holdYoungGeneration();
  return serve(setup, cluster.isWorker ? cluster.worker : undefined, young);
}

async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'events') {
    const { runEventsCommand } = await import('./admin-events/cli.js');
    process.exitCode = await runEventsCommand(argv.slice(1), process.env, process.stdout, process.stderr);
    return;
  }
  if (argv[0] === '--help' || argv[0] === '-h') {
    process.stdout.write(
      'Usage: flag-proxy            start the proxy (configured by environment variables; see README)\n' +
        '                             FLAG_PROXY_WORKERS=N runs N worker processes; FLAG_ENV_<NAME>_* serves several environments\n' +
        '       flag-proxy --demo     start it with the embedded demo flag server (the default only when nothing is configured)\n' +
        '       flag-proxy events [--project P] [--toggle T] [--all] [--json]   print the admin event log\n',
    );
    return;
  }
  const flags: Flags = { demo: false };
  for (const arg of argv) {
    if (arg === '--demo') flags.demo = true;
    else fatal(`unknown argument "${arg}" (see flag-proxy --help)`);
  }
  await start(flags);
}

main(process.argv.slice(2)).catch((error: unknown) => fatal(error instanceof Error ? error.message : String(error)));
