/**
 * Push and delta polling for server SDKs, as `unleash-client` 6 speaks them to Unleash and Edge:
 * `GET /api/client/streaming` (server-sent events: `unleash-connected` with a hydration, then
 * `unleash-updated` with the changes of each new flag set) and `GET /api/client/delta` (the same
 * changes, polled with `If-None-Match`). Server-side tokens only. See docs/streaming.md.
 */
import { lastEventIdOf, type EventStream } from '../../core/event-streams.js';
import { APPLICATION_JSON, type ProxyResponse } from '../../core/http.js';
import { presentedKey, unauthorized } from '../../core/parts.js';
import type { RouteRequest, Surface } from '../../core/route.js';
import type { EvaluationService } from '../../core/service.js';
import type { Snapshot } from '../../evaluation/engine.js';
import { deltaBody, deltaEvents, parseFilter, type FlagFilter, type FlagSetChanges } from './deltas.js';
import { createRevisionLog, type RevisionLog } from './revision-log.js';

/** The label of this surface's streams in `flag_proxy_event_streams{surface}`. */
export const CLIENT_STREAMING_SURFACE = 'client-streaming';

/** One proxy's streaming state, built on the first request (the service is ready by then). */
interface Streaming {
  log: RevisionLog;
  /** Streams that have had their first event, with the filter each asked for. */
  filters: WeakMap<EventStream, FlagFilter>;
  service: EvaluationService;
}

function authorize(service: EvaluationService, request: RouteRequest): void {
  service.requireReady();
  if (!service.keys.isServerSideToken(presentedKey(request.req, service.config))) throw unauthorized();
}

/** The body for a client that holds the revision `id` names: the changes since, or a hydration. */
function catchUp(log: RevisionLog, id: string | undefined, filter: FlagFilter, snapshot: Snapshot): string {
  const changes = log.changesSince(id);
  return deltaBody(changes === undefined ? [log.hydration(filter)] : deltaEvents(changes, filter, snapshot.revision));
}

function start(service: EvaluationService): Streaming {
  const filters = new WeakMap<EventStream, FlagFilter>();
  const hub = service.eventStreams(CLIENT_STREAMING_SURFACE);
  const broadcast = (changes: FlagSetChanges, snapshot: Snapshot): void => {
    const id = log.idOf(snapshot.revision);
    // One serialization per distinct filter; `null` where a filter sees no change.
    const bodies = new Map<string, string | null>();
    hub.broadcast((stream) => {
      const filter = filters.get(stream);
      if (filter === undefined) return undefined;
      let data = bodies.get(filter.key);
      if (data === undefined) {
        const events = deltaEvents(changes, filter, snapshot.revision);
        data = events.length > 0 ? deltaBody(events) : null;
        bodies.set(filter.key, data);
      }
      return data === null ? undefined : { event: 'unleash-updated', id, data };
    });
  };
  const log = createRevisionLog(service, broadcast);
  return { log, filters, service };
}

async function streamingResponse(state: Streaming, request: RouteRequest): Promise<ProxyResponse> {
  const { log, filters, service } = state;
  const filter = parseFilter(request.search);
  // Take any pending change now, so it reaches the open streams before this one connects.
  log.current();
  // A client the log cannot resume gets a hydration: made in slices before its stream opens.
  if (log.changesSince(lastEventIdOf(request.req)) === undefined) await log.prepareHydration(filter);
  return service.eventStreams(CLIENT_STREAMING_SURFACE).open(request.req, (stream) => {
    const snapshot = log.current();
    stream.send({ event: 'unleash-connected', id: log.idOf(snapshot.revision), data: catchUp(log, stream.lastEventId, filter, snapshot) });
    // Only now does it hear updates: none may come before its first event.
    filters.set(stream, filter);
  });
}

/** `If-None-Match` as the id it quotes: weak or strong, quoted or bare (as Edge accepts it). */
function sentId(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  return header.trim().replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
}

async function deltaResponse(state: Streaming, request: RouteRequest): Promise<ProxyResponse> {
  const { log } = state;
  const sent = sentId(request.req.headers['if-none-match']);
  const filter = parseFilter(request.search);
  if (log.changesSince(sent) === undefined) await log.prepareHydration(filter);
  const snapshot = log.current();
  const id = log.idOf(snapshot.revision);
  const etag = `"${id}"`;
  // An SDK that holds this revision is answered before anything is serialized.
  if (sent === id) return { status: 304, headers: {}, etag };
  const body = catchUp(log, sent, filter, snapshot);
  return { status: 200, headers: { 'Content-Type': APPLICATION_JSON }, body, etag };
}

/**
 * The streaming and delta routes of one proxy. State (the revision log, the subscription to
 * flag-set changes) is made on the first authorized request and lives until the proxy closes.
 */
export function createClientStreamingSurface(): Surface {
  let state: Streaming | undefined;
  const stateOf = (service: EvaluationService): Streaming => (state ??= start(service));
  return {
    name: CLIENT_STREAMING_SURFACE,
    prefixes: [],
    routes: [
      {
        path: '/api/client/streaming',
        methods: ['GET'],
        handle(service, request) {
          authorize(service, request);
          return streamingResponse(stateOf(service), request);
        },
      },
      {
        path: '/api/client/delta',
        methods: ['GET', 'HEAD'],
        handle(service, request) {
          authorize(service, request);
          return deltaResponse(stateOf(service), request);
        },
      },
    ],
  };
}
