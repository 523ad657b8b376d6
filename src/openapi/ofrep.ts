/**
 * The OFREP part of the OpenAPI document: the two evaluation routes and the event stream, their
 * shapes (OFREP 0.3, with this proxy's mapping from Unleash flags), and the two ways to send a key.
 */
type JsonSchema = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: string) => ({ 'application/json': { schema: ref(name) } });

const ERROR_CODES = ['PARSE_ERROR', 'INVALID_CONTEXT', 'TARGETING_KEY_MISSING', 'GENERAL'];

/** The component schemas of the OFREP routes. */
export function ofrepSchemas(): Record<string, JsonSchema> {
  const metadata: JsonSchema = {
    type: 'object',
    properties: {
      enabled: { type: 'boolean', description: 'Whether the Unleash toggle is on for this context.' },
      payloadType: { type: 'string', description: 'The Unleash payload type of the variant, when it has one.' },
    },
    required: ['enabled'],
  };
  return {
    OfrepRequest: {
      type: 'object',
      properties: {
        context: {
          type: 'object',
          additionalProperties: true,
          description:
            'The evaluation context. `targetingKey` becomes `userId` (option `ofrep.targetingKey`); `sessionId`, `remoteAddress` and `currentTime` are taken as on `/proxy`; every other key becomes a property.',
          example: { targetingKey: 'user-1', plan: 'pro' },
        },
      },
    },
    OfrepEvaluation: {
      type: 'object',
      description:
        'One flag. `value` is a boolean for flags without payloads, else the payload parsed to the type of the flag (from its definition). It is absent when a payload flag is off or got no payload: the caller\'s default applies.',
      properties: {
        key: { type: 'string' },
        value: { description: 'boolean, string, number or object', nullable: false },
        reason: { type: 'string', enum: ['DISABLED', 'TARGETING_MATCH', 'SPLIT'] },
        variant: { type: 'string', description: 'The Unleash variant name (`disabled` when none was assigned).' },
        metadata,
      },
      required: ['key', 'reason', 'variant', 'metadata'],
    },
    OfrepEvaluationFailure: {
      type: 'object',
      description: 'A flag whose payload does not parse as the flag\'s type.',
      properties: { key: { type: 'string' }, errorCode: { type: 'string', enum: ['PARSE_ERROR'] }, errorDetails: { type: 'string' } },
      required: ['key', 'errorCode'],
    },
    OfrepBulkResponse: {
      type: 'object',
      properties: {
        flags: { type: 'array', items: { oneOf: [ref('OfrepEvaluation'), ref('OfrepEvaluationFailure')] }, description: 'Every flag of the proxy, in the flag set\'s order.' },
        eventStreams: {
          type: 'array',
          description: 'Where to hear about changes (ADR-0008): one server-sent event stream, its URL authorised by a short-lived token.',
          items: {
            type: 'object',
            properties: { type: { type: 'string', enum: ['sse'] }, url: { type: 'string', format: 'uri' }, inactivityDelaySec: { type: 'integer' } },
          },
        },
      },
      required: ['flags'],
    },
    OfrepKeyedError: {
      type: 'object',
      properties: { key: { type: 'string' }, errorCode: { type: 'string', enum: [...ERROR_CODES, 'FLAG_NOT_FOUND'] }, errorDetails: { type: 'string' } },
      required: ['key', 'errorCode'],
    },
    OfrepError: {
      type: 'object',
      properties: { errorCode: { type: 'string', enum: ERROR_CODES }, errorDetails: { type: 'string' } },
      required: ['errorCode'],
    },
    OfrepAuthError: { type: 'object', properties: { errorDetails: { type: 'string' } } },
  };
}

/** The security schemes OFREP clients use (besides the proxy's own key header). */
export const OFREP_SECURITY_SCHEMES: Record<string, JsonSchema> = {
  ofrepApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'One of the proxy\'s client keys.' },
  ofrepBearer: { type: 'http', scheme: 'bearer', description: 'One of the proxy\'s client keys, as a bearer token.' },
};

