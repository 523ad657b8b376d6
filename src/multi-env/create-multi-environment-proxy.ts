/**
 * `createMultiEnvironmentProxy`: several upstream environments behind one handler. Each
 * environment is a complete FlagProxy (its own unleash-client, snapshot, usage reports under its
 * own token); a request is routed by the key it presents, so a key only ever reaches the flags of
 * its own environment. Built over the public surface (plus the shared header helpers), importing
 * the modules behind it rather than the barrel that exports this one.
 */
import { acceptsEncoding, addVary, ofrepKeyOf } from '../http-headers.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import type { FlagProxyOptions } from '../config/options.js';
import { resolveConfig } from '../config/resolve.js';
import { createFlagProxy, type FlagProxy } from '../create-flag-proxy.js';
import type { FlagProxyHandler, NextFunction } from '../core/handler.js';
import { FlagProxyError, isFlagProxyError } from '../errors.js';
import { createDefaultLogger, type Logger } from '../logger.js';
import { loadOnDemand } from '../load-on-demand.js';
import type { WaitUntilReadyOptions } from '../core/lifecycle.js';
import { streamScopeOf, tokenScopeOf } from './ofrep.js';
import { createKeyTable, type KeyTable } from './keys.js';
import { mergeExpositions } from './prometheus.js';
import { createFileStorageProvider, scopeStorageProvider } from './storage.js';

/**
 * Options every environment shares and none can override: a request is routed by them before its
 * key (and so its environment) is known.
 */
export type SharedOnlyOption = 'proxyBasePath' | 'clientKeysHeaderName' | 'cors';

/**
 * One environment of {@link createMultiEnvironmentProxy}: its name, its upstream token, the client
 * keys that select it, and any {@link FlagProxyOptions} it sets differently from the shared ones.
 *
 * @example
 * ```ts
 * const production: FlagProxyEnvironmentOptions = {
 *   name: 'production',
 *   flagApiToken: process.env.FLAG_PRODUCTION_TOKEN!,
 *   clientKeys: ['web-prod-key', 'ios-prod-key'],
 *   environment: 'production',
 * };
 * ```
 */
export interface FlagProxyEnvironmentOptions
  extends Omit<FlagProxyOptions, SharedOnlyOption | 'clientKeys' | 'proxySecrets' | 'flagApiToken'> {
  /**
   * Unique name: letters, digits, `_`, `.` and `-`, at most 64 characters. It labels this
   * environment's metrics and log lines and scopes its backup (`<name>:<appName>`).
   */
  name: string;
  /** Client API token of this environment on the upstream flag server. */
  flagApiToken: string;
  /** Client keys that select this environment; a key may belong to one environment only. */
  clientKeys: string[];
}

/**
 * Options of {@link createMultiEnvironmentProxy}: `environments`, plus any {@link FlagProxyOptions}
 * shared by all of them (an environment's own value wins). Keys and tokens are given per
 * environment only; each environment keeps its own Prometheus registry.
 */
export interface MultiEnvironmentProxyOptions
  extends Omit<FlagProxyOptions, 'clientKeys' | 'proxySecrets' | 'flagApiToken' | 'metricsRegistry'> {
  /** The environments, at least one. */
  environments: FlagProxyEnvironmentOptions[];
}

/** A running multi-environment proxy: a Connect-style handler `(req, res, next?)` with its lifecycle. */
export interface MultiEnvironmentProxy extends FlagProxyHandler {
  /** Resolves once every environment is ready; rejects if the proxy is closed first. */
  readonly ready: Promise<void>;
  /** True once every environment is ready. */
  isReady(): boolean;
  /**
   * Resolves once every environment is ready. With `timeoutMs`, rejects after that long with a
   * FlagProxyError `READY_TIMEOUT` whose message starts `Environment "<name>": ` and names that
   * environment's upstream and last failure.
   */
  waitUntilReady(options?: WaitUntilReadyOptions): Promise<void>;
  /**
   * Fetches the flag set of one environment now (by name), or of every environment, and resolves
   * once they answer from it; see `FlagProxy.refresh`. An unknown name rejects with `NOT_FOUND`;
   * a failure's message starts `Environment "<name>": `.
   */
  refresh(environment?: string): Promise<void>;
  /** Closes every environment (stops polling, sends the last usage reports). Idempotent. */
  close(): Promise<void>;
  /** Ends the event streams of every environment, the rest left running: see `FlagProxy.closeStreams`. */
  closeStreams(): void;
  /** Prometheus text of all environments, each sample labelled `environment="<name>"`. */
  metrics(): Promise<string>;
  /** The proxy of each environment, by name, in the order given. */
  readonly environments: ReadonlyMap<string, FlagProxy>;
}

