/**
 * Environment variables → {@link MultiEnvironmentProxyOptions}. Each environment is a group of
 * variables `FLAG_ENV_<NAME>_<SETTING>`; the ordinary single-environment variables (`FLAG_URL`,
 * `FLAG_FETCH_INTERVAL`, `CORS_*`, ...) become the options all environments share. Reads only the
 * environment it is handed.
 */
import { optionsFromEnv, type OptionsFromEnvSettings } from '../config/env.js';
import { FlagProxyError } from '../errors.js';
import type { FlagProxyEnvironmentOptions, MultiEnvironmentProxyOptions } from './create-multi-environment-proxy.js';

type Env = Readonly<Record<string, string | undefined>>;

/** Prefix of every per-environment variable. */
export const ENVIRONMENT_VARIABLE_PREFIX = 'FLAG_ENV_';

/**
 * The per-environment settings, by variable suffix: `FLAG_ENV_<NAME>_<SUFFIX>`. `API_TOKEN` and
 * `CLIENT_KEYS` are required; the others override the shared variable named beside them.
 */
export const ENVIRONMENT_VARIABLE_SUFFIXES = {
  API_TOKEN: 'flagApiToken (required; FLAG_API_TOKEN is not used)',
  CLIENT_KEYS: 'clientKeys, comma-separated (required; FLAG_PROXY_CLIENT_KEYS is not used)',
  URL: 'flagUrl (default FLAG_URL)',
  APP_NAME: 'flagAppName (default FLAG_APP_NAME)',
  ENVIRONMENT: 'environment (default FLAG_ENVIRONMENT)',
  PROJECT_NAME: 'projectName (default FLAG_PROJECT_NAME)',
  NAME_PREFIX: 'namePrefix (default FLAG_NAME_PREFIX)',
  TAGS: 'tags, name:value pairs (default FLAG_TAGS)',
  SERVER_SIDE_TOKENS: 'expServerSideSdkConfig.tokens, comma-separated (default none)',
} as const;

type Suffix = keyof typeof ENVIRONMENT_VARIABLE_SUFFIXES;

// Longest first, so that no suffix is mistaken for the tail of another one.
const SUFFIXES = (Object.keys(ENVIRONMENT_VARIABLE_SUFFIXES) as Suffix[]).sort((a, b) => b.length - a.length);
const SINGLE_ONLY = ['FLAG_API_TOKEN', 'FLAG_PROXY_CLIENT_KEYS', 'FLAG_PROXY_SECRETS'] as const;

function invalid(variable: string, message: string): never {
  throw new FlagProxyError('INVALID_OPTION', `Invalid variable ${variable}: ${message}`, { status: 500 });
}

