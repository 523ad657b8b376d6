/**
 * A measuring process of the runner's: a bundled file of bench/ that the runner starts pinned to
 * the targets' core (`NODE_ENV=production`), sends its settings, and hears its result from, over
 * IPC. bench/in-process.ts and bench/refresh.ts run this way, each with an `unleash-client` beside
 * flag-proxy.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { InMemStorageProvider, Unleash } from 'unleash-client';
import type { FlagProxy } from '../src/index.js';

/** What passes between the runner and a measuring process, besides a side's own messages. */
type ChildMessage<C, R> = { type: 'start'; config: C } | { type: 'result'; result: R } | { type: 'failed'; message: string };

/**
 * Starts `entry` with `marker` set in its environment (which makes it {@link serveChild}), sends
 * `config`, and resolves with its result. `onMessage` hears every other message, with the child to
 * answer it. The process exits as soon as the IPC channel closes.
 */
export function runChild<C, R>(
  entry: string,
  marker: string,
  config: C,
  core: number | undefined,
  nodeArgs: string[],
  what: string,
  onMessage: (message: { type: string }, child: ChildProcess) => void = () => undefined,
): Promise<R> {
  const nodeCommand = [process.execPath, ...nodeArgs, entry];
  const [command, ...args] = core === undefined ? nodeCommand : ['taskset', '-c', String(core), ...nodeCommand];
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production', [marker]: '1' };
  delete env.NODE_OPTIONS;
  const child = spawn(command as string, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env });
  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('exit', kill);
  return new Promise<R>((resolve, reject) => {
    child.on('message', (message: ChildMessage<C, R> | { type: string }) => {
      if (message.type === 'result') resolve((message as { result: R }).result);
      else if (message.type === 'failed') reject(new Error(`${what} failed: ${(message as { message: string }).message}`));
      else onMessage(message, child);
    });
    child.on('exit', (code, signal) => reject(new Error(`${what} exited (code ${code}, signal ${signal})`)));
    child.send({ type: 'start', config } satisfies ChildMessage<C, R>);
  }).finally(() => {
    process.off('exit', kill);
    if (child.connected) child.disconnect();
  });
}

/** The measuring side, when started by {@link runChild} with `marker`: waits for its settings, measures, sends the result. */
export function serveChild<C, R>(marker: string, measure: (config: C) => Promise<R>): void {
  if (process.env[marker] !== '1' || !process.send) return;
  process.on('disconnect', () => process.exit(0));
  process.on('message', (message: ChildMessage<C, R>) => {
    if (message.type !== 'start') return;
    measure(message.config).then(
      (result) => process.send?.({ type: 'result', result } satisfies ChildMessage<C, R>),
      (error: unknown) => process.send?.({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies ChildMessage<C, R>),
    );
  });
}

/** Neither side polls or reports during a measurement (both count usage as they go). */
const QUIET_MS = 600_000;

/**
 * A flag-proxy from the module at `modulePath` (the bundle the runner built) as the measuring
 * processes set one up: it neither polls nor reports during a measurement.
 */
export async function quietFlagProxy(
  modulePath: string,
  options: { url: string; token: string; clientKey: string; environment?: string; serverToken?: string },
): Promise<FlagProxy> {
  const { createFlagProxy } = (await import(pathToFileURL(modulePath).href)) as typeof import('../src/index.js');
  return createFlagProxy({
    flagUrl: options.url,
    flagApiToken: options.token,
    clientKeys: [options.clientKey],
    flagAppName: 'bench',
    ...(options.environment === undefined ? {} : { environment: options.environment }),
    ...(options.serverToken === undefined ? {} : { expServerSideSdkConfig: { tokens: [options.serverToken] } }),
    refreshInterval: QUIET_MS,
    metricsInterval: QUIET_MS,
    storageProvider: new InMemStorageProvider(),
    logLevel: 'error',
  });
}

/**
 * An `unleash-client` instance as the measuring processes set one beside flag-proxy: it neither
 * polls nor reports during a measurement, and keeps its flags in memory. Resolve
 * {@link synchronized} before measuring.
 */
export function quietUnleash(options: { url: string; token: string; instanceId: string; environment?: string }): Unleash {
  const sdk = new Unleash({
    url: options.url,
    appName: 'bench',
    ...(options.environment === undefined ? {} : { environment: options.environment }),
    instanceId: options.instanceId,
    customHeaders: { Authorization: options.token },
    refreshInterval: QUIET_MS,
    metricsInterval: QUIET_MS,
    storageProvider: new InMemStorageProvider(),
    skipInstanceCountWarning: true,
  });
  sdk.on('error', () => {});
  return sdk;
}

/** Resolves once an `unleash-client` instance holds its first flag set (within 30 s). */
export function synchronized(sdk: Unleash): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (sdk.isSynchronized()) return resolve();
    sdk.once('synchronized', () => resolve());
    setTimeout(() => reject(new Error('unleash-client did not synchronize within 30 s')), 30_000).unref();
  });
}
