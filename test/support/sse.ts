/**
 * A server-sent events reader over a plain node:http request, for tests that assert on the wire:
 * the status and headers, each event as parsed (comments counted apart), and the end.
 */
import http from 'node:http';

export interface SseEvent {
  event: string | undefined;
  id: string | undefined;
  data: string;
}

export interface SseConnection {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Every event received so far, in order. */
  events: SseEvent[];
  /** Comment lines (heartbeats) received so far. */
  comments(): number;
  /** The body as received, for non-stream answers. */
  text(): string;
  /** Resolves with the `index`-th event (0-based) once it has arrived. */
  event(index: number, timeoutMs?: number): Promise<SseEvent>;
  /** Resolves once the server ended the response. */
  ended: Promise<void>;
  close(): void;
}

/** Opens `url` as an event stream; resolves once the status and headers are in. */
export function openEventStream(url: string, headers: Record<string, string> = {}): Promise<SseConnection> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { accept: 'text/event-stream', ...headers }, agent: false }, (res) => {
      const events: SseEvent[] = [];
      let comments = 0;
      let raw = '';
      let buffer = '';
      let current: SseEvent = { event: undefined, id: undefined, data: '' };
      let dataLines: string[] = [];
      const waiters = new Set<() => void>();
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        raw += chunk;
        buffer += chunk;
        let newline: number;
        while ((newline = buffer.indexOf('\n')) !== -1) {
          const line = buffer.slice(0, newline).replace(/\r$/, '');
          buffer = buffer.slice(newline + 1);
          if (line === '') {
            if (dataLines.length > 0 || current.event !== undefined) events.push({ ...current, data: dataLines.join('\n') });
            current = { event: undefined, id: undefined, data: '' };
            dataLines = [];
          } else if (line.startsWith(':')) {
            comments += 1;
          } else {
            const colon = line.indexOf(':');
            const field = colon === -1 ? line : line.slice(0, colon);
            const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'event') current.event = value;
            else if (field === 'id') current.id = value;
            else if (field === 'data') dataLines.push(value);
          }
        }
        for (const wake of [...waiters]) wake();
      });
      let finished = false;
      const ended = new Promise<void>((done) =>
        res.on('close', () => {
          finished = true;
          for (const wake of [...waiters]) wake();
          done();
        }),
      );
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        comments: () => comments,
        text: () => raw,
        ended,
        close: () => req.destroy(),
        event(index, timeoutMs = 5000) {
          return new Promise((found, fail) => {
            const check = (): void => {
              const event = events[index];
              if (event !== undefined) {
                cleanup();
                found(event);
              } else if (finished) {
                cleanup();
                fail(new Error(`the stream ended after ${events.length} events, before event ${index}`));
              }
            };
            const timer = setTimeout(() => {
              cleanup();
              fail(new Error(`no event ${index} within ${timeoutMs} ms (have ${events.length})`));
            }, timeoutMs);
            const cleanup = (): void => {
              clearTimeout(timer);
              waiters.delete(check);
            };
            waiters.add(check);
            check();
          });
        },
      });
    });
    req.on('error', reject);
  });
}
