/**
 * Environment → options. The only module that reads environment variables (it is handed them;
 * the CLI passes `process.env`). Every bad value throws a FlagProxyError `INVALID_OPTION` that
 * names the variable.
 */
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import path from 'node:path';
import { FlagProxyError } from '../errors.js';
import { LOG_LEVELS, type LogLevel } from '../logger.js';
import type { ContextEnricher, FlagProxyCorsOptions, FlagProxyOptions } from './options.js';
import { ENV_NAMES } from './names.js';
import { Strategy } from '../evaluation/types.js';

type Env = Readonly<Record<string, string | undefined>>;
type OptionName = keyof typeof ENV_NAMES;

const TRUE = new Set(['true', '1', 'yes', 't', 'y', 'on']);
const FALSE = new Set(['false', '0', 'no', 'f', 'n', 'off']);

function invalid(option: OptionName, message: string): never {
  throw new FlagProxyError('INVALID_OPTION', `Invalid option ${option} (${ENV_NAMES[option]}): ${message}`, {
    status: 500,
  });
}

class EnvReader {
  constructor(private readonly env: Env) {}

  /** The trimmed value, or undefined when unset or blank. */
  string(option: OptionName): string | undefined {
    const raw = this.env[ENV_NAMES[option]];
    if (raw === undefined) return undefined;
    const trimmed = raw.trim();
    return trimmed === '' ? undefined : trimmed;
  }

  /** Comma-separated, each item trimmed, empty items dropped. */
  list(option: OptionName): string[] | undefined {
    const raw = this.string(option);
    if (raw === undefined) return undefined;
    return raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
  }

  boolean(option: OptionName): boolean | undefined {
    const raw = this.string(option);
    if (raw === undefined) return undefined;
    const lower = raw.toLowerCase();
    if (TRUE.has(lower)) return true;
    if (FALSE.has(lower)) return false;
    return invalid(option, `expected true/false/1/0/yes/no, got "${raw}"`);
  }

  integer(option: OptionName): number | undefined {
    const raw = this.string(option);
    if (raw === undefined) return undefined;
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
      return invalid(option, `expected a non-negative integer, got "${raw}"`);
    }
    return Number(raw);
  }
}

/** The first line of an error's message (require stacks follow on later lines). */
function firstLine(error: unknown): string {
  return String((error as Error)?.message ?? error).split('\n')[0] ?? '';
}

/**
 * Loads each file's export: a list, or (when `factoryArgument` is given) a function called with it
 * that returns the list, so a file can build its items without importing anything.
 */
