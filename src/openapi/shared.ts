/**
 * Pieces of the OpenAPI document that several surfaces' paths use: references, the common
 * responses, the GET query parameters, and the evaluation operation (`/proxy`, `/api/frontend`).
 */
import type { z } from 'zod';
import { requestSchemas } from '../core/schemas.js';
import { zod } from '../load-on-demand.js';

export type JsonSchema = Record<string, unknown>;
export type Operation = Record<string, unknown>;

/** A zod schema as an OpenAPI 3.0 Schema Object (request side: what a caller may send). */
export function toSchema(schema: z.ZodType): JsonSchema {
  return zod().toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', metadata: requestSchemas().schemaDocs, unrepresentable: 'any' }) as JsonSchema;
}

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const json = (name: string) => ({ 'application/json': { schema: ref(name) } });
export const plain = (type: string, example: string) => ({ [type]: { schema: { type: 'string', example } } });

export const R = {
  toggles: { description: 'The toggle results.', content: json('TogglesResponse') },
  notModified: { description: 'The answer matches `If-None-Match` (GET and HEAD only).' },
  notModifiedPoll: { description: 'The answer matches `If-None-Match`: a poll by POST, answered as Unleash Edge answers it.' },
  badRequest: { description: 'Malformed JSON, or a body or query that breaks the schema.', content: json('ErrorResponse') },
  unauthorized: { description: 'Missing or unknown key.', content: plain('text/plain', 'Unauthorized') },
  tooLarge: { description: 'The body is larger than maxBodyBytes.', content: json('ErrorResponse') },
  unsupported: { description: 'The body is not JSON (empty answer), or not UTF-8.' },
  notReady: {
    description: 'The proxy has not loaded a flag set yet.',
    content: plain('text/html', 'The flag proxy has not connected to the flag API and is not ready to accept requests yet.'),
  },
  internal: { description: 'An unexpected error (for example a throwing context enricher); details are only logged.', content: json('ErrorResponse') },
  ok: { description: 'Accepted.', content: plain('text/plain', 'OK') },
  accepted: { description: 'Accepted (no body).' },
  notFound: { description: 'The flag set holds no flag of that name.', content: json('ErrorResponse') },
} as const;

/** The query of a GET evaluation, one parameter per field of the query schema. */
export function queryParameters(): Array<Record<string, unknown>> {
  const schema = toSchema(requestSchemas().querySchema);
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => {
    const { description, example, ...rest } = property;
    const parameter: Record<string, unknown> = { name, in: 'query', required: required.has(name), schema: rest };
    if (description !== undefined) parameter.description = description;
    if (example !== undefined) parameter.example = example;
    if (rest.type === 'object') Object.assign(parameter, { style: 'deepObject', explode: true });
    return parameter;
  });
}

/** What an evaluation operation is for. */
export interface EvaluationSpec {
  all: boolean;
  method: 'get' | 'post';
  /** The path it is served at, as named in its 501 message. */
  path: string;
  operationId: string;
  /** Whether `enableAllEndpoint` is on (for the `/all` descriptions). */
  enableAllEndpoint: boolean;
  /** The POST body schema (component name). @default 'LookupRequest' */
  body?: string;
  tags?: string[];
  /** Whether a POST with a matching `If-None-Match` is answered 304 (the frontend API's, as Edge's). @default false */
  postPolls?: boolean;
}

/** A GET or POST evaluation in the Unleash frontend format. */
export function evaluationOperation(spec: EvaluationSpec): Operation {
  const { all, method } = spec;
  const responses: Record<string, unknown> = {
    '200': R.toggles,
    ...(method === 'get' ? { '304': R.notModified } : spec.postPolls === true ? { '304': R.notModifiedPoll } : {}),
    '400': R.badRequest,
    '401': R.unauthorized,
    ...(method === 'post' ? { '413': R.tooLarge, '415': R.unsupported } : {}),
    '500': R.internal,
    ...(all ? { '501': { description: '`enableAllEndpoint` is off.', content: plain('text/html', `The ${spec.path} endpoint is disabled. ...`) } } : {}),
    '503': R.notReady,
  };
  const summary = all
    ? method === 'get'
      ? 'Evaluate every toggle, disabled ones included'
      : 'Evaluate every toggle, or the named ones, for a context'
    : method === 'get'
      ? 'Evaluate the toggles enabled for a context'
      : 'Evaluate the enabled toggles, or the named ones, for a context';
  const availability = all
    ? spec.enableAllEndpoint
      ? ' Enabled on this proxy.'
      : ' Disabled on this proxy (`enableAllEndpoint` / `ENABLE_ALL_ENDPOINT`): answers 501 after the key check.'
    : '';
  const description =
    (method === 'get'
      ? 'The context is given as query parameters; any parameter other than the known fields becomes a custom property.'
      : 'With `toggles`, one result per listed name in that order (unknown names as disabled); without, ' +
        (all ? 'every toggle.' : 'the enabled toggles.')) + availability;
  return {
    tags: spec.tags ?? ['Evaluation'],
    operationId: spec.operationId,
    summary,
    description,
    security: [{ clientKey: [] }],
    ...(method === 'get' ? { parameters: queryParameters() } : { requestBody: { required: false, content: json(spec.body ?? 'LookupRequest') } }),
    responses,
  };
}

/** A usage report or registration route. */
export function reportOperation(spec: {
  operationId: string;
  schema: string;
  summary: string;
  security: ReadonlyArray<Record<string, unknown>>;
  accepted: Record<string, unknown>;
  tags?: string[];
}): { post: Operation } {
  return {
    post: {
      tags: spec.tags ?? ['SDK'],
      operationId: spec.operationId,
      summary: spec.summary,
      security: spec.security,
      requestBody: { required: true, content: json(spec.schema) },
      responses: { '202': spec.accepted, '400': R.badRequest, '401': R.unauthorized, '413': R.tooLarge, '415': R.unsupported },
    },
  };
}
