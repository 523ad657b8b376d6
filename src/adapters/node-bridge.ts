/**
 * Runs a Connect-style handler on a web `Request` without a listening server. A server that never
 * listens is handed an in-memory connection (node documents emitting `'connection'` with any
 * Duplex), and node's own HTTP client writes the request into it and parses the answer, so the
 * handler sees a real IncomingMessage and ServerResponse, and the Response carries its status,
 * headers (less hop-by-hop ones) and body bytes. A server-sent event stream is answered as soon as
 * its headers arrive, with a body that flows until the handler ends it or the consumer cancels.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { Duplex, Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { PassedOn } from './shared.js';

/** Hop-by-hop headers: they describe one connection, never the message. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect', 'proxy-connection', 'te', 'trailer']);

/**
 * Two connected in-memory sockets: what one writes, the other reads. A write is acknowledged only
 * once the reader has room, as on a real connection, so a writer sees its peer stop reading.
 */
function socketPair(): [Duplex, Duplex] {
  const sides: Duplex[] = [];
  const ended = [false, false];
  // The acknowledgement each side's last write waits for, until its peer reads again.
  const held: Array<(() => void) | undefined> = [undefined, undefined];
  const release = (i: number): void => {
    const acknowledge = held[i];
    held[i] = undefined;
    acknowledge?.();
  };
  const endPeer = (i: number): void => {
    release(i);
    if (ended[1 - i]) return;
    ended[1 - i] = true;
    sides[1 - i]!.push(null);
  };
  const side = (i: number): Duplex =>
    new Duplex({
      read() {
        release(1 - i);
      },
      write(chunk: Buffer, _encoding, callback) {
        // After the peer is gone (e.g. a 413 closed it mid-upload) the rest is dropped, as a closed socket would.
        if (!ended[1 - i] && !sides[1 - i]!.push(chunk)) {
          held[i] = callback;
          return;
        }
        callback();
      },
      final(callback) {
        endPeer(i);
        callback();
      },
      destroy(error, callback) {
        endPeer(i);
        // The peer will never read what this side still held for it.
        release(1 - i);
        callback(error);
      },
    });
  sides.push(side(0), side(1));
  // What a handler may tune on a real socket (an event stream turns off Nagle) means nothing here.
  for (const socket of sides) Object.assign(socket, { setNoDelay: () => socket, setKeepAlive: () => socket });
  return [sides[0]!, sides[1]!];
}

const isEventStream = (contentType: string | undefined): boolean => contentType?.toLowerCase().startsWith('text/event-stream') === true;

/**
 * The body of a streamed answer: chunks as they arrive, read no faster than the consumer pulls.
 * It ends when the handler ends the response; `close` (the connection's teardown) runs once, when
 * it ends, fails, or the consumer cancels.
 */
function streamBody(incoming: IncomingMessage, close: () => void): ReadableStream<Uint8Array> {
  let done = false;
  const finish = (): void => {
    if (done) return;
    done = true;
    close();
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      incoming.on('data', (chunk: Buffer) => {
        if (done) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 1) <= 0) incoming.pause();
      });
      incoming.on('end', () => {
        if (done) return;
        controller.close();
        finish();
      });
      incoming.on('error', (error) => {
        if (done) return;
        controller.error(error);
        finish();
      });
      // A connection torn down before its end (the proxy closed) ends the body too.
      incoming.on('close', () => {
        if (done) return;
        controller.close();
        finish();
      });
    },
    pull() {
      incoming.resume();
    },
    cancel() {
      finish();
    },
  });
}

/** Per exchange: how the handler gets the web request, and whether it passed it on. */
interface Exchange {
  onRequest(req: IncomingMessage): void;
  passed?: PassedOn;
}

/** What {@link createNodeBridge} resolves: the handler's answer, or that it passed the request on. */
export type BridgeOutcome = { response: Response } | { passed: PassedOn };

/** Builds a bridge for one handler; each call runs one request through a fresh in-memory connection. */
export function createNodeBridge(
  handler: (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void,
): (request: Request, path: string, remoteAddress: string | undefined, onRequest: (req: IncomingMessage) => void) => Promise<BridgeOutcome> {
  const exchanges = new WeakMap<object, Exchange>();
  const server = http.createServer((req, res) => {
    const exchange = exchanges.get(req.socket)!;
    exchange.onRequest(req);
    const passOn = (error?: unknown): void => {
      exchange.passed = error ? { error } : {};
      // Close this inner exchange; the caller answers from `passed`.
      if (res.headersSent) res.destroy();
      else res.writeHead(404, { 'content-length': '0' }).end();
    };
    try {
      handler(req, res, passOn);
    } catch (error) {
      passOn(error);
    }
  });

  return (request, path, remoteAddress, onRequest) =>
    new Promise((resolve, reject) => {
      const [client, serverSide] = socketPair();
      Object.defineProperty(serverSide, 'remoteAddress', { value: remoteAddress });
      const exchange: Exchange = { onRequest };
      exchanges.set(serverSide, exchange);
      server.emit('connection', serverSide);

      const headers: Record<string, string> = { host: new URL(request.url).host };
      for (const [name, value] of request.headers) if (!HOP_BY_HOP.has(name)) headers[name] = value;
      const settle = (error: unknown): void => {
        client.destroy();
        if (exchange.passed) resolve({ passed: exchange.passed });
        else reject(error);
      };
      const outgoing = http.request({ method: request.method, path, headers, createConnection: () => client as never }, (incoming) => {
        const responseHeaders = (): Headers => {
          const out = new Headers();
          for (let i = 0; i < incoming.rawHeaders.length; i += 2) {
            const name = incoming.rawHeaders[i]!;
            if (!HOP_BY_HOP.has(name.toLowerCase())) out.append(name, incoming.rawHeaders[i + 1]!);
          }
          return out;
        };
        const status = incoming.statusCode ?? 500;
        const bodiless = request.method === 'HEAD' || status === 204 || status === 304;
        if (!bodiless && isEventStream(incoming.headers['content-type'])) {
          // An event stream never ends on its own: answer at once with a body that flows as it is written.
          const close = (): void => {
            client.destroy();
            serverSide.destroy();
          };
          resolve({ response: new Response(streamBody(incoming, close), { status, headers: responseHeaders() }) });
          return;
        }
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('error', settle);
        incoming.on('end', () => {
          client.destroy();
          if (exchange.passed) return resolve({ passed: exchange.passed });
          resolve({ response: new Response(bodiless ? null : Buffer.concat(chunks), { status, headers: responseHeaders() }) });
        });
      });
      outgoing.on('error', settle);
      if (request.body === null || request.method === 'GET' || request.method === 'HEAD') outgoing.end();
      else Readable.fromWeb(request.body as NodeReadableStream).on('error', (error) => outgoing.destroy(error)).pipe(outgoing);
    });
}
