/**
 * The routes of a test flag server's client API over its state: token check, faults, the
 * features answer with ETag/304, registrations and usage reports.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminEventLog } from './admin-event-log.js';
import type { ClientRoute, FaultState, FlagState, ReceivedLog } from './flag-server-state.js';
import type { ReceivedMetrics, ReceivedRequest, TestFault } from './flag-server-types.js';

/** What the routes answer from. */
export interface FlagServerParts {
  tokens: string[];
  events: AdminEventLog;
  flags: FlagState;
  faults: FaultState;
  received: ReceivedLog;
}

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(text === '' ? undefined : JSON.parse(text));
      } catch {
        resolve(text);
      }
    });
  });
}

/** Writes a JSON answer. */
export function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(text);
}

/** One answer: where to, its status, body and headers, and the fault it is written under. */
interface Delivery {
  res: ServerResponse;
  received: ReceivedRequest;
  status: number;
  body: string;
  headers: Record<string, string>;
  active: TestFault | undefined;
}

/** Writes an answer, honouring the body faults (`truncateAt`, `bodyDelayMs`). */
async function deliver({ res, received, status, body, headers, active }: Delivery): Promise<void> {
  const bytes = Buffer.from(body, 'utf8');
  received.status = status;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(bytes.length), ...headers });
  if (active?.bodyDelayMs) {
    res.flushHeaders();
    await new Promise((r) => setTimeout(r, active.bodyDelayMs));
  }
  if (active?.truncateAt !== undefined && active.truncateAt < bytes.length) {
    res.write(bytes.subarray(0, active.truncateAt), () => res.destroy());
    return;
  }
  res.end(bytes);
}

function routeOf(pathname: string): ClientRoute | undefined {
  const path = pathname.replace(/\/+$/, '');
  return path === '/api/client/features' ? 'features' : path === '/api/client/metrics' ? 'metrics' : path === '/api/client/register' ? 'register' : undefined;
}

/** The request handler of a test flag server. */
export function createFlagServerHandler(parts: FlagServerParts): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const { tokens, events, faults, received: log } = parts;
  return async (req, res) => {
    if (events.handle(req, res)) return;
    const url = new URL(req.url ?? '/', 'http://localhost');
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    const received: ReceivedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body,
      receivedAt: Date.now(),
    };
    log.requests.push(received);
    const route = routeOf(url.pathname);
    const reply = (status: number, value: unknown, headers?: Record<string, string>): void => {
      received.status = status;
      send(res, status, value, headers);
    };
    if (!route) return reply(404, { message: 'Not found' });
    if (!tokens.includes(String(req.headers.authorization ?? ''))) return reply(401, { message: 'You must log in to use Unleash.' });
    if (route === 'features') res.on('close', log.fetchStarted());
    let active = faults.faultFor(route, true);
    while (active?.hang) {
      if (!(await faults.hold())) return;
      active = faults.faultFor(route, false);
    }
    if (active?.reset) {
      req.socket.destroy();
      return;
    }
    if (active?.delayMs) await new Promise((r) => setTimeout(r, active.delayMs));
    if (active?.status) return reply(active.status, { message: `fault ${active.status}` }, active.headers);
    const answer = (status: number, text: string, headers: Record<string, string> = {}): Promise<void> =>
      deliver({ res, received, status, body: text, headers, active });
    if (active?.rawBody !== undefined) return answer(200, active.rawBody);
    return serveRoute(parts, { req, res, route, url, body, received, answer }) ?? reply(405, { message: 'Method not allowed' });
  };
}

/** Answers a request that passed the token check and the faults; `undefined` for a method the route has not. */
function serveRoute(
  { flags, received: log }: FlagServerParts,
  request: {
    req: IncomingMessage;
    res: ServerResponse;
    route: ClientRoute;
    url: URL;
    body: unknown;
    received: ReceivedRequest;
    answer: (status: number, text: string, headers?: Record<string, string>) => Promise<void>;
  },
): Promise<void> | undefined {
  const { req, res, route, url, body, received, answer } = request;
  if (route === 'features' && req.method === 'GET') {
    const features = flags.answer(url.searchParams);
    if (req.headers['if-none-match'] === features.etag) {
      received.status = 304;
      res.writeHead(304, { etag: features.etag });
      res.end();
      return Promise.resolve();
    }
    return answer(200, features.body, { etag: features.etag });
  }
  if (route === 'register' && req.method === 'POST') {
    log.registrations.push(body as Record<string, unknown>);
    return answer(202, '');
  }
  if (route === 'metrics' && req.method === 'POST') {
    // A report whose answer is cut or delayed has still been received (and is counted).
    log.addMetrics(body as ReceivedMetrics);
    return answer(202, '');
  }
  return undefined;
}
