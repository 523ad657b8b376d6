/**
 * Server-sent event streams, for every surface that pushes (Unleash streaming to server SDKs,
 * OFREP change notifications to browsers). One hub per surface per proxy; all hubs of a proxy
 * share one bound on open streams. Streams are bounded (refused with 503 past the bound), kept
 * alive by heartbeat comments on one timer per hub, dropped when a client stops reading, and all
 * ended by the proxy's `close()`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ProxyResponse } from './http.js';
import type { ProxyMetrics } from '../metrics.js';

/** One event. `data` may hold newlines (each line becomes a `data:` line). */
/** The `Last-Event-ID` a reconnecting client sent, as its stream reads it: `undefined` when none or empty. */
export function lastEventIdOf(req: IncomingMessage): string | undefined {
  const last = req.headers['last-event-id'];
  return typeof last === 'string' && last !== '' ? last : undefined;
}

export interface StreamEvent {
  event?: string;
  data: string;
  id?: string;
}

/** One open stream. */
export interface EventStream {
  /** The `Last-Event-ID` the client sent when it (re)connected, if any. */
  readonly lastEventId: string | undefined;
  readonly req: IncomingMessage;
  /** Sends one event; `false` once the stream is closed (or was dropped for not reading). */
  send(event: StreamEvent): boolean;
  close(): void;
}

/** The shared bound of one proxy's streams. */
export interface StreamBudget {
  readonly max: number;
  open: number;
}

export interface EventStreamHubOptions {
  /** The surface, for the metrics (`flag_proxy_event_streams{surface}`). */
  surface: string;
  budget: StreamBudget;
  heartbeatMs: number;
  /** Told when a stream opens or closes, and when one is refused. */
  onCount?: (surface: string, change: 'opened' | 'closed' | 'refused') => void;
  /** Most bytes queued for a client that does not read before it is dropped. @default 1 MiB */
  maxQueuedBytes?: number;
}

/** The streams of one surface. */
export interface EventStreamHub {
  /**
   * The response that opens a stream for this request: `onOpen` is called with it once the
   * headers are written (send the first events there). 503 when the bound is reached.
   */
  open(req: IncomingMessage, onOpen: (stream: EventStream) => void, headers?: Record<string, string>): ProxyResponse;
  /** Sends to every open stream; `event` may depend on the stream. Returns how many were sent to. */
  broadcast(event: StreamEvent | ((stream: EventStream) => StreamEvent | undefined)): number;
  /**
   * Sends `event` to every open stream, at most `perSecond` a second (all at once when 0): the
   * first share at once, the rest a share about every {@link PACE_TICK_MS} (one stream each,
   * further apart, below 100 a second), in the order the streams opened. A notice that makes every
   * client fetch again thus arrives as a steady flow, not as one burst from every client at the
   * same moment. A newer event replaces the one under way, and goes first to the streams that one
   * had not reached yet. Returns how many streams it is for (those still open at their turn are
   * told).
   */
  pace(event: StreamEvent, perSecond: number): number;
  /** Open streams the paced event under way has not reached yet (0 when none is under way). */
  pending(): number;
  /** Open streams. */
  size(): number;
  /** Ends every stream and stops the heartbeat; later opens are refused. */
  close(): void;
}

/** The wire form of one event. */
export function formatEvent(event: StreamEvent): string {
  let text = '';
  if (event.id !== undefined) text += `id: ${event.id.replace(/[\r\n]/g, '')}\n`;
  if (event.event !== undefined) text += `event: ${event.event.replace(/[\r\n]/g, '')}\n`;
  for (const line of event.data.split(/\r\n|\r|\n/)) text += `data: ${line}\n`;
  return `${text}\n`;
}

const HEARTBEAT = ': heartbeat\n\n';

/**
 * Milliseconds between the shares of a paced event (see {@link EventStreamHub.pace}), or more for a
 * rate under one stream per tick: small shares, so the refetches they set off come as a flow.
 */
export const PACE_TICK_MS = 10;

/**
 * Creates the event-stream hub of one surface. (Over ~80 lines: one closure over the open streams
 * and the heartbeat timer that every method shares; each method is a few lines.)
 */
