/**
 * `GET /ofrep/v1/sse?t=<token>&rev=<flag config>`: the event stream a bulk answer advertises
 * (ADR-0008). Notification only: on every flag-set change each open stream gets one
 * `refetchEvaluation`, and the browser fetches its flags again; so it does just after each instant
 * of the flag set's date constraints (a scheduled launch), since browser providers do not poll
 * while they have a stream (ADR-0010). The notices are paced (`ofrep.refetchNoticesPerSecond`),
 * so that the refetches come as a steady flow, not as one burst from every open page. A client
 * that (re)connects behind the current flag config (by `Last-Event-ID` or `rev`) is told at once,
 * since browser providers do not refetch on their own after `EventSource` reconnects.
 */
import type { ProxyResponse } from '../../core/http.js';
import type { RouteRequest } from '../../core/route.js';
import type { EvaluationService } from '../../core/service.js';
import type { StreamEvent } from '../../core/event-streams.js';
import type { OfrepState } from './evaluate.js';
import type { FlagConfig } from './flag-config.js';
import { ofrepJson } from './wire.js';

/** The surface name of the streams (metrics label `surface`). */
export const OFREP_STREAMS = 'ofrep';

function refetch(config: FlagConfig): StreamEvent {
  return {
    id: config.id,
    event: 'message',
    data: JSON.stringify({ type: 'refetchEvaluation', etag: config.id, lastModified: config.lastModified }),
  };
}

/** The stream route of one proxy; subscribes to flag-set changes on its first stream. */
export function streamRoute(state: OfrepState) {
  const subscribed = new WeakSet<EvaluationService>();
  return function ofrepStream(service: EvaluationService, { req, search }: RouteRequest): ProxyResponse {
    const query = new URLSearchParams(search);
    const token = query.get('t') ?? '';
    if (state.tokens.verify(token, Date.now()) === undefined) {
      // EventSource gives up on a 401; the provider then fetches the bulk answer again, with a new URL.
      return ofrepJson(401, { errorDetails: 'The stream token is missing, invalid or expired: fetch the flags again for a new one' });
    }
    if (!service.isReady() || service.isClosed()) {
      return ofrepJson(503, { errorCode: 'GENERAL', errorDetails: 'The flag proxy is not ready yet' }, { 'Retry-After': '1' });
    }
    const hub = service.eventStreams(OFREP_STREAMS);
    if (!subscribed.has(service)) {
      subscribed.add(service);
      const tell = (): void => {
        hub.pace(refetch(state.flagConfig(service)), service.config.ofrep.refetchNoticesPerSecond);
      };
      service.onAnswersChange(tell);
    }
    return hub.open(req, (stream) => {
      const current = state.flagConfig(service);
      const seen = stream.lastEventId ?? query.get('rev') ?? undefined;
      if (seen !== undefined && seen !== current.id) stream.send(refetch(current));
    });
  };
}