/** One environment, validated: the options its FlagProxy is created with. */
export interface EnvironmentPlan {
  name: string;
  options: FlagProxyOptions;
}

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const SHARED_ONLY: readonly SharedOnlyOption[] = ['proxyBasePath', 'clientKeysHeaderName', 'cors'];
const PER_ENVIRONMENT_ONLY = ['clientKeys', 'proxySecrets', 'flagApiToken'] as const;
const PROMETHEUS_CONTENT_TYPE = 'text/plain; charset=utf-8; version=0.0.4';
const COMPRESS_THRESHOLD = 1024;

function invalid(option: string, message: string): never {
  throw new FlagProxyError('INVALID_OPTION', `Invalid option ${option}: ${message}`, { status: 500 });
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** Prefixes every message with the environment's name, so one log serves all environments. */
function prefixedLogger(inner: Logger, name: string): Logger {
  const tag = `[${name}] `;
  return {
    debug: (m, ...a) => inner.debug(tag + m, ...a),
    info: (m, ...a) => inner.info(tag + m, ...a),
    warn: (m, ...a) => inner.warn(tag + m, ...a),
    error: (m, ...a) => inner.error(tag + m, ...a),
    fatal: (m, ...a) => inner.fatal(tag + m, ...a),
  };
}

/**
 * Validates the options of {@link createMultiEnvironmentProxy} and returns each environment's
 * FlagProxy options, without starting anything (the CLI checks its configuration with it before
 * forking workers).
 *
 * @throws FlagProxyError `INVALID_OPTION` naming the environment and the option.
 */
export function planEnvironments(options: MultiEnvironmentProxyOptions): EnvironmentPlan[] {
  if (!isObject(options)) invalid('options', 'must be an object');
  const { environments, ...shared } = options;
  if (!Array.isArray(environments) || environments.length === 0) {
    invalid('environments', 'must be a non-empty list of environments');
  }
  for (const option of [...PER_ENVIRONMENT_ONLY, 'metricsRegistry']) {
    if ((shared as Record<string, unknown>)[option] !== undefined) {
      invalid(
        option,
        option === 'metricsRegistry'
          ? 'each environment keeps its own registry; give one per environment in environments[].metricsRegistry'
          : `give it per environment, in environments[].${option === 'proxySecrets' ? 'clientKeys' : option}`,
      );
    }
  }

  const names = new Set<string>();
  const registries = new Set<unknown>();
  const plans = environments.map((environment, index): EnvironmentPlan => {
    const where = `environments[${index}]`;
    if (!isObject(environment)) invalid(where, 'must be an object');
    const { name, ...own } = environment;
    if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
      invalid(`${where}.name`, 'must be 1-64 letters, digits, "_", "." or "-", starting with a letter or digit');
    }
    // Names scope backup files too, and file systems may ignore case.
    if (names.has(name.toLowerCase())) invalid(`${where}.name`, `"${name}" is used by another environment`);
    names.add(name.toLowerCase());
    for (const option of [...SHARED_ONLY, 'proxySecrets']) {
      if ((own as Record<string, unknown>)[option] !== undefined) {
        invalid(
          `${where}.${option}`,
          option === 'proxySecrets' ? 'use clientKeys' : 'is shared by all environments; set it once, outside environments',
        );
      }
    }
    if (Array.isArray(own.clientKeys) && own.clientKeys.length === 0) invalid(`${where}.clientKeys`, 'must list at least one key');
    if (own.metricsRegistry !== undefined) {
      if (registries.has(own.metricsRegistry)) invalid(`${where}.metricsRegistry`, 'each environment needs a registry of its own');
      registries.add(own.metricsRegistry);
    }
    const merged: FlagProxyOptions = { ...shared, ...own };
    try {
      resolveConfig(merged);
    } catch (error) {
      if (isFlagProxyError(error)) {
        throw new FlagProxyError(error.code, `Environment "${name}": ${error.message}`, { status: error.status, cause: error });
      }
      throw error;
    }
    // Only now, with `logger` and `storageProvider` known to be valid, wrap them per environment.
    const baseLogger =
      merged.logger ??
      createDefaultLogger({ level: merged.logLevel ?? 'warn', json: merged.useJsonLogger ?? false });
    const storageProvider =
      merged.backup === false
        ? undefined
        : (own.storageProvider ??
          (shared.storageProvider === undefined ? createFileStorageProvider(name) : scopeStorageProvider(shared.storageProvider, name)));
    return { name, options: { ...merged, logger: prefixedLogger(baseLogger, name), storageProvider } };
  });

  try {
    keyTableOf(plans);
  } catch (error) {
    if (isFlagProxyError(error)) throw error;
    invalid('environments', (error as Error).message);
  }
  return plans;
}

