/**
 * Options → config: validated once at creation (by hand for common options, else one zod schema). Bad options throw a
 * FlagProxyError `INVALID_OPTION` naming the option and its environment variable.
 */
import type { IncomingMessage } from 'node:http';
import type { Registry } from 'prom-client';
import type { z } from 'zod';
import { FlagProxyError } from '../errors.js';
import { createDefaultLogger, createRedactingLogger, LOG_LEVELS, REDACTED_TEXT, redactUrl, type Logger } from '../logger.js';
import { redactList, showAs } from './secrets-view.js';
import type { Strategy, StorageProvider, FeaturesResponse } from '../evaluation/types.js';
import type { ContextEnricher, CustomStrategy, FlagProxyBootstrapOptions, FlagProxyOptions } from './options.js';
import { describeOption } from './names.js';
import { DECLINED, HEADER_NAME, isLogger, isRegistry, isStorage, isStrategy, takePlainOptions } from './plain-options.js';
import { loadOnDemand, zod } from '../load-on-demand.js';
import { SWAGGER_UI_PACKAGE, swaggerUiDistDir } from '../openapi/swagger-ui.js';
import { defaultInstanceId } from '../evaluation/usage-reporter.js';
import { createNoBackup } from '../evaluation/file-storage.js';

/**
 * The options schema, with the rules of {@link takePlainOptions}: built (and zod loaded) only for
 * options that check declines, to accept them after all or to word what is wrong.
 */
export function optionsSchema() {
  const z = zod();
  const nonNegativeInt = z.number().int('must be a non-negative integer').min(0, 'must be a non-negative integer');
  const stringList = z.array(z.string());
  const stringOrList = z.union([z.string(), stringList]);
  const fn = (what: string) => z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', `must be ${what}`);

  const loggerSchema = z.custom<Logger>(isLogger, `must have the methods ${LOG_LEVELS.join(', ')}`);
  const strategySchema = z.custom<Strategy>(isStrategy, 'must be a list of strategy instances (objects with a name and an isEnabled method)');
  const storageSchema = z.custom<StorageProvider<FeaturesResponse>>(isStorage, 'must have get(key) and set(key, data) methods');
  const registrySchema = z.custom<Registry>(isRegistry, 'must be a prom-client Registry');

  return z.strictObject({
    flagUrl: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    flagApiToken: z.string().min(1, 'must not be empty').optional(),
    clientKeys: stringList.optional(),
    proxySecrets: stringList.optional(),
    proxyBasePath: z.string().optional(),
    flagAppName: z.string().min(1, 'must not be empty').optional(),
    flagInstanceId: z.string().min(1, 'must not be empty').optional(),
    refreshInterval: nonNegativeInt.optional(),
    metricsInterval: nonNegativeInt.optional(),
    metricsJitter: nonNegativeInt.optional(),
    environment: z.string().optional(),
    projectName: z.string().optional(),
    logger: loggerSchema.optional(),
    useJsonLogger: z.boolean().optional(),
    logLevel: z.enum(LOG_LEVELS).optional(),
    customStrategies: z.array(strategySchema).optional(),
    trustProxy: z.union([z.boolean(), nonNegativeInt, stringOrList]).optional(),
    namePrefix: z.string().optional(),
    tags: z.array(z.object({ name: z.string().min(1), value: z.string() })).optional(),
    clientKeysHeaderName: z.string().regex(HEADER_NAME, 'must be a valid header name').optional(),
    storageProvider: storageSchema.optional(),
    backup: z.boolean().optional(),
    enableOAS: z.boolean().optional(),
    enableAllEndpoint: z.boolean().optional(),
    proxyApi: z.boolean().optional(),
    frontendApi: z.boolean().optional(),
    clientApi: z.boolean().optional(),
    backstageProbes: z.boolean().optional(),
    ofrepApi: z.boolean().optional(),
    cors: z
      .strictObject({
        origin: z.union([z.string(), stringList, z.boolean()]).optional(),
        methods: stringOrList.optional(),
        allowedHeaders: stringOrList.optional(),
        exposedHeaders: stringOrList.optional(),
        credentials: z.boolean().optional(),
        maxAge: nonNegativeInt.optional(),
        preflightContinue: z.boolean().optional(),
        optionsSuccessStatus: z.number().int().min(200).max(299).optional(),
      })
      .optional(),
    httpOptions: z.strictObject({ rejectUnauthorized: z.boolean().optional() }).optional(),
    maxBodyBytes: z.number().int().min(1, 'must be a positive integer').optional(),
    answerCacheBytes: nonNegativeInt.optional(),
    maxEventStreams: nonNegativeInt.optional(),
    eventStreamHeartbeatInterval: z.number().int().min(10, 'must be an integer of at least 10 (ms)').optional(),
    ofrep: z
      .strictObject({
        targetingKey: z.string().min(1, 'must be a non-empty field name').optional(),
        refetchNoticesPerSecond: nonNegativeInt.optional(),
      })
      .optional(),
    clientStreaming: z.boolean().optional(),
    metricsRegistry: registrySchema.optional(),
    expBootstrap: z
      .strictObject({
        url: z.url().optional(),
        urlHeaders: z.record(z.string(), z.string()).optional(),
        filePath: z.string().optional(),
        data: z.array(z.looseObject({ name: z.string(), enabled: z.boolean() })).optional(),
      })
      .optional(),
    expServerSideSdkConfig: z.strictObject({ tokens: stringList.optional() }).optional(),
    expCustomEnrichers: z.array(fn('a function')).optional(),
    context: fn('a function (req) => context fields').optional(),
    clientAddress: fn('a function (req) => the caller address').optional(),
  });
}