function loadList<T>(
  option: OptionName,
  files: string[],
  cwd: string,
  check: (v: unknown) => v is T,
  what: string,
  factoryArgument?: unknown,
): T[] {
  // require() loads CommonJS and (on Node >= 20.19) ES modules synchronously, resolved from cwd.
  const load = createRequire(path.join(cwd, 'noop.js'));
  const out: T[] = [];
  for (const file of files) {
    const full = path.resolve(cwd, file);
    try {
      load.resolve(full);
    } catch {
      invalid(option, `cannot load ${full}: file not found`);
    }
    let mod: unknown;
    try {
      mod = load(full);
    } catch (error) {
      // Most often an import the file cannot resolve from where it lives, e.g. 'flag-proxy'.
      const hint = /['"]flag-proxy['"]/.test(firstLine(error)) ? `; ${FLAG_PROXY_HINT}` : '';
      invalid(option, `cannot load ${full}: ${firstLine(error)}${hint}`);
    }
    let value = (mod as { default?: unknown } | undefined)?.default ?? mod;
    if (typeof value === 'function' && factoryArgument !== undefined) {
      try {
        value = (value as (argument: unknown) => unknown)(factoryArgument);
      } catch (error) {
        invalid(option, `${full}: its exported function threw: ${firstLine(error)}`);
      }
    }
    const list = Array.isArray(value) ? value : undefined;
    if (!list || !list.every(check)) invalid(option, `${full} must export a list of ${what}`);
    out.push(...(list as T[]));
  }
  return out;
}

const FLAG_PROXY_HINT =
  "a file outside a project that has flag-proxy installed can export plain { name, isEnabled } objects, or a function ({ Strategy }) => [...], instead of importing it";

const isStrategy = (v: unknown): v is Strategy =>
  typeof v === 'object' && v !== null && typeof (v as Strategy).name === 'string' && typeof (v as Strategy).isEnabled === 'function';
const isEnricher = (v: unknown): v is ContextEnricher => typeof v === 'function';

function parseTrustProxy(reader: EnvReader): FlagProxyOptions['trustProxy'] {
  const raw = reader.string('trustProxy');
  if (raw === undefined) return undefined;
  const lower = raw.toLowerCase();
  if (TRUE.has(lower) && lower !== '1' && lower !== '0') return true;
  if (FALSE.has(lower) && lower !== '0') return false;
  // A bare number is a hop count (the predecessor treated "1" as the IP 0.0.0.1).
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function parseTags(reader: EnvReader): FlagProxyOptions['tags'] {
  const items = reader.list('tags');
  if (!items) return undefined;
  return items.map((item) => {
    const [name, value, ...rest] = item.split(':').map((s) => s.trim());
    if (!name || value === undefined || value === '' || rest.length > 0) {
      return invalid('tags', `expected name:value pairs separated by commas, got "${item}"`);
    }
    return { name, value };
  });
}

function parseCors(reader: EnvReader): FlagProxyCorsOptions | undefined {
  const originList = reader.list('cors.origin');
  const cors: FlagProxyCorsOptions = {
    origin: originList === undefined ? undefined : originList.length === 1 ? originList[0] : originList,
    methods: reader.string('cors.methods'),
    allowedHeaders: reader.string('cors.allowedHeaders'),
    exposedHeaders: reader.string('cors.exposedHeaders'),
    credentials: reader.boolean('cors.credentials'),
    maxAge: reader.integer('cors.maxAge'),
    preflightContinue: reader.boolean('cors.preflightContinue'),
    optionsSuccessStatus: reader.integer('cors.optionsSuccessStatus'),
  };
  const given = Object.fromEntries(Object.entries(cors).filter(([, v]) => v !== undefined));
  return Object.keys(given).length > 0 ? (given as FlagProxyCorsOptions) : undefined;
}

function parseLogLevel(reader: EnvReader): LogLevel | undefined {
  const raw = reader.string('logLevel');
  if (raw === undefined) return undefined;
  const lower = raw.toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(lower)) invalid('logLevel', `expected one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
  return lower;
}

/** Options of {@link optionsFromEnv}. */
export interface OptionsFromEnvSettings {
  /** Directory that relative strategy and enricher file paths resolve against. @default process.cwd() */
  cwd?: string;
}

/**
 * Turns an environment (e.g. `process.env`) into {@link FlagProxyOptions}, with the variable names
 * of the options table. Unset and blank variables are left out, so the result can be spread under
 * options given in code. Strategy and enricher files are loaded here.
 *
 * @throws FlagProxyError `INVALID_OPTION` naming the variable, for any value that does not parse.
 * @example
 * ```ts
 * const proxy = createFlagProxy({ ...optionsFromEnv(process.env), logger: myLogger });
 * ```
 */
export function optionsFromEnv(env: Env, settings: OptionsFromEnvSettings = {}): FlagProxyOptions {
  const r = new EnvReader(env);
  const cwd = settings.cwd ?? process.cwd();
  const strategyFiles = r.list('customStrategies');
  const enricherFiles = r.list('expCustomEnrichers');
  const bootstrapUrl = r.string('expBootstrap.url');
  const bootstrapAuth = r.string('expBootstrap.urlHeaders.Authorization');
  const rejectUnauthorized = r.boolean('httpOptions.rejectUnauthorized');
  const serverSideTokens = r.list('expServerSideSdkConfig.tokens');
  const ofrepTargetingKey = r.string('ofrep.targetingKey');
  const refetchNoticesPerSecond = r.integer('ofrep.refetchNoticesPerSecond');

  const options: FlagProxyOptions = {
    flagUrl: r.string('flagUrl'),
    flagApiToken: r.string('flagApiToken'),
    clientKeys: r.list('clientKeys'),
    proxySecrets: r.list('proxySecrets'),
    proxyBasePath: r.string('proxyBasePath'),
    flagAppName: r.string('flagAppName'),
    flagInstanceId: r.string('flagInstanceId'),
    refreshInterval: r.integer('refreshInterval'),
    metricsInterval: r.integer('metricsInterval'),
    metricsJitter: r.integer('metricsJitter'),
    environment: r.string('environment'),
    projectName: r.string('projectName'),
    useJsonLogger: r.boolean('useJsonLogger'),
    logLevel: parseLogLevel(r),
    customStrategies:
      strategyFiles &&
      loadList('customStrategies', strategyFiles, cwd, isStrategy, 'strategy instances (or objects with a name and an isEnabled method)', { Strategy }),
    trustProxy: parseTrustProxy(r),
    namePrefix: r.string('namePrefix'),
    tags: parseTags(r),
    clientKeysHeaderName: r.string('clientKeysHeaderName'),
    backup: r.boolean('backup'),
    enableOAS: r.boolean('enableOAS'),
    enableAllEndpoint: r.boolean('enableAllEndpoint'),
    proxyApi: r.boolean('proxyApi'),
    frontendApi: r.boolean('frontendApi'),
    clientApi: r.boolean('clientApi'),
    backstageProbes: r.boolean('backstageProbes'),
    ofrepApi: r.boolean('ofrepApi'),
    cors: parseCors(r),
    httpOptions: rejectUnauthorized === undefined ? undefined : { rejectUnauthorized },
    maxBodyBytes: r.integer('maxBodyBytes'),
    answerCacheBytes: r.integer('answerCacheBytes'),
    maxEventStreams: r.integer('maxEventStreams'),
    eventStreamHeartbeatInterval: r.integer('eventStreamHeartbeatInterval'),
    ofrep:
      ofrepTargetingKey === undefined && refetchNoticesPerSecond === undefined
        ? undefined
        : { targetingKey: ofrepTargetingKey, refetchNoticesPerSecond },
    clientStreaming: r.boolean('clientStreaming'),
    expBootstrap:
      bootstrapUrl === undefined
        ? undefined
        : { url: bootstrapUrl, ...(bootstrapAuth === undefined ? {} : { urlHeaders: { Authorization: bootstrapAuth } }) },
    expServerSideSdkConfig: serverSideTokens === undefined ? undefined : { tokens: serverSideTokens },
    expCustomEnrichers: enricherFiles && loadList('expCustomEnrichers', enricherFiles, cwd, isEnricher, 'functions'),
  };
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as FlagProxyOptions;
}

/** The listening port from `PORT` or `PROXY_PORT`. @default 3000 */
export function portFromEnv(env: Env): number {
  const raw = (env.PORT ?? env.PROXY_PORT)?.trim();
  if (raw === undefined || raw === '') return 3000;
  if (!/^\d+$/.test(raw) || Number(raw) > 65_535) {
    throw new FlagProxyError('INVALID_OPTION', `Invalid option port (PORT or PROXY_PORT): expected 0-65535, got "${raw}"`, {
      status: 500,
    });
  }
  return Number(raw);
}

/** A DNS name: labels of letters, digits and hyphens, separated by dots. */
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

/**
 * The CLI's bind address from `HOST` or `PROXY_HOST` (named like `PORT` and `PROXY_PORT`): an IP
 * address or a host name. Unset: every interface, Node's default.
 */
export function hostFromEnv(env: Env): string | undefined {
  const raw = (env.HOST ?? env.PROXY_HOST)?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (isIP(raw) === 0 && !HOST_NAME.test(raw)) {
    throw new FlagProxyError('INVALID_OPTION', `Invalid option host (HOST or PROXY_HOST): expected an IP address or a host name, got "${raw}"`, {
      status: 500,
    });
  }
  return raw;
}

/** The options `@unleash/proxy` read from `UNLEASH_*` variables; ours are named `FLAG_*` instead. */
const PREDECESSOR_OPTIONS = [
  'flagUrl',
  'flagApiToken',
  'clientKeys',
  'proxySecrets',
  'flagAppName',
  'flagInstanceId',
  'refreshInterval',
  'metricsInterval',
  'metricsJitter',
  'environment',
  'projectName',
  'customStrategies',
  'namePrefix',
  'tags',
] as const satisfies readonly OptionName[];

/** A non-blank value: a variable set to `''` counts as unset, as everywhere else. */
const isSet = (value: string | undefined): boolean => value !== undefined && value.trim() !== '';
const anyFlagVariable = (env: Env): boolean => Object.keys(env).some((name) => name.startsWith('FLAG_') && isSet(env[name]));
const isProduction = (env: Env): boolean => env.NODE_ENV?.trim().toLowerCase() === 'production';

/**
 * The `@unleash/proxy` variables set in `env`, each with the name flag-proxy reads instead
 * (`UNLEASH_URL` → `FLAG_URL`), in the order of the options table.
 */
export function predecessorVariables(env: Env): Array<{ name: string; replacement: string }> {
  return PREDECESSOR_OPTIONS.map((option) => ({ name: ENV_NAMES[option].replace(/^FLAG_/, 'UNLEASH_'), replacement: ENV_NAMES[option] })).filter(
    ({ name }) => isSet(env[name]),
  );
}

/**
 * Whether the CLI may start its embedded demo flag server by itself: only when nothing configures
 * a proxy (no `FLAG_*` and no `@unleash/proxy` variable is set) and `NODE_ENV` is not
 * `production`. Anything else means an operator meant a real upstream, and a demo answering in its
 * place would pass health checks with sample flags.
 */
export function mayStartDemo(env: Env): boolean {
  return !isProduction(env) && !anyFlagVariable(env) && predecessorVariables(env).length === 0;
}

/**
 * What to add to a configuration error so that the operator sees why no demo started and what
 * to rename: `''` when there is nothing to add.
 */
export function configurationHint(env: Env): string {
  const predecessors = predecessorVariables(env);
  if (predecessors.length > 0) {
    return `; @unleash/proxy variables are set: rename ${predecessors.map(({ name, replacement }) => `${name} to ${replacement}`).join(', ')}`;
  }
  if (isProduction(env) && !anyFlagVariable(env)) {
    return '; NODE_ENV is production, so the embedded demo does not start (--demo forces it)';
  }
  return '';
}

/**
 * The CLI's startup bound from `FLAG_PROXY_READY_TIMEOUT`, in milliseconds: after that long
 * without a flag set the CLI exits 1. Unset or `0`: no bound (503 until ready, however long).
 */
export function readyTimeoutFromEnv(env: Env): number | undefined {
  const raw = env.FLAG_PROXY_READY_TIMEOUT?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new FlagProxyError(
      'INVALID_OPTION',
      `Invalid option readyTimeout (FLAG_PROXY_READY_TIMEOUT): expected milliseconds as a non-negative integer, got "${raw}"`,
      { status: 500 },
    );
  }
  return Number(raw) === 0 ? undefined : Number(raw);
}