function keyTableOf(plans: readonly EnvironmentPlan[]): KeyTable {
  return createKeyTable(
    plans.map(({ name, options }) => ({
      name,
      keys: [...(options.clientKeys ?? []), ...(options.expServerSideSdkConfig?.tokens ?? [])],
    })),
  );
}

type RouteClass = 'outside' | 'health' | 'prometheus' | 'keyed' | 'ofrep' | 'ofrep-stream';

function createClassifier(basePath: string): (pathname: string, method: string) => RouteClass {
  const prefix = `${basePath.toLowerCase()}/proxy`;
  const ofrep = `${basePath.toLowerCase()}/ofrep/`;
  // The Unleash API paths (`/api/client/streaming`, …) belong to the environment of the key too.
  const api = `${basePath.toLowerCase()}/api/`;
  return (pathname, method) => {
    // The same normalisation as the core: case-insensitive, doubled slashes, one trailing slash.
    let path = pathname.replace(/\/{2,}/g, '/').toLowerCase();
    if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
    // OFREP clients send the key in their own headers, and browsers' event streams none at all.
    if (path.startsWith(ofrep) && method !== 'OPTIONS') return path === `${ofrep}v1/sse` ? 'ofrep-stream' : 'ofrep';
    if (path.startsWith(api)) return 'keyed';
    if (path !== prefix && !path.startsWith(`${prefix}/`)) return 'outside';
    if (method !== 'GET' && method !== 'HEAD') return 'keyed';
    const sub = path.slice(prefix.length);
    if (sub === '/health') return 'health';
    if (sub === '/internal-backstage/prometheus') return 'prometheus';
    return 'keyed';
  };
}

/**
 * Creates one proxy serving several upstream environments, each selected by its own client keys.
 * Every environment runs its own FlagProxy; options outside `environments` are shared, an
 * environment's own value wins. A key only ever sees its own environment's flags, and its usage
 * is reported upstream under its environment's token.
 *
 * Routes without a key answer for the whole proxy: `/proxy/health` is 200 only once every
 * environment is ready, `/proxy/internal-backstage/prometheus` serves every environment's metrics
 * labelled `environment="<name>"`, and preflights follow the shared `cors`. An unknown or missing
 * key gets the core's 401 `Unauthorized`, after the same body and readiness checks. Keyed answers
 * carry `Vary: <key header>`, so no shared cache serves one environment's flags to another's key.
 *
 * @throws FlagProxyError `INVALID_OPTION` naming the environment and the option.
 * @example
 * ```ts
 * import http from 'node:http';
 * import { createMultiEnvironmentProxy } from 'flag-proxy';
 *
 * const proxy = createMultiEnvironmentProxy({
 *   flagUrl: 'https://flags.example.com/api/',
 *   environments: [
 *     { name: 'production', flagApiToken: process.env.PROD_TOKEN!, clientKeys: ['web-prod'] },
 *     { name: 'staging', flagApiToken: process.env.STAGING_TOKEN!, clientKeys: ['web-staging'] },
 *   ],
 * });
 * http.createServer(proxy).listen(3000);
 * await proxy.ready;
 * ```
 */
