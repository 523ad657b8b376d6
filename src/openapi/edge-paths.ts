/**
 * The OpenAPI paths of the surfaces Unleash Edge serves too: the frontend API (`/api/frontend…`,
 * `/api/proxy…`), the client API for server SDKs (`/api/client/…`) and the probes
 * (`/internal-backstage/health`, `/ready`).
 */
import { evaluationOperation, json, R, reportOperation, type Operation } from './shared.js';

/** What these paths depend on. */
export interface EdgePathSettings {
  enableAllEndpoint: boolean;
  serverSideTokens: boolean;
}

const NAME = { name: 'name', in: 'path', required: true, description: 'The flag name (case-sensitive).', schema: { type: 'string' } };

/** `/api/frontend…` and `/api/proxy…`. */
export function frontendPaths(settings: EdgePathSettings): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  const keyOrToken = [{ clientKey: [] }, { serverSideToken: [] }];
  for (const [prefix, id] of [
    ['/api/frontend', 'Frontend'],
    ['/api/proxy', 'FrontendAlias'],
  ] as const) {
    const tags = ['Frontend API'];
    const evaluation = (all: boolean, method: 'get' | 'post'): Operation =>
      evaluationOperation({
        all,
        method,
        path: `${prefix}${all ? '/all' : ''}`,
        operationId: `${method}${id}${all ? 'All' : ''}Toggles`,
        enableAllEndpoint: settings.enableAllEndpoint,
        body: 'FrontendLookupRequest',
        tags,
        postPolls: true,
      });
    const feature = (method: 'get' | 'post'): Operation => ({
      tags,
      operationId: `${method}${id}Feature`,
      summary: 'Evaluate one flag for a context',
      description:
        'One toggle as an object (no `toggles` wrapper): `enabled: false` and the disabled variant when it is off for the context; 404 when the flag set holds no flag of that name.',
      security: [{ clientKey: [] }],
      parameters: [NAME, ...((evaluation(false, method).parameters as unknown[] | undefined) ?? [])],
      ...(method === 'post' ? { requestBody: { required: false, content: json('FrontendLookupRequest') } } : {}),
      responses: {
        '200': { description: 'The toggle.', content: json('ToggleResponse') },
        ...(method === 'get' ? { '304': R.notModified } : {}),
        '400': R.badRequest,
        '401': R.unauthorized,
        '404': R.notFound,
        '503': R.notReady,
      },
    });
    const report = (operationId: string, schema: string, summary: string) =>
      reportOperation({ operationId: `${operationId}${id}`, schema, summary, security: keyOrToken, accepted: R.accepted, tags });
    Object.assign(paths, {
      [prefix]: { get: evaluation(false, 'get'), post: evaluation(false, 'post') },
      [`${prefix}/all`]: { get: evaluation(true, 'get'), post: evaluation(true, 'post') },
      [`${prefix}/features/{name}`]: { get: feature('get'), post: feature('post') },
      [`${prefix}/client/metrics`]: report('postClientMetrics', 'ClientMetrics', 'Report toggle usage counts'),
      [`${prefix}/all/client/metrics`]: report('postAllClientMetrics', 'ClientMetrics', 'Report toggle usage counts (SDKs whose URL ends in /all)'),
      [`${prefix}/client/register`]: report('postClientRegister', 'ClientRegistration', 'Register an SDK'),
      [`${prefix}/all/client/register`]: report('postAllClientRegister', 'ClientRegistration', 'Register an SDK (SDKs whose URL ends in /all)'),
    });
  }
  return paths;
}

/** `/api/client/…`. */
export function clientApiPaths(settings: EdgePathSettings): Record<string, unknown> {
  const tags = ['Client API'];
  const security = [{ serverSideToken: [] }];
  const tokens = settings.serverSideTokens ? '' : ' No server-side tokens are configured on this proxy, so it answers 401.';
  const report = (operationId: string, schema: string, summary: string) =>
    reportOperation({ operationId, schema, summary, security, accepted: R.accepted, tags });
  return {
    '/api/client/features': {
      get: {
        tags,
        operationId: 'getApiClientFeatures',
        summary: 'The flag definitions, for server SDKs and other proxies',
        description:
          'The flag set the proxy holds, with the segments it uses, as the flag server answers it. Needs a server-side token.' + tokens,
        security,
        parameters: [
          { name: 'project', in: 'query', required: false, description: 'Only flags of these projects (repeat, or comma-separate).', schema: { type: 'array', items: { type: 'string' } }, style: 'form', explode: true },
          { name: 'namePrefix', in: 'query', required: false, description: 'Only flags whose name starts with this.', schema: { type: 'string' } },
        ],
        responses: {
          '200': { description: 'The definitions.', content: json('FeaturesResponse') },
          '304': R.notModified,
          '401': R.unauthorized,
          '503': R.notReady,
        },
      },
    },
    '/api/client/features/{name}': {
      get: {
        tags,
        operationId: 'getApiClientFeature',
        summary: "One flag's definition",
        description: 'Needs a server-side token.' + tokens,
        security,
        parameters: [NAME],
        responses: {
          '200': { description: 'The definition.', content: json('FeatureDefinition') },
          '304': R.notModified,
          '401': R.unauthorized,
          '404': R.notFound,
          '503': R.notReady,
        },
      },
    },
    '/api/client/metrics': report('postApiClientMetrics', 'ClientMetrics', 'Report toggle usage counts (server SDK or browser format)'),
    '/api/client/register': report('postApiClientRegister', 'ClientRegistration', 'Register a server SDK'),
  };
}

/** `/internal-backstage/health` and `/internal-backstage/ready`. */
export function backstagePaths(): Record<string, unknown> {
  const probe = (operationId: string, summary: string, responses: Record<string, unknown>) => ({
    get: { tags: ['Operations'], operationId, summary, security: [], responses },
  });
  return {
    '/internal-backstage/health': probe('getEdgeHealth', 'Liveness, as Unleash Edge answers it', {
      '200': { description: '`{"status":"OK"}`', content: json('ProbeStatus') },
    }),
    '/internal-backstage/ready': probe('getEdgeReady', 'Readiness, as Unleash Edge answers it', {
      '200': { description: '`{"status":"READY"}` once a flag set is loaded.', content: json('ProbeStatus') },
      '503': { description: '`{"error":…,"status":"NOTREADY"}` before the first sync, and once closing.', content: json('ProbeStatus') },
    }),
  };
}