export function createEventStreamHub(options: EventStreamHubOptions): EventStreamHub {
  const { surface, budget, heartbeatMs } = options;
  const maxQueued = options.maxQueuedBytes ?? 1024 * 1024;
  const streams = new Set<OpenStream>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  interface OpenStream extends EventStream {
    res: ServerResponse;
    ended: boolean;
  }

  const drop = (stream: OpenStream): void => {
    if (stream.ended) return;
    stream.ended = true;
    streams.delete(stream);
    budget.open -= 1;
    options.onCount?.(surface, 'closed');
    if (streams.size === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
    if (!stream.res.writableEnded) stream.res.end();
  };

  const write = (stream: OpenStream, text: string): boolean => {
    if (stream.ended) return false;
    // A client that stopped reading is dropped rather than buffered without bound.
    if (stream.res.writableLength > maxQueued) {
      drop(stream);
      stream.res.destroy();
      return false;
    }
    stream.res.write(text);
    return true;
  };

  const beat = (): void => {
    for (const stream of [...streams]) write(stream, HEARTBEAT);
  };

  /** The paced event under way: its wire form, the streams to tell in order, and how far it has got. */
  let paced: { text: string; queue: OpenStream[]; next: number; share: number; timer: NodeJS.Timeout | undefined } | undefined;
  const stopPacing = (): void => {
    if (paced?.timer !== undefined) clearInterval(paced.timer);
    paced = undefined;
  };
  const tellShare = (): void => {
    if (paced === undefined) return;
    const { queue, text, share } = paced;
    let told = 0;
    while (paced.next < queue.length && told < share) {
      if (write(queue[paced.next] as OpenStream, text)) told += 1;
      paced.next += 1;
    }
    if (paced.next >= queue.length) stopPacing();
  };

  return {
    open(req, onOpen, headers = {}) {
      if (closed || budget.open >= budget.max) {
        options.onCount?.(surface, 'refused');
        return {
          status: 503,
          headers: { 'Content-Type': 'text/plain; charset=utf-8', 'Retry-After': '5' },
          etag: false,
          body: closed ? 'This proxy is shutting down; try again later.' : 'Too many open event streams; try again later.',
        };
      }
      // Counted now, so concurrent opens cannot pass the bound before their headers are written.
      budget.open += 1;
      let taken = false;
      const release = (): void => {
        if (!taken) budget.open -= 1;
      };
      return {
        status: 200,
        headers: {
          'Content-Type': 'text/event-stream; charset=utf-8',
          'Cache-Control': 'no-cache, no-transform',
          'X-Accel-Buffering': 'no',
          ...headers,
        },
        etag: false,
        release,
        stream(res) {
          taken = true;
          const stream: OpenStream = {
            res,
            req,
            ended: false,
            lastEventId: lastEventIdOf(req),
            send: (event) => write(stream, formatEvent(event)),
            close: () => drop(stream),
          };
          if (closed) {
            budget.open -= 1;
            res.end();
            return;
          }
          streams.add(stream);
          options.onCount?.(surface, 'opened');
          res.on('close', () => drop(stream));
          res.socket?.setNoDelay(true);
          timer ??= setInterval(beat, heartbeatMs);
          timer.unref();
          onOpen(stream);
        },
      };
    },
    broadcast(event) {
      let sent = 0;
      for (const stream of [...streams]) {
        const chosen = typeof event === 'function' ? event(stream) : event;
        if (chosen !== undefined && stream.send(chosen)) sent += 1;
      }
      return sent;
    },
    pace(event, perSecond) {
      // Streams the event under way has not reached yet go first: under frequent changes every
      // stream is still told, none starved by always being at the end.
      const untold = paced === undefined ? [] : paced.queue.slice(paced.next).filter((stream) => !stream.ended);
      stopPacing();
      const waiting = new Set(untold);
      const queue = untold.concat([...streams].filter((stream) => !waiting.has(stream)));
      if (queue.length === 0) return 0;
      // A whole number of streams a share, and the tick that gives the rate with it.
      const share = perSecond > 0 ? Math.ceil((perSecond * PACE_TICK_MS) / 1000) : queue.length;
      paced = { text: formatEvent(event), queue, next: 0, share, timer: undefined };
      tellShare();
      if (paced !== undefined) {
        paced.timer = setInterval(tellShare, Math.round((share * 1000) / perSecond));
        paced.timer.unref();
      }
      return queue.length;
    },
    pending() {
      if (paced === undefined) return 0;
      let untold = 0;
      for (let i = paced.next; i < paced.queue.length; i += 1) if (!(paced.queue[i] as OpenStream).ended) untold += 1;
      return untold;
    },
    size: () => streams.size,
    close() {
      closed = true;
      stopPacing();
      for (const stream of [...streams]) drop(stream);
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
    },
  };
}

/** The event-stream hubs of one proxy, one per surface, under one shared bound. */
export interface StreamRegistry {
  /** The hub of a surface, created on first use. */
  hub(surface: string): EventStreamHub;
  /** Ends every stream of every hub; streams opened later, on any surface, are refused. */
  close(): void;
}

/** Creates the stream registry of one proxy (`maxEventStreams` over all its surfaces). */
export function createStreamRegistry(
  config: { maxEventStreams: number; eventStreamHeartbeatInterval: number },
  metrics: Pick<ProxyMetrics, 'eventStream' | 'pendingNotices'>,
): StreamRegistry {
  const hubs = new Map<string, EventStreamHub>();
  const budget: StreamBudget = { max: config.maxEventStreams, open: 0 };
  let closed = false;
  return {
    hub(surface) {
      const existing = hubs.get(surface);
      if (existing !== undefined) return existing;
      const hub = createEventStreamHub({
        surface,
        budget,
        heartbeatMs: config.eventStreamHeartbeatInterval,
        onCount: (name, change) => metrics.eventStream(name, change),
      });
      if (closed) hub.close();
      hubs.set(surface, hub);
      metrics.pendingNotices(surface, () => hub.pending());
      return hub;
    },
    close() {
      closed = true;
      for (const hub of hubs.values()) hub.close();
    },
  };
}
