/**
 * The OpenAPI 3.0 document of one proxy, generated from the same zod schemas that validate its
 * requests (src/core/schemas.ts), so the document and the validation cannot drift apart.
 * Response shapes, which nothing validates, are described here with zod as well.
 */
import type { z } from 'zod';
import { requestSchemas, type SchemaDoc } from '../core/schemas.js';
import { zod } from '../load-on-demand.js';
import { backstagePaths, clientApiPaths, frontendPaths } from './edge-paths.js';
import { evaluationOperation, json, plain, R, ref, reportOperation, toSchema, type JsonSchema, type Operation } from './shared.js';
import { OFREP_SECURITY_SCHEMES, ofrepPaths, ofrepSchemas } from './ofrep.js';
import { clientStreamingPaths } from './client-streaming.js';

/** What the document depends on, from the proxy's config. */
export interface OpenApiSettings {
  /** `''` or `/a/b`: becomes the document's server URL when set. */
  basePath: string;
  /** Header carrying client keys and server-side tokens (the apiKey security schemes). */
  clientKeysHeaderName: string;
  /** Whether `/proxy/all` answers (else 501); stated in its description. */
  enableAllEndpoint: boolean;
  /** Whether server-side tokens are configured (else `/proxy/client/features` and `/api/client/…` answer 401). */
  serverSideTokens: boolean;
  /** Which API surfaces are served (the options of the same names): only their paths are listed. */
  proxyApi: boolean;
  frontendApi: boolean;
  clientApi: boolean;
  backstageProbes: boolean;
  ofrepApi: boolean;
  /** Whether `/api/client/streaming` and `/api/client/delta` are served. @default false */
  clientStreaming?: boolean;
  /** The package version. */
  version: string;
}

/** Response shapes: documentation only (answers are serialized by the routes, not validated). */
function responseSchemas(): Record<string, JsonSchema> {
  const z = zod();
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
      query: d(z.record(z.string(), z.unknown()).optional(), {
        description: 'The filters applied (`project`, `namePrefix`); always present on `/api/client/features`.',
      }),
      segments: d(z.array(z.looseObject({ id: z.number().int(), constraints: z.array(z.unknown()) })).optional(), {
        description: 'The segments the definitions refer to (on `/proxy/client/features` present when any is used; always on `/api/client/features`).',
      }),
    }),
    { description: 'Toggle definitions for server-side SDKs and other proxies.' },
  );
  const out = (schema: z.ZodType): JsonSchema =>
    z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'output', metadata: docs, unrepresentable: 'any' }) as JsonSchema;
  const probe = d(z.object({ status: z.enum(['OK', 'READY', 'NOTREADY']), error: z.string().optional() }), {
    description: "A probe answer, as Unleash Edge's.",
  });
  return {
    TogglesResponse: out(toggles),
    ToggleResponse: out(toggle),
    ErrorResponse: out(error),
    FeaturesResponse: out(features),
    FeatureDefinition: out(definition),
    ProbeStatus: out(probe),
  };
}

/** The `@unleash/proxy` routes: `/proxy`, `/proxy/all`, the SDK reports and definitions, health and metrics. */
function proxyPaths(settings: OpenApiSettings): Record<string, unknown> {
  const keyOrToken = [{ clientKey: [] }, { serverSideToken: [] }];
  const evaluation = (all: boolean, method: 'get' | 'post'): Operation =>
    evaluationOperation({
      all,
      method,
      path: all ? '/proxy/all' : '/proxy',
      operationId: `${method}${all ? 'All' : ''}Toggles`,
      enableAllEndpoint: settings.enableAllEndpoint,
    });
  const report = (operationId: string, schema: string, summary: string): { post: Operation } =>
    reportOperation({ operationId, schema, summary, security: keyOrToken, accepted: R.ok });
  // The predecessor answers its reports 200 OK.
  const reportOk = (operationId: string, schema: string, summary: string): { post: Operation } => {
    const operation = report(operationId, schema, summary);
    const { '202': accepted, ...rest } = operation.post.responses as Record<string, unknown>;
    return { post: { ...operation.post, responses: { '200': accepted, ...rest } } };
  };
  return {
    '/proxy': { get: evaluation(false, 'get'), post: evaluation(false, 'post') },
    '/proxy/all': { get: evaluation(true, 'get'), post: evaluation(true, 'post') },
    '/proxy/client/metrics': reportOk('postClientMetrics', 'ClientMetrics', 'Report toggle usage counts'),
    '/proxy/all/client/metrics': reportOk('postAllClientMetrics', 'ClientMetrics', 'Report toggle usage counts (for SDKs whose URL ends in /proxy/all)'),
    '/proxy/client/register': reportOk('postClientRegister', 'ClientRegistration', 'Register an SDK'),
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
      ...OFREP_SECURITY_SCHEMES,
    },
    schemas: {
      LookupRequest: toSchema(requestSchemas().lookupSchema),
      Context: toSchema(requestSchemas().contextSchema),
      FrontendLookupRequest: { anyOf: [ref('LookupRequest'), ref('Context')], description: 'A lookup `{ context, toggles }`, or (as Unleash Edge takes it) the bare context.' },
      ClientMetrics: toSchema(requestSchemas().clientMetricsSchema),
      ClientRegistration: toSchema(requestSchemas().registerSchema),
      ...responseSchemas(),
      ...ofrepSchemas(),
    },
  };
}

/** Builds the document for one proxy's settings. */
export function createOpenApiDocument(settings: OpenApiSettings): Record<string, unknown> {
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
      { name: 'Frontend API', description: 'The Unleash frontend API as Unleash Edge serves it (client keys): the answers of `/proxy`.' },
      { name: 'Client API', description: 'Flag definitions and reports for server SDKs and other proxies (server-side tokens).' },
      { name: 'Operations', description: 'Readiness and metrics (no key).' },
      { name: 'OpenFeature', description: 'OpenFeature remote evaluation (OFREP 0.3), for OpenFeature SDKs (client keys).' },
    ],
    paths: {
      ...(settings.proxyApi ? proxyPaths(settings) : {}),
      ...(settings.frontendApi ? frontendPaths(settings) : {}),
      ...(settings.clientApi ? clientApiPaths(settings) : {}),
      ...(settings.backstageProbes ? backstagePaths() : {}),
      ...(settings.ofrepApi ? ofrepPaths() : {}),
      ...(settings.clientStreaming === true ? clientStreamingPaths(settings.serverSideTokens) : {}),
    },
    components: components(settings),
  };
}
