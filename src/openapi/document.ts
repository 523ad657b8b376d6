/**
 * The OpenAPI 3.0 document of one proxy, generated from the same zod schemas that validate its
 * requests (src/core/schemas.ts), so the document and the validation cannot drift apart.
 * Response shapes, which nothing validates, are described here with zod as well.
 */
import { z } from 'zod';
import { clientMetricsSchema, lookupSchema, querySchema, registerSchema, schemaDocs, type SchemaDoc } from '../core/schemas.js';

/** What the document depends on, from the proxy's config. */
export interface OpenApiSettings {
  /** `''` or `/a/b`: becomes the document's server URL when set. */
  basePath: string;
  /** Header carrying client keys and server-side tokens (the apiKey security schemes). */
  clientKeysHeaderName: string;
  /** Whether `/proxy/all` answers (else 501); stated in its description. */
  enableAllEndpoint: boolean;
  /** Whether server-side tokens are configured (else `/proxy/client/features` answers 401). */
  serverSideTokens: boolean;
  /** The package version. */
  version: string;
}

type JsonSchema = Record<string, unknown>;
type Operation = Record<string, unknown>;

/** A zod schema as an OpenAPI 3.0 Schema Object (request side: what a caller may send). */
function toSchema(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', metadata: schemaDocs, unrepresentable: 'any' }) as JsonSchema;
}

/** Response shapes: documentation only (answers are serialized by the routes, not validated). */
function responseSchemas(): Record<string, JsonSchema> {
  const docs = z.registry<SchemaDoc>();
  const d = <T extends z.ZodType>(schema: T, meta: SchemaDoc): T => {
    docs.add(schema as z.ZodType, meta);
    return schema;
  };
  const variant = d(
    z.object({
      name: d(z.string(), { description: 'Variant name; `disabled` when the toggle has no variant for this context.' }),
      enabled: d(z.boolean(), { description: 'True when a variant was assigned (even one named `disabled`).' }),
      payload: d(z.object({ type: z.string(), value: z.string() }).optional(), { description: 'The variant payload; `value` is always a string.' }),
      feature_enabled: z.boolean().optional(),
      featureEnabled: z.boolean().optional(),
    }),
    { description: 'The variant of a toggle for the context.' },
  );
  const toggle = d(z.object({ name: z.string(), enabled: z.boolean(), variant, impressionData: z.boolean().optional() }), {
    description: 'One toggle result. Strategies, constraints and other rules never appear.',
  });
  const toggles = d(z.object({ toggles: z.array(toggle) }), { description: 'Toggle results.' });
  const problem = z.looseObject({
    instancePath: d(z.string(), { example: '/body/toggles' }),
    keyword: z.string(),
    params: z.record(z.string(), z.unknown()),
    message: d(z.string(), { example: 'must be array' }),
  });
  const error = d(
    z.object({
      error: z.string(),
      validation: d(z.array(problem).optional(), { description: 'Present when the body or query broke the request schema (the first problem).' }),
    }),
    { description: 'A JSON error.' },
  );
  const definition = z.looseObject({ name: z.string(), enabled: z.boolean(), strategies: z.array(z.looseObject({ name: z.string() })) });
  const features = d(
    z.object({
      version: z.number().int(),
      features: d(z.array(definition), { description: 'The raw toggle definitions, as the upstream serves them.' }),
      segments: d(z.array(z.looseObject({ id: z.number().int(), constraints: z.array(z.unknown()) })).optional(), {
        description: 'The segments the definitions refer to (present when any is used).',
      }),
    }),
    { description: 'Toggle definitions for server-side SDKs and other proxies.' },
  );
  const out = (schema: z.ZodType): JsonSchema =>
    z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'output', metadata: docs, unrepresentable: 'any' }) as JsonSchema;
  return { TogglesResponse: out(toggles), ErrorResponse: out(error), FeaturesResponse: out(features) };
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: string) => ({ 'application/json': { schema: ref(name) } });
const plain = (type: string, example: string) => ({ [type]: { schema: { type: 'string', example } } });

const R = {
  toggles: { description: 'The toggle results.', content: json('TogglesResponse') },
  notModified: { description: 'The answer matches `If-None-Match` (GET and HEAD only).' },
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
} as const;

