/**
 * Options the schema would accept, checked by hand: what nearly every configuration is. Such
 * options are taken without zod, which then never loads (about 10 MB of RSS in the host's
 * process); anything this check does not accept outright goes to the schema in resolve.ts, which has
 * the last word and writes the message. A differential test holds the two together.
 */
import { LOG_LEVELS } from '../logger.js';
import { isPlainObject } from '../plain-objects.js';

/** What a check answers for a value it does not accept outright. */
export const DECLINED: unique symbol = Symbol('declined');

/** Takes a value as the schema would give it back (arrays and objects copied), or declines. */
type Take = (value: unknown) => unknown;

// Predicates the schema's custom checks use as well (one definition of each rule).
export const isLogger = (v: unknown): boolean =>
  typeof v === 'object' && v !== null && LOG_LEVELS.every((level) => typeof (v as Record<string, unknown>)[level] === 'function');
export const isStrategy = (v: unknown): boolean =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as { name?: unknown }).name === 'string' &&
  typeof (v as { isEnabled?: unknown }).isEnabled === 'function';
export const isStorage = (v: unknown): boolean =>
  typeof v === 'object' && v !== null && typeof (v as { get?: unknown }).get === 'function' && typeof (v as { set?: unknown }).set === 'function';
export const isRegistry = (v: unknown): boolean =>
  typeof v === 'object' && v !== null && typeof (v as { registerMetric?: unknown }).registerMetric === 'function';
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const when =
  (test: (v: unknown) => boolean): Take =>
  (v) =>
    test(v) ? v : DECLINED;
const string = when((v) => typeof v === 'string');
const nonEmpty = when((v) => typeof v === 'string' && v.length > 0);
const boolean = when((v) => typeof v === 'boolean');
const fn = when((v) => typeof v === 'function');
const intFrom = (min: number, max = Number.MAX_SAFE_INTEGER): Take => when((v) => Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max);
const nonNegativeInt = intFrom(0);
const either =
  (...takes: Take[]): Take =>
  (v) => {
    for (const take of takes) {
      const taken = take(v);
      if (taken !== DECLINED) return taken;
    }
    return DECLINED;
  };

// No ASCII whitespace or control character: the schema trims and strips those, which would change the value.
const UNTOUCHED_BY_URL_CHECK = /^[^\s\x00-\x1f\x7f]+$/;
/** A URL the schema passes unchanged; `http(s)://` only when `web`, in lower case as written. */
const url = (web: boolean): Take =>
  when((v) => typeof v === 'string' && UNTOUCHED_BY_URL_CHECK.test(v) && (!web || /^https?:\/\//.test(v)) && URL.canParse(v));

const arrayOf =
  (item: Take): Take =>
  (v) => {
    if (!Array.isArray(v)) return DECLINED;
    const out: unknown[] = [];
    for (let i = 0; i < v.length; i++) {
      const taken = item(v[i]);
      if (taken === DECLINED) return DECLINED;
      out.push(taken);
    }
    return out;
  };

/**
 * An object of exactly these optional fields (`loose`: others kept as they are, else declined),
 * copied. A field given as `undefined` is kept as `undefined`, as the schema keeps it.
 */
const objectOf =
  (fields: Record<string, Take>, loose = false): Take =>
  (v) => {
    if (!isPlainObject(v)) return DECLINED;
    const out: Record<string, unknown> = {};
    for (const key in v) {
      if (!Object.hasOwn(v, key)) continue;
      const take = Object.hasOwn(fields, key) ? fields[key] : undefined;
      if (take === undefined && !loose) return DECLINED;
      const value = v[key];
      const taken = take === undefined || value === undefined ? value : take(value);
      if (taken === DECLINED) return DECLINED;
      out[key] = taken;
    }
    return out;
  };

const stringList = arrayOf(string);
const stringOrList = either(string, stringList);

const FIELDS: Record<string, Take> = {
  flagUrl: url(true),
  flagApiToken: nonEmpty,
  clientKeys: stringList,
  proxySecrets: stringList,
  proxyBasePath: string,
  flagAppName: nonEmpty,
  flagInstanceId: nonEmpty,
  refreshInterval: nonNegativeInt,
  metricsInterval: nonNegativeInt,
  metricsJitter: nonNegativeInt,
  environment: string,
  projectName: string,
  logger: when(isLogger),
  useJsonLogger: boolean,
  logLevel: when((v) => (LOG_LEVELS as readonly unknown[]).includes(v)),
  customStrategies: arrayOf(when(isStrategy)),
  trustProxy: either(boolean, nonNegativeInt, stringOrList),
  namePrefix: string,
  tags: arrayOf(
    (v) => {
      const tag = objectOf({ name: nonEmpty, value: string })(v);
      // Both fields are required.
      return tag !== DECLINED && typeof (tag as { name?: unknown }).name === 'string' && typeof (tag as { value?: unknown }).value === 'string' ? tag : DECLINED;
    },
  ),
  clientKeysHeaderName: when((v) => typeof v === 'string' && HEADER_NAME.test(v)),
  storageProvider: when(isStorage),
  backup: boolean,
  enableOAS: boolean,
  enableAllEndpoint: boolean,
  proxyApi: boolean,
  frontendApi: boolean,
  clientApi: boolean,
  backstageProbes: boolean,
  ofrepApi: boolean,
  cors: objectOf({
    origin: either(string, stringList, boolean),
    methods: stringOrList,
    allowedHeaders: stringOrList,
    exposedHeaders: stringOrList,
    credentials: boolean,
    maxAge: nonNegativeInt,
    preflightContinue: boolean,
    optionsSuccessStatus: intFrom(200, 299),
  }),
  httpOptions: objectOf({ rejectUnauthorized: boolean }),
  maxBodyBytes: intFrom(1),
  answerCacheBytes: nonNegativeInt,
  maxEventStreams: nonNegativeInt,
  eventStreamHeartbeatInterval: intFrom(10),
  ofrep: objectOf({ targetingKey: nonEmpty, refetchNoticesPerSecond: nonNegativeInt }),
  clientStreaming: boolean,
  metricsRegistry: when(isRegistry),
  expBootstrap: objectOf({
    url: url(false),
    urlHeaders: (v) => (isPlainObject(v) && Object.values(v).every((h) => typeof h === 'string') ? { ...v } : DECLINED),
    filePath: string,
    // Loose entries: each needs a name and a state; anything else in them is kept.
    data: arrayOf((v) => (isPlainObject(v) && typeof v.name === 'string' && typeof v.enabled === 'boolean' ? { ...v } : DECLINED)),
  }),
  expServerSideSdkConfig: objectOf({ tokens: stringList }),
  expCustomEnrichers: arrayOf(fn),
  context: fn,
  clientAddress: fn,
};

/** The option names the schema knows. */
export const OPTION_NAMES: readonly string[] = Object.keys(FIELDS);

/**
 * The options as the schema would give them back (every field checked, arrays and plain objects
 * copied, functions and instances as given), or {@link DECLINED} for anything it is not sure of:
 * an unknown name, a value of another type, or one the schema would coerce, trim or refuse.
 */
export const takePlainOptions: (options: unknown) => unknown = objectOf(FIELDS);
