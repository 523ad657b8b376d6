/**
 * Request schemas (zod). Validation errors answer 400 in the predecessor's shape:
 * `{"error":"Request validation failed","validation":[{instancePath, keyword, params, message}]}`.
 * The OpenAPI document (src/openapi) is generated from these same schemas, with the descriptions
 * registered in `schemaDocs`; registering never changes what a schema accepts. They are built, and
 * zod loaded, only when first needed ({@link requestSchemas}).
 */
import type { z } from 'zod';
import { zod } from '../load-on-demand.js';
import { FlagProxyError } from '../errors.js';
import { isJsonObject as isObject, isPlainObject } from '../plain-objects.js';

/** Documentation of the request schemas, for the generated OpenAPI document only. */
export interface SchemaDoc {
  description?: string;
  example?: unknown;
}

/** Most toggle names one lookup may list (each costs an evaluation, a result and a usage count). */
export const MAX_TOGGLE_NAMES = 1000;

/** Largest count a frontend SDK may report for one toggle or variant (2^31). */
export const MAX_METRIC_COUNT = 2 ** 31;

/** The known context fields the context schema takes as strings (coercing numbers and booleans). */
const CONTEXT_STRING_FIELDS = ['appName', 'environment', 'userId', 'sessionId', 'remoteAddress', 'currentTime'] as const;

/**
 * Whether an object of a request would come out of the schema as it went in: without an own
 * `__proto__` field (JSON.parse makes one where a body has it; zod's copy does not keep it).
 */
function isFieldObject(value: unknown): value is Record<string, unknown> {
  return isObject(value) && !Object.hasOwn(value, '__proto__');
}

/**
 * Whether the context schema would pass `value` unchanged: an object whose known fields are
 * strings, and whose `properties`, if any, hold strings and nulls. What SDKs send; such a context
 * is not run through the schema (the objects zod builds for it cost time and, once V8 has seen
 * that site's objects outlive a collection, are born in the old generation).
 */
export function isPlainContext(value: unknown): value is Record<string, unknown> {
  if (!isFieldObject(value)) return false;
  for (const field of CONTEXT_STRING_FIELDS) {
    const given = value[field];
    if (given !== undefined && typeof given !== 'string') return false;
  }
  const properties = value.properties;
  if (properties === undefined) return true;
  if (!isFieldObject(properties)) return false;
  for (const name in properties) {
    const given = properties[name];
    if (given !== null && typeof given !== 'string') return false;
  }
  return true;
}

/** Whether the lookup schema would pass `value` unchanged (see {@link isPlainContext}). */
export function isPlainLookup(value: unknown): value is { context?: Record<string, unknown> | null; toggles?: string[] } {
  if (!isFieldObject(value)) return false;
  const { context, toggles } = value;
  if (context !== undefined && context !== null && !isPlainContext(context)) return false;
  if (toggles === undefined) return true;
  return Array.isArray(toggles) && toggles.length <= MAX_TOGGLE_NAMES && toggles.every((name) => typeof name === 'string');
}

/** A date-time as the predecessor's validator took it (RFC 3339, a space for the `T`, seconds optional). */
const DATE_TIME = /^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:[Zz]|[+-]\d\d:?\d\d)$/;

/** Whether `value` is a date-time the usage report schema takes: of that form, and a real instant. */
function isDateTime(value: unknown): value is string {
  return typeof value === 'string' && DATE_TIME.test(value) && !Number.isNaN(Date.parse(value));
}

/** Whether `value` is a count the usage report schema takes: an integer from 0 to {@link MAX_METRIC_COUNT}. */
function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_METRIC_COUNT;
}

/** Counts of one toggle as an SDK reports them (see usage-counts.ts for what the proxy keeps). */
export interface ReportedCounts {
  yes?: number;
  no?: number;
  variants?: Record<string, number>;
}

/** An SDK's usage report, as the proxy reads it (other fields pass through unread). */
export interface UsageReport {
  appName: string;
  instanceId: string;
  environment?: string;
  bucket: { start: string; stop: string; toggles: Record<string, ReportedCounts> };
}

/** {@link isFieldObject} for a record of a report (counts by name): a plain object too. */
function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && isFieldObject(value);
}

/**
 * Whether the usage report schema would pass `value` unchanged (see {@link isPlainContext}): what
 * SDKs send, a browser every 30 s. Such a report is not run through the schema, so a proxy whose
 * SDKs report usage never loads zod for it.
 */