/** Options as validated. */
type ValidOptions = z.output<ReturnType<typeof optionsSchema>>;

/** CORS settings handed to the `cors` middleware. */
export interface ResolvedCors {
  origin: string | string[] | boolean;
  methods: string | string[];
  allowedHeaders: string | string[] | undefined;
  exposedHeaders: string | string[];
  credentials: boolean;
  maxAge: number;
  preflightContinue: boolean;
  optionsSuccessStatus: number;
}

/** Options after validation and defaults: what the proxy runs on. */
export interface FlagProxyConfig {
  flagUrl: string;
  flagApiToken: string;
  clientKeys: readonly string[];
  /** `''` or `/a/b` (leading slash, no trailing slash). */
  basePath: string;
  appName: string;
  instanceId: string;
  refreshInterval: number;
  metricsInterval: number;
  metricsJitter: number;
  environment: string | undefined;
  projectName: string | undefined;
  namePrefix: string | undefined;
  tags: Array<{ name: string; value: string }> | undefined;
  customStrategies: CustomStrategy[];
  /** Whether the hop at `index` with address `addr` is trusted (proxy-addr semantics). */
  trustProxy: ((addr: string, index: number) => boolean) | false;
  /** Lower case. */
  clientKeysHeaderName: string;
  storageProvider: StorageProvider<FeaturesResponse> | undefined;
  enableOAS: boolean;
  enableAllEndpoint: boolean;
  /** Which API surfaces are served (see the options of the same names). */
  proxyApi: boolean;
  frontendApi: boolean;
  clientApi: boolean;
  backstageProbes: boolean;
  ofrepApi: boolean;
  cors: ResolvedCors;
  rejectUnauthorized: boolean | undefined;
  maxBodyBytes: number;
  answerCacheBytes: number;
  maxEventStreams: number;
  eventStreamHeartbeatInterval: number;
  /** The OFREP routes' settings. */
  ofrep: { targetingKey: string; refetchNoticesPerSecond: number };
  clientStreaming: boolean;
  metricsRegistry: Registry | undefined;
  bootstrap: FlagProxyBootstrapOptions | undefined;
  serverSideTokens: readonly string[];
  enrichers: ContextEnricher[];
  clientAddress: ((req: IncomingMessage) => string | undefined) | undefined;
  contextHook: FlagProxyOptions['context'];
  /** Redacts every token and key. */
  logger: Logger;
}