function list(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function tags(variable: string, raw: string): Array<{ name: string; value: string }> {
  return list(raw).map((item) => {
    const [name, value, ...rest] = item.split(':').map((s) => s.trim());
    if (!name || value === undefined || value === '' || rest.length > 0) {
      return invalid(variable, `expected name:value pairs separated by commas, got "${item}"`);
    }
    return { name, value };
  });
}

/** `FLAG_ENV_PROD_EU_API_TOKEN` → `['PROD_EU', 'API_TOKEN']`. */
function split(variable: string): [string, Suffix] {
  const rest = variable.slice(ENVIRONMENT_VARIABLE_PREFIX.length);
  for (const suffix of SUFFIXES) {
    if (rest.endsWith(`_${suffix}`) && rest.length > suffix.length + 1) {
      return [rest.slice(0, -suffix.length - 1), suffix];
    }
  }
  return invalid(
    variable,
    `expected ${ENVIRONMENT_VARIABLE_PREFIX}<NAME>_<SETTING> with SETTING one of ${Object.keys(ENVIRONMENT_VARIABLE_SUFFIXES).join(', ')}`,
  );
}

/**
 * Reads the multi-environment form of the configuration from `env` (e.g. `process.env`), or
 * returns `undefined` when no `FLAG_ENV_*` variable is set (the single-environment form applies).
 *
 * Each environment is named by the `<NAME>` part of its variables, lower-cased
 * (`FLAG_ENV_PRODUCTION_API_TOKEN` → environment `production`). Every other option comes from the
 * ordinary variables, read by `optionsFromEnv`, and is shared.
 *
 * @throws FlagProxyError `INVALID_OPTION` naming the variable, for a variable that does not parse,
 * an environment without `API_TOKEN` or `CLIENT_KEYS`, or `FLAG_API_TOKEN`/`FLAG_PROXY_CLIENT_KEYS`
 * set beside the environments.
 * @example
 * ```ts
 * // FLAG_URL=https://flags.example.com/api/
 * // FLAG_ENV_PRODUCTION_API_TOKEN=...  FLAG_ENV_PRODUCTION_CLIENT_KEYS=web-prod,ios-prod
 * // FLAG_ENV_STAGING_API_TOKEN=...     FLAG_ENV_STAGING_CLIENT_KEYS=web-staging
 * const options = multiEnvironmentOptionsFromEnv(process.env);
 * const proxy = options ? createMultiEnvironmentProxy(options) : createFlagProxy(optionsFromEnv(process.env));
 * ```
 */
export function multiEnvironmentOptionsFromEnv(
  env: Env,
  settings: OptionsFromEnvSettings = {},
): MultiEnvironmentProxyOptions | undefined {
  const groups = new Map<string, Partial<Record<Suffix, { variable: string; value: string }>>>();
  for (const variable of Object.keys(env).sort()) {
    if (!variable.startsWith(ENVIRONMENT_VARIABLE_PREFIX)) continue;
    const value = env[variable]?.trim();
    if (value === undefined || value === '') continue;
    const [rawName, suffix] = split(variable);
    const name = rawName.toLowerCase();
    if (!/^[a-z0-9][a-z0-9_]{0,63}$/.test(name)) {
      invalid(variable, 'the environment name must be letters, digits and "_", starting with a letter or digit');
    }
    const group = groups.get(name) ?? {};
    group[suffix] = { variable, value };
    groups.set(name, group);
  }
  if (groups.size === 0) return undefined;

  for (const variable of SINGLE_ONLY) {
    if (env[variable]?.trim()) {
      invalid(variable, `not used when environments are configured with ${ENVIRONMENT_VARIABLE_PREFIX}<NAME>_* variables; remove it`);
    }
  }
  const { clientKeys: _keys, proxySecrets: _secrets, flagApiToken: _token, ...shared } = optionsFromEnv(env, settings);

  const environments = [...groups].map(([name, group]): FlagProxyEnvironmentOptions => {
    const upper = name.toUpperCase();
    const required = (suffix: 'API_TOKEN' | 'CLIENT_KEYS'): string =>
      group[suffix]?.value ??
      invalid(`${ENVIRONMENT_VARIABLE_PREFIX}${upper}_${suffix}`, `environment "${name}" needs it (it sets ${ENVIRONMENT_VARIABLE_SUFFIXES[suffix]})`);
    const environment: FlagProxyEnvironmentOptions = {
      name,
      flagApiToken: required('API_TOKEN'),
      clientKeys: list(required('CLIENT_KEYS')),
    };
    if (group.URL) environment.flagUrl = group.URL.value;
    if (group.APP_NAME) environment.flagAppName = group.APP_NAME.value;
    if (group.ENVIRONMENT) environment.environment = group.ENVIRONMENT.value;
    if (group.PROJECT_NAME) environment.projectName = group.PROJECT_NAME.value;
    if (group.NAME_PREFIX) environment.namePrefix = group.NAME_PREFIX.value;
    if (group.TAGS) environment.tags = tags(group.TAGS.variable, group.TAGS.value);
    if (group.SERVER_SIDE_TOKENS) environment.expServerSideSdkConfig = { tokens: list(group.SERVER_SIDE_TOKENS.value) };
    return environment;
  });
  return { ...shared, environments };
}