export function isPlainUsageReport(value: unknown): value is UsageReport {
  if (!isFieldObject(value) || typeof value.appName !== 'string' || typeof value.instanceId !== 'string') return false;
  if (value.environment !== undefined && typeof value.environment !== 'string') return false;
  const bucket = value.bucket;
  if (!isFieldObject(bucket) || !isDateTime(bucket.start) || !isDateTime(bucket.stop) || !isPlainRecord(bucket.toggles)) return false;
  const toggles = bucket.toggles;
  for (const name in toggles) {
    const counts = toggles[name];
    if (!isFieldObject(counts)) return false;
    if ((counts.yes !== undefined && !isCount(counts.yes)) || (counts.no !== undefined && !isCount(counts.no))) return false;
    const variants = counts.variants;
    if (variants === undefined) continue;
    if (!isPlainRecord(variants)) return false;
    for (const variant in variants) if (!isCount(variants[variant])) return false;
  }
  return true;
}

/**
 * Whether the registration schema would pass `value` unchanged: what a server SDK sends once as it
 * starts (unleash-client's `/client/register`), so that serving server SDKs loads no zod either.
 */
export function isPlainRegistration(value: unknown): boolean {
  if (!isFieldObject(value) || typeof value.appName !== 'string' || !Number.isFinite(value.interval)) return false;
  if ((value.instanceId !== undefined && typeof value.instanceId !== 'string') || (value.sdkVersion !== undefined && typeof value.sdkVersion !== 'string')) return false;
  const { started, strategies } = value;
  if (typeof started === 'number' ? !Number.isFinite(started) : !isDateTime(started)) return false;
  return Array.isArray(strategies) && strategies.every((name) => typeof name === 'string');
}

/**
 * Builds the request schemas (and loads zod): on the first request a hand-written check does not
 * accept outright, or the first look at the OpenAPI document.
 */
function buildRequestSchemas() {
  const z = zod();
  /** Descriptions of the schemas below (a registry of our own: nothing registered globally). */
  const schemaDocs = z.registry<SchemaDoc>();
  function doc<T extends z.ZodType>(schema: T, meta: SchemaDoc): T {
    schemaDocs.add(schema as z.ZodType, meta);
    return schema;
  }

  // Numbers and booleans are accepted where strings are expected, as the predecessor's coercing
  // validator did (`toggles: [1]` is the toggle "1").
  const coercedString = z.union([z.string(), z.number(), z.boolean()]).transform(String);

  const dateTime = z
    .string()
    .regex(DATE_TIME, 'must match format "date-time"')
    .refine((s) => !Number.isNaN(Date.parse(s)), 'must match format "date-time"');

  const count = z
    .int({ error: (issue) => (issue.code === 'invalid_type' ? 'must be integer' : undefined) })
    .min(0, 'must be >= 0')
    .max(MAX_METRIC_COUNT, `must be <= ${MAX_METRIC_COUNT}`);

  /** `context` of a POST (or a whole POST body, where a surface takes a bare context): string fields, `properties` of strings, other keys passed through. */
  const contextSchema = doc(
    z.looseObject({
      appName: doc(coercedString.optional(), { description: "Application name; defaults to the proxy's flagAppName." }),
      environment: doc(coercedString.optional(), { description: 'Environment; ignored when the proxy has a fixed environment.' }),
      userId: doc(coercedString.optional(), { description: 'User id, for user-based strategies and stickiness.', example: '42' }),
      sessionId: doc(coercedString.optional(), {
        description: 'Session id; without one, a random session is used for the whole answer.',
      }),
      remoteAddress: doc(coercedString.optional(), { description: "Client IP address; defaults to the caller's address." }),
      currentTime: doc(coercedString.optional(), { description: 'ISO-8601 time for date constraints; an invalid time is dropped.' }),
      properties: doc(z.record(z.string(), coercedString.nullable()).optional(), {
        description: 'Custom context fields. Any other top-level key of the context is moved in here.',
        example: { region: 'eu' },
      }),
    }),
    { description: 'The evaluation context. Numbers and booleans are accepted as strings.' },
  );

  /** Body of `POST /proxy` and `POST /proxy/all`. */
  const lookupSchema = doc(
    z.looseObject({
      context: contextSchema.nullable().optional(),
      toggles: doc(z.array(coercedString).max(MAX_TOGGLE_NAMES, `must NOT have more than ${MAX_TOGGLE_NAMES} items`).optional(), {
        description: 'Toggle names to evaluate: one result per name, in this order, unknown names as disabled. Without it, all toggles.',
        example: ['new-checkout'],
      }),
    }),
    { description: 'A lookup: the context, and optionally the toggles to evaluate.' },
  );

  /** Query of `GET /proxy` and `GET /proxy/all`: scalars must not repeat, `properties` is an object. */
  const querySchema = doc(
    z.looseObject({
      appName: doc(z.string().optional(), { description: "Application name; defaults to the proxy's flagAppName." }),
      environment: doc(z.string().optional(), { description: 'Environment; ignored when the proxy has a fixed environment.' }),
      userId: doc(z.string().optional(), { description: 'User id, for user-based strategies and stickiness.', example: '42' }),
      sessionId: doc(z.string().optional(), { description: 'Session id; without one, a random session is used for the whole answer.' }),
      remoteAddress: doc(z.string().optional(), { description: "Client IP address; defaults to the caller's address." }),
      currentTime: doc(z.string().optional(), { description: 'ISO-8601 time for date constraints; an invalid time is dropped.' }),
      properties: doc(z.record(z.string(), z.unknown()).optional(), {
        description: 'Custom context fields, as `properties[name]=value`. Any other query parameter is a custom field too.',
        example: { region: 'eu' },
      }),
    }),
    { description: 'The evaluation context as query parameters.' },
  );

  const counts = doc(
    z.looseObject({ yes: count.optional(), no: count.optional(), variants: z.record(z.string(), count).optional() }),
    { description: "How often the toggle was enabled (yes) and disabled (no), and each variant's count; integers from 0 to 2^31." },
  );

  /** A frontend SDK's usage report. */
  const clientMetricsSchema = doc(
    z.looseObject({
      appName: z.string(),
      instanceId: z.string(),
      environment: z.string().optional(),
      bucket: doc(
        z.looseObject({
          start: dateTime,
          stop: dateTime,
          toggles: doc(z.record(z.string(), counts), { description: 'Counts by toggle name.' }),
        }),
        { description: 'The reporting period (start and stop are date-times) and its counts.' },
      ),
    }),
    {
      description:
        "An SDK's usage report. The counts join the proxy's next report upstream, under the proxy's own appName and instanceId.",
    },
  );

  /** A server SDK's registration. */
  const registerSchema = doc(
    z.looseObject({
      appName: z.string(),
      instanceId: z.string().optional(),
      sdkVersion: z.string().optional(),
      strategies: z.array(z.string()),
      started: z.union([dateTime, z.number()]),
      interval: doc(z.number(), { description: "The SDK's metrics interval in milliseconds." }),
    }),
    { description: "An SDK's registration. Accepted and acknowledged; not forwarded upstream." },
  );

  return { schemaDocs, contextSchema, lookupSchema, querySchema, clientMetricsSchema, registerSchema };
}