/** Default budget of the answer cache (see `answerCacheBytes`): 8 MiB. */
export const DEFAULT_ANSWER_CACHE_BYTES = 8 * 1024 * 1024;

/** A proxy config as it may be shown: no token, key, URL credential or bootstrap header value. */
function configView(config: FlagProxyConfig): Record<string, unknown> {
  const { bootstrap } = config;
  return {
    ...config,
    flagUrl: redactUrl(config.flagUrl),
    flagApiToken: REDACTED_TEXT,
    clientKeys: redactList(config.clientKeys),
    serverSideTokens: redactList(config.serverSideTokens),
    bootstrap:
      bootstrap === undefined
        ? undefined
        : {
            ...bootstrap,
            ...(bootstrap.url === undefined ? {} : { url: redactUrl(bootstrap.url) }),
            ...(bootstrap.urlHeaders === undefined
              ? {}
              : { urlHeaders: Object.fromEntries(Object.keys(bootstrap.urlHeaders).map((name) => [name, REDACTED_TEXT])) }),
          },
  };
}

function fail(path: string, message: string): never {
  throw new FlagProxyError('INVALID_OPTION', `Invalid option ${describeOption(path)}: ${message}`, { status: 500 });
}

function required(name: 'flagUrl' | 'flagApiToken' | 'clientKeys'): never {
  throw new FlagProxyError('INVALID_OPTION', `You must specify the ${describeOption(name)} option`, { status: 500 });
}

/** `'  base/path/ '` → `/base/path`; blank → `''`. */
export function normalizeBasePath(value: string | undefined): string {
  const trimmed = (value ?? '').trim().replace(/\/+$/, '');
  if (trimmed === '' || trimmed === '/') return '';
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

function resolveTrust(value: FlagProxyOptions['trustProxy']): FlagProxyConfig['trustProxy'] {
  if (value === undefined || value === false) return false;
  if (value === true) return () => true;
  if (typeof value === 'number') return (_addr, index) => index < value;
  const list = (Array.isArray(value) ? value : value.split(','))
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  try {
    return (loadOnDemand('proxy-addr') as typeof import('proxy-addr')).compile(list);
  } catch (error) {
    return fail('trustProxy', `${(error as Error).message}; use true, false, a hop count, or IP/CIDR names`);
  }
}

/** The options checked whole: by hand for what nearly every configuration is, else by the schema. */
function validOptions(options: FlagProxyOptions): ValidOptions {
  const taken = takePlainOptions(options);
  if (taken !== DECLINED) return taken as ValidOptions;
  const parsed = optionsSchema().safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    const path = issue.path.map(String).join('.') || 'options';
    fail(path, issue.code === 'unrecognized_keys' ? `unknown option(s) ${issue.keys.join(', ')}` : issue.message);
  }
  return parsed.data;
}

/**
 * Validates options once and applies the defaults. Never mutates `options`.
 * @throws FlagProxyError `INVALID_OPTION` naming the option and its environment variable.
 */