/** The query of a GET evaluation, one parameter per field of the query schema. */
function queryParameters(): Array<Record<string, unknown>> {
  const schema = toSchema(querySchema);
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

/** One of the four evaluation operations: `/proxy` or `/proxy/all`, by GET or POST. */
function evaluationOperation(settings: OpenApiSettings, { all, method }: { all: boolean; method: 'get' | 'post' }): Operation {
  const responses: Record<string, unknown> = {
    '200': R.toggles,
    ...(method === 'get' ? { '304': R.notModified } : {}),
    '400': R.badRequest,
    '401': R.unauthorized,
    ...(method === 'post' ? { '413': R.tooLarge, '415': R.unsupported } : {}),
    '500': R.internal,
    ...(all ? { '501': { description: '`enableAllEndpoint` is off.', content: plain('text/html', 'The /proxy/all endpoint is disabled. ...') } } : {}),
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
    ? settings.enableAllEndpoint
      ? ' Enabled on this proxy.'
      : ' Disabled on this proxy (`enableAllEndpoint` / `ENABLE_ALL_ENDPOINT`): answers 501 after the key check.'
    : '';
  const description =
    (method === 'get'
      ? 'The context is given as query parameters; any parameter other than the known fields becomes a custom property.'
      : 'With `toggles`, one result per listed name in that order (unknown names as disabled); without, ' +
        (all ? 'every toggle.' : 'the enabled toggles.')) + availability;
  return {
    tags: ['Evaluation'],
    operationId: `${method}${all ? 'All' : ''}Toggles`,
    summary,
    description,
    security: [{ clientKey: [] }],
    ...(method === 'get' ? { parameters: queryParameters() } : { requestBody: { required: false, content: json('LookupRequest') } }),
    responses,
  };
}

/** A POST an SDK sends (usage counts, registration): a client key or a server-side token. */
function report(operationId: string, schema: string, summary: string): { post: Operation } {
  return {
    post: {
      tags: ['SDK'],
      operationId,
      summary,
      security: [{ clientKey: [] }, { serverSideToken: [] }],
      requestBody: { required: true, content: json(schema) },
      responses: { '200': R.ok, '400': R.badRequest, '401': R.unauthorized, '413': R.tooLarge, '415': R.unsupported },
    },
  };
}

/** The security schemes (named by the key header) and the schemas of the bodies. */
function components(settings: OpenApiSettings): Record<string, unknown> {
  return {
    securitySchemes: {
      clientKey: {
        type: 'apiKey',
        in: 'header',
        name: settings.clientKeysHeaderName,
        description: 'One of the proxy\'s client keys (`clientKeys` / `FLAG_PROXY_CLIENT_KEYS`), the bare value.',
      },
      serverSideToken: {
        type: 'apiKey',
        in: 'header',
        name: settings.clientKeysHeaderName,
        description: 'A server-side SDK token (`expServerSideSdkConfig.tokens` / `EXP_SERVER_SIDE_SDK_CONFIG_TOKENS`).',
      },
    },
    schemas: {
      LookupRequest: toSchema(lookupSchema),
      ClientMetrics: toSchema(clientMetricsSchema),
      ClientRegistration: toSchema(registerSchema),
      ...responseSchemas(),
    },
  };
}

/** Builds the document for one proxy's settings. */
export function createOpenApiDocument(settings: OpenApiSettings): Record<string, unknown> {
  const evaluation = (all: boolean, method: 'get' | 'post'): Operation => evaluationOperation(settings, { all, method });
  return {
    openapi: '3.0.3',
    info: {
      title: 'flag-proxy',
      version: settings.version,
      description:
        'Feature-flag evaluation for client-side applications: send an evaluation context with a client key, ' +
        `in the \`${settings.clientKeysHeaderName}\` header, and get the toggle results (never the rules).`,
    },
    servers: settings.basePath === '' ? [] : [{ url: settings.basePath }],
    tags: [
      { name: 'Evaluation', description: 'Toggle results for one evaluation context (client keys).' },
      { name: 'SDK', description: 'What SDKs send and read besides evaluations (client keys or server-side tokens).' },
      { name: 'Operations', description: 'Readiness and metrics (no key).' },
    ],
    paths: {
      '/proxy': { get: evaluation(false, 'get'), post: evaluation(false, 'post') },
      '/proxy/all': { get: evaluation(true, 'get'), post: evaluation(true, 'post') },
      '/proxy/client/metrics': report('postClientMetrics', 'ClientMetrics', 'Report toggle usage counts'),
      '/proxy/all/client/metrics': report('postAllClientMetrics', 'ClientMetrics', 'Report toggle usage counts (for SDKs whose URL ends in /proxy/all)'),
      '/proxy/client/register': report('postClientRegister', 'ClientRegistration', 'Register an SDK'),
      '/proxy/client/features': {
        get: {
          tags: ['SDK'],
          operationId: 'getClientFeatures',
          summary: 'Toggle definitions for server-side SDKs and other proxies',
          description:
            'Needs a server-side token (`expServerSideSdkConfig.tokens`); client keys are refused.' +
            (settings.serverSideTokens ? '' : ' No server-side tokens are configured on this proxy, so it answers 401.'),
          security: [{ serverSideToken: [] }],
          responses: {
            '200': { description: 'The definitions.', content: json('FeaturesResponse') },
            '304': R.notModified,
            '401': R.unauthorized,
            '503': R.notReady,
          },
        },
      },
      '/proxy/health': {
        get: {
          tags: ['Operations'],
          operationId: 'getHealth',
          summary: 'Readiness: ok once a flag set is loaded',
          security: [],
          responses: { '200': { description: 'Ready.', content: plain('text/html', 'ok') }, '503': R.notReady },
        },
      },
      '/proxy/internal-backstage/prometheus': {
        get: {
          tags: ['Operations'],
          operationId: 'getPrometheusMetrics',
          summary: 'Prometheus metrics of this proxy',
          security: [],
          responses: { '200': { description: 'Prometheus text format 0.0.4.', content: plain('text/plain', 'flag_proxy_up 1') }, '503': R.notReady },
        },
      },
    },
    components: components(settings),
  };
}