/** The request schemas, and the descriptions the OpenAPI document is generated with. */
export type RequestSchemas = ReturnType<typeof buildRequestSchemas>;

let built: RequestSchemas | undefined;

/**
 * The request schemas, built once on first use: a proxy whose callers send only what the
 * hand-written checks accept ({@link isPlainLookup}, {@link isPlainContext}, SDK-shaped queries)
 * never loads zod.
 */
export function requestSchemas(): RequestSchemas {
  return (built ??= buildRequestSchemas());
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let current = root;
  for (const key of path) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

function ajvMessage(
  issue: z.core.$ZodIssue,
  root: unknown,
): { keyword: string; params: Record<string, unknown>; message: string } {
  switch (issue.code) {
    case 'invalid_type': {
      if (valueAt(root, issue.path) === undefined) {
        const name = String(issue.path[issue.path.length - 1] ?? '');
        return { keyword: 'required', params: { missingProperty: name }, message: `must have required property '${name}'` };
      }
      const type = issue.expected === 'record' ? 'object' : issue.expected === 'int' ? 'integer' : issue.expected;
      const message = issue.message.startsWith('must be') ? issue.message : `must be ${type}`;
      return { keyword: 'type', params: { type: message.slice('must be '.length) }, message };
    }
    case 'invalid_union': {
      const first = issue.errors[0]?.[0];
      return first ? ajvMessage({ ...first, path: [...issue.path, ...first.path] }, root) : { keyword: 'type', params: {}, message: 'must be string' };
    }
    case 'too_small':
      return { keyword: 'minimum', params: { limit: issue.minimum }, message: issue.message };
    case 'too_big':
      return { keyword: 'maximum', params: { limit: issue.maximum }, message: issue.message };
    case 'invalid_format':
    case 'custom':
      return { keyword: 'format', params: { format: 'date-time' }, message: issue.message };
    default:
      return { keyword: issue.code, params: {}, message: issue.message };
  }
}

/**
 * Parses `value` with `schema`, or throws the 400 validation error with ajv-style entries whose
 * `instancePath` starts with `where` (`/body` or `/query`).
 */
export function validate<T extends z.ZodType>(schema: T, value: unknown, where: '/body' | '/query'): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  // Only the first problem, as the predecessor's validator (ajv without allErrors) reported.
  const validation = result.error.issues.slice(0, 1).map((issue) => {
    // A missing required property is reported on its parent, as ajv does.
    const { keyword, params, message } = ajvMessage(issue, value);
    const path = keyword === 'required' ? issue.path.slice(0, -1) : issue.path;
    return { instancePath: [where, ...path.map(String)].join('/'), keyword, params, message };
  });
  throw new FlagProxyError('VALIDATION_FAILED', 'Request validation failed', { status: 400, details: validation });
}
