/**
 * Request schemas (zod). Validation errors answer 400 in the predecessor's shape:
 * `{"error":"Request validation failed","validation":[{instancePath, keyword, params, message}]}`.
 */
import { z } from 'zod';
import { FlagProxyError } from '../errors.js';

/** Largest count a frontend SDK may report for one toggle or variant (2^31). */
export const MAX_METRIC_COUNT = 2 ** 31;

// Numbers and booleans are accepted where strings are expected, as the predecessor's coercing
// validator did (`toggles: [1]` is the toggle "1").
const coercedString = z.union([z.string(), z.number(), z.boolean()]).transform(String);

const dateTime = z
  .string()
  .regex(/^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:[Zz]|[+-]\d\d:?\d\d)$/, 'must match format "date-time"')
  .refine((s) => !Number.isNaN(Date.parse(s)), 'must match format "date-time"');

const count = z
  .int({ error: (issue) => (issue.code === 'invalid_type' ? 'must be integer' : undefined) })
  .min(0, 'must be >= 0')
  .max(MAX_METRIC_COUNT, `must be <= ${MAX_METRIC_COUNT}`);

/** `context` of a POST: string fields, `properties` of strings, other keys passed through. */
const contextSchema = z.looseObject({
  appName: coercedString.optional(),
  environment: coercedString.optional(),
  userId: coercedString.optional(),
  sessionId: coercedString.optional(),
  remoteAddress: coercedString.optional(),
  currentTime: coercedString.optional(),
  properties: z.record(z.string(), coercedString.nullable()).optional(),
});

/** Body of `POST /proxy` and `POST /proxy/all`. */
export const lookupSchema = z.looseObject({
  context: contextSchema.nullable().optional(),
  toggles: z.array(coercedString).optional(),
});

/** Query of `GET /proxy` and `GET /proxy/all`: scalars must not repeat, `properties` is an object. */
export const querySchema = z.looseObject({
  appName: z.string().optional(),
  environment: z.string().optional(),
  userId: z.string().optional(),
  sessionId: z.string().optional(),
  remoteAddress: z.string().optional(),
  currentTime: z.string().optional(),
  properties: z.record(z.string(), z.unknown()).optional(),
});

/** A frontend SDK's usage report. */
export const clientMetricsSchema = z.looseObject({
  appName: z.string(),
  instanceId: z.string(),
  environment: z.string().optional(),
  bucket: z.looseObject({
    start: dateTime,
    stop: dateTime,
    toggles: z.record(
      z.string(),
      z.looseObject({ yes: count.optional(), no: count.optional(), variants: z.record(z.string(), count).optional() }),
    ),
  }),
});

/** A server SDK's registration. */
export const registerSchema = z.looseObject({
  appName: z.string(),
  instanceId: z.string().optional(),
  sdkVersion: z.string().optional(),
  strategies: z.array(z.string()),
  started: z.union([dateTime, z.number()]),
  interval: z.number(),
});

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