export function resolveConfig(options: FlagProxyOptions): FlagProxyConfig {
  if (typeof options !== 'object' || options === null) fail('options', 'must be an object');
  const o = validOptions(options);
  const flagUrl = o.flagUrl ?? required('flagUrl');
  // Fetches resolve `client/features` against it, which drops a query: refused, never lost.
  if (flagUrl.includes('?')) fail('flagUrl', 'must not carry a query string (it is not sent upstream); filter with projectName, namePrefix or tags');
  const flagApiToken = o.flagApiToken ?? required('flagApiToken');
  const clientKeys = o.clientKeys ?? o.proxySecrets ?? required('clientKeys');
  // No key at all answers 401 to every caller while health says 200: refused like a missing option.
  if (clientKeys.length === 0) fail('clientKeys', 'must list at least one key; without one every caller is refused');
  if (clientKeys.some((k) => k.length === 0)) fail('clientKeys', 'must not contain empty keys');
  const serverSideTokens = o.expServerSideSdkConfig?.tokens ?? [];
  if (serverSideTokens.some((k) => k.length === 0)) fail('expServerSideSdkConfig.tokens', 'must not contain empty tokens');
  // An optional peer dependency: located now, so a missing one stops startup, not a page view.
  if (o.enableOAS === true && swaggerUiDistDir() === undefined) {
    fail('enableOAS', `serves its page from the ${SWAGGER_UI_PACKAGE} package, which is not installed: npm install ${SWAGGER_UI_PACKAGE}`);
  }

  const secrets = [flagApiToken, ...clientKeys, ...serverSideTokens];
  // Any bootstrap header may carry a credential, whatever its name or case.
  for (const value of Object.values(o.expBootstrap?.urlHeaders ?? {})) secrets.push(value);
  const baseLogger =
    (o.logger as Logger | undefined) ?? createDefaultLogger({ level: o.logLevel ?? 'warn', json: o.useJsonLogger ?? false });

  if (o.backup === false && o.storageProvider !== undefined) fail('backup', 'false turns the backup off; do not give a storageProvider as well');
  const cors = o.cors ?? {};
  const config: FlagProxyConfig = {
    flagUrl,
    flagApiToken,
    clientKeys: [...clientKeys],
    basePath: normalizeBasePath(o.proxyBasePath),
    appName: o.flagAppName ?? 'flag-proxy',
    instanceId: o.flagInstanceId ?? defaultInstanceId(),
    refreshInterval: o.refreshInterval ?? 5000,
    metricsInterval: o.metricsInterval ?? 30_000,
    metricsJitter: o.metricsJitter ?? 0,
    environment: o.environment,
    projectName: o.projectName,
    namePrefix: o.namePrefix,
    tags: o.tags,
    customStrategies: o.customStrategies ?? [],
    trustProxy: resolveTrust(o.trustProxy),
    clientKeysHeaderName: (o.clientKeysHeaderName ?? 'authorization').toLowerCase(),
    storageProvider: o.backup === false ? createNoBackup() : o.storageProvider,
    enableOAS: o.enableOAS ?? false,
    enableAllEndpoint: o.enableAllEndpoint ?? false,
    proxyApi: o.proxyApi ?? true,
    frontendApi: o.frontendApi ?? true,
    clientApi: o.clientApi ?? true,
    backstageProbes: o.backstageProbes ?? true,
    ofrepApi: o.ofrepApi ?? true,
    cors: {
      origin: cors.origin ?? '*',
      methods: cors.methods ?? 'GET, POST',
      allowedHeaders: cors.allowedHeaders,
      exposedHeaders: cors.exposedHeaders ?? 'ETag',
      credentials: cors.credentials ?? false,
      maxAge: cors.maxAge ?? 172_800,
      preflightContinue: cors.preflightContinue ?? false,
      optionsSuccessStatus: cors.optionsSuccessStatus ?? 204,
    },
    rejectUnauthorized: o.httpOptions?.rejectUnauthorized,
    maxBodyBytes: o.maxBodyBytes ?? 102_400,
    answerCacheBytes: o.answerCacheBytes ?? DEFAULT_ANSWER_CACHE_BYTES,
    maxEventStreams: o.maxEventStreams ?? 10_000,
    eventStreamHeartbeatInterval: o.eventStreamHeartbeatInterval ?? 15_000,
    ofrep: { targetingKey: o.ofrep?.targetingKey ?? 'userId', refetchNoticesPerSecond: o.ofrep?.refetchNoticesPerSecond ?? 2000 },
    clientStreaming: o.clientStreaming ?? true,
    metricsRegistry: o.metricsRegistry,
    bootstrap: o.expBootstrap as FlagProxyBootstrapOptions | undefined,
    serverSideTokens: [...serverSideTokens],
    enrichers: (o.expCustomEnrichers ?? []) as ContextEnricher[],
    contextHook: o.context as FlagProxyConfig['contextHook'],
    clientAddress: o.clientAddress as FlagProxyConfig['clientAddress'],
    logger: createRedactingLogger(baseLogger, secrets),
  };
  // `console.log(proxy)` and `JSON.stringify(proxy.config)` must not show a secret.
  return showAs(config, () => configView(config));
}