/** The OFREP paths. */
export function ofrepPaths(): Record<string, unknown> {
  const security = [{ ofrepApiKey: [] }, { ofrepBearer: [] }, { clientKey: [] }];
  const requestBody = { required: false, content: json('OfrepRequest') };
  const auth = {
    '401': { description: 'No key was sent.', content: json('OfrepAuthError') },
    '403': { description: 'The key is not a client key of this proxy.', content: json('OfrepAuthError') },
  };
  return {
    '/ofrep/v1/evaluate/flags/{key}': {
      post: {
        tags: ['OpenFeature'],
        operationId: 'postOfrepFlag',
        summary: 'Evaluate one flag for a context (OFREP, for server providers)',
        security,
        parameters: [{ name: 'key', in: 'path', required: true, schema: { type: 'string' }, description: 'The flag name.' }],
        requestBody,
        responses: {
          '200': { description: 'The evaluation.', content: json('OfrepEvaluation') },
          '400': { description: 'A body that is not JSON (`PARSE_ERROR`), a context that is not an object (`INVALID_CONTEXT`), or a payload not of the flag\'s type (`PARSE_ERROR`).', content: json('OfrepKeyedError') },
          ...auth,
          '404': { description: '`FLAG_NOT_FOUND`: the proxy has no such flag.', content: json('OfrepKeyedError') },
          '503': { description: '`GENERAL`: the proxy has not loaded a flag set yet.', content: json('OfrepKeyedError') },
        },
      },
    },
    '/ofrep/v1/evaluate/flags': {
      post: {
        tags: ['OpenFeature'],
        operationId: 'postOfrepFlags',
        summary: 'Evaluate every flag for a context (OFREP, for browser providers)',
        description:
          'Answers carry an ETag; a request whose `If-None-Match` matches is answered 304 before anything is evaluated. ' +
          'After an event-stream notification, providers add `flagConfigEtag` and `flagConfigLastModified`; ' +
          'a proxy that has not seen that flag set yet waits for it (up to two seconds).',
        security,
        parameters: [
          { name: 'If-None-Match', in: 'header', required: false, schema: { type: 'string' } },
          { name: 'flagConfigEtag', in: 'query', required: false, schema: { type: 'string' } },
          { name: 'flagConfigLastModified', in: 'query', required: false, schema: { type: 'integer' } },
        ],
        requestBody,
        responses: {
          '200': { description: 'Every flag.', headers: { ETag: { schema: { type: 'string' } } }, content: json('OfrepBulkResponse') },
          '304': { description: 'Unchanged since the ETag in `If-None-Match`.' },
          '400': { description: '`PARSE_ERROR` or `INVALID_CONTEXT`.', content: json('OfrepError') },
          ...auth,
          '503': { description: '`GENERAL`: the proxy has not loaded a flag set yet.', content: json('OfrepError') },
        },
      },
    },
    '/ofrep/v1/sse': {
      get: {
        tags: ['OpenFeature'],
        operationId: 'getOfrepEventStream',
        summary: 'Change notifications (server-sent events)',
        description:
          'The URL comes from a bulk answer\'s `eventStreams`; its token stands for the key (browsers cannot send headers here). ' +
          'Each flag-set change sends `event: message` with `data: {"type":"refetchEvaluation","etag":…,"lastModified":…}` ' +
          'and the flag set as the event id; a client that reconnects behind the current flag set (`Last-Event-ID` or `rev`) ' +
          'is told at once. Comments keep idle connections open.',
        security: [],
        parameters: [
          { name: 't', in: 'query', required: true, schema: { type: 'string' }, description: 'The signed token.' },
          { name: 'rev', in: 'query', required: false, schema: { type: 'string' }, description: 'The flag set the client last fetched.' },
          { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' } },
        ],
        responses: {
          '200': { description: 'The stream.', content: { 'text/event-stream': { schema: { type: 'string' } } } },
          '401': { description: 'The token is missing, invalid or expired: fetch the flags again for a new URL.', content: json('OfrepAuthError') },
          '503': { description: 'The proxy is not ready, or holds `maxEventStreams` streams already.' },
        },
      },
    },
  };
}