// Over ~80 lines: one closure over the environments' proxies that the router, lifecycle and
// metrics methods share; routing rules live in keys.ts and ofrep.ts.
export function createMultiEnvironmentProxy(options: MultiEnvironmentProxyOptions): MultiEnvironmentProxy {
  const plans = planEnvironments(options);
  const keys = keyTableOf(plans);
  const streamScopes = new Map(plans.flatMap(({ options }, index) => (options.clientKeys ?? []).map((key) => [streamScopeOf(key), index] as const)));
  const proxies: FlagProxy[] = [];
  try {
    for (const plan of plans) proxies.push(createFlagProxy(plan.options));
  } catch (error) {
    for (const proxy of proxies) void proxy.close();
    throw error;
  }
  const environments = new Map(plans.map((plan, i) => [plan.name, proxies[i]!] as const));
  const first = proxies[0]!;
  // Shared by construction (no environment may set them), so the first environment's are everyone's.
  const { basePath, clientKeysHeaderName: keyHeader, logger } = first.config;
  const classify = createClassifier(basePath);
  const cors = loadOnDemand('cors') as typeof import('cors');
  const applyCors = cors({ ...first.config.cors });
  const varyField = keyHeader === 'authorization' ? 'Authorization' : keyHeader;

  const isReady = (): boolean => proxies.every((p) => p.isReady());
  const ready = Promise.all(proxies.map((p) => p.ready)).then(() => undefined);
  // Nobody has to await `ready`; an early close must not become an unhandled rejection.
  ready.catch(() => undefined);

  const metrics = async (): Promise<string> =>
    mergeExpositions(await Promise.all(plans.map(async ({ name }, i) => ({ environment: name, text: await proxies[i]!.metrics() }))));

  const fail = (req: IncomingMessage, res: ServerResponse, error: unknown, next: NextFunction | undefined): void => {
    logger.error(`Unexpected error on ${req.method} ${(req.url ?? '').split('?')[0]}`, error);
    if (next) {
      next(new FlagProxyError('INTERNAL', 'Internal error', { status: 500, expose: false, cause: error }));
      return;
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.statusCode = 500;
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end(JSON.stringify({ error: 'Internal error' }));
  };

  const servePrometheus = (req: IncomingMessage, res: ServerResponse, next: NextFunction | undefined): void => {
    applyCors(req, res, (corsError?: unknown) => {
      if (corsError) {
        fail(req, res, corsError, next);
        return;
      }
      metrics()
        .then((text) => {
          const body = Buffer.from(text);
          res.statusCode = 200;
          res.setHeader('Content-Type', PROMETHEUS_CONTENT_TYPE);
          addVary(res, 'Accept-Encoding');
          const zipped = body.length >= COMPRESS_THRESHOLD && acceptsEncoding(req, 'gzip') ? gzipSync(body) : undefined;
          if (zipped) res.setHeader('Content-Encoding', 'gzip');
          const payload = zipped ?? body;
          res.setHeader('Content-Length', payload.length);
          res.end(req.method === 'HEAD' ? undefined : payload);
        })
        .catch((error: unknown) => fail(req, res, error, next));
    });
  };

  const handler: FlagProxyHandler = function multiEnvironmentProxyHandler(req, res, next) {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const route = classify(q === -1 ? url : url.slice(0, q), req.method ?? 'GET');
    if (route === 'health' || route === 'prometheus') {
      // A not-ready environment answers the core's 503 itself; otherwise the whole proxy is ready.
      const waiting = proxies.find((p) => !p.isReady());
      if (waiting !== undefined) waiting(req, res, next);
      else if (route === 'health') first(req, res, next);
      else servePrometheus(req, res, next);
      return;
    }
    if (route === 'outside') {
      // Not ours: the core calls next() when mounted, or answers its 404.
      first(req, res, next);
      return;
    }
    let index: number;
    if (route === 'ofrep-stream') {
      // The token names a hash of the key that fetched it; the environment holding that key checks it.
      index = streamScopes.get(tokenScopeOf(q === -1 ? '' : url.slice(q + 1))) ?? -1;
    } else if (route === 'ofrep') {
      index = keys.lookup(ofrepKeyOf(req, keyHeader));
    } else {
      const value = req.headers[keyHeader];
      index = keys.lookup(typeof value === 'string' ? value : undefined);
    }
    if (index === -1) {
      // No environment owns the key: the first one checks body and readiness like the core does,
      // then refuses the key with the core's 401 (it is none of its keys either).
      first(req, res, next);
      return;
    }
    // The same URL answers differently per key: shared caches must keep the answers apart.
    addVary(res, varyField);
    if (route === 'ofrep') {
      addVary(res, 'Authorization');
      addVary(res, 'X-API-Key');
    }
    proxies[index]!(req, res, next);
  };

  const named = (name: string, error: unknown): unknown =>
    isFlagProxyError(error)
      ? new FlagProxyError(error.code, `Environment "${name}": ${error.message}`, { status: error.status, cause: error })
      : error;

  let closed: Promise<void> | undefined;
  return Object.assign(handler, {
    ready,
    isReady,
    async waitUntilReady(options?: WaitUntilReadyOptions): Promise<void> {
      await Promise.all([...environments].map(([name, proxy]) => proxy.waitUntilReady(options).catch((error: unknown) => Promise.reject(named(name, error)))));
    },
    async refresh(environment?: string): Promise<void> {
      if (environment !== undefined && !environments.has(environment)) {
        throw new FlagProxyError('NOT_FOUND', `No environment named "${environment}" (known: ${[...environments.keys()].join(', ')})`, { status: 404 });
      }
      const chosen = [...environments].filter(([name]) => environment === undefined || name === environment);
      await Promise.all(chosen.map(([name, proxy]) => proxy.refresh().catch((error: unknown) => Promise.reject(named(name, error)))));
    },
    metrics,
    environments: environments as ReadonlyMap<string, FlagProxy>,
    closeStreams(): void {
      for (const proxy of proxies) proxy.closeStreams();
    },
    close(): Promise<void> {
      closed ??= Promise.all(proxies.map((p) => p.close())).then(() => undefined);
      return closed;
    },
  });
}
