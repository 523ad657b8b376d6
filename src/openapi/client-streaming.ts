/**
 * The OpenAPI paths of `/api/client/streaming` and `/api/client/delta` (docs/streaming.md), kept
 * apart from the document's other paths: they exist only while `clientStreaming` is on.
 */

/** One event of a delta body; the other fields depend on `type`. */
const deltaEvent = {
  type: 'object',
  required: ['type', 'eventId'],
  additionalProperties: true,
  properties: {
    type: { type: 'string', enum: ['hydration', 'feature-updated', 'feature-removed', 'segment-updated', 'segment-removed'] },
    eventId: { type: 'integer', description: "The proxy's flag-set revision." },
    features: { type: 'array', items: { type: 'object', additionalProperties: true }, description: '`hydration`: every flag (matching the filters).' },
    segments: { type: 'array', items: { type: 'object', additionalProperties: true }, description: '`hydration`: every segment.' },
    feature: { type: 'object', additionalProperties: true, description: '`feature-updated`: the new definition.' },
    featureName: { type: 'string', description: '`feature-removed`.' },
    project: { type: 'string', description: '`feature-removed`.' },
    segment: { type: 'object', additionalProperties: true, description: '`segment-updated`.' },
    segmentId: { type: 'integer', description: '`segment-removed`.' },
  },
};
const deltaBody = { type: 'object', required: ['events'], properties: { events: { type: 'array', items: deltaEvent } } };

const filters = [
  { name: 'namePrefix', in: 'query', required: false, schema: { type: 'string' }, description: 'Only flags whose name starts with this.' },
  {
    name: 'project',
    in: 'query',
    required: false,
    schema: { type: 'array', items: { type: 'string' } },
    style: 'form',
    explode: true,
    description: 'Only flags of these projects.',
  },
];

const unauthorized = { description: 'No server-side token.', content: { 'text/plain': { schema: { type: 'string', example: 'Unauthorized' } } } };
const notReady = { description: 'The proxy has not loaded a flag set yet, or is closing.' };

/** The two paths, for a document whose server-side token scheme is `serverSideToken`. */
export function clientStreamingPaths(serverSideTokens: boolean): Record<string, unknown> {
  const none = serverSideTokens ? '' : ' No server-side tokens are configured on this proxy, so it answers 401.';
  return {
    '/api/client/streaming': {
      get: {
        tags: ['SDK'],
        operationId: 'getClientStreaming',
        summary: 'Pushed flag updates for server SDKs (unleash-client streaming mode)',
        description:
          'Server-sent events: `unleash-connected` first (a hydration, or the changes since `Last-Event-ID`), then `unleash-updated` ' +
          'with the changes of each new flag set. Each `data` is a delta body. Event ids are `<revision>-<instance>`; ' +
          'heartbeat comments keep an idle stream alive. See docs/streaming.md.' +
          none,
        security: [{ serverSideToken: [] }],
        parameters: [
          { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' }, description: 'The id of the last event received.' },
          ...filters,
        ],
        responses: {
          '200': { description: 'The event stream; each `data` is a DeltaResponse.', content: { 'text/event-stream': { schema: { type: 'string' } } } },
          '401': unauthorized,
          '503': { description: 'Not ready, or `maxEventStreams` streams are open (with `Retry-After`).' },
        },
      },
    },
    '/api/client/delta': {
      get: {
        tags: ['SDK'],
        operationId: 'getClientDelta',
        summary: 'Flag changes since a revision, for server SDKs polling in delta format',
        description:
          'A hydration without `If-None-Match`; with the ETag of an earlier answer, 304 while nothing changed, else the changes since it ' +
          '(a hydration when that revision is unknown or too old).' +
          none,
        security: [{ serverSideToken: [] }],
        parameters: filters,
        responses: {
          '200': { description: 'A delta body; its ETag names the revision.', content: { 'application/json': { schema: deltaBody } } },
          '304': { description: 'The revision in `If-None-Match` is current.' },
          '401': unauthorized,
          '503': notReady,
        },
      },
    },
  };
}
