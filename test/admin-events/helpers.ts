/** Loopback servers and fixtures shared by the admin events tests. */
import http, { type IncomingHttpHeaders, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { createAdminEventsClient, type AdminEventsClient } from 'flag-proxy/admin-events';
import { createAdminEventLog, type AdminEventLog } from '../../src/testing/admin-event-log.js';

export const ADMIN_TOKEN = 'admin-token-7f3c9e1b5d';
export const CLIENT_TOKEN = 'client-token-2a8d4f6c0e';

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

export interface TestServer {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  url: string;
  port: number;
  /** Every request the server received, in order. */
  requests: SeenRequest[];
  close(): Promise<void>;
}

/** Starts `listener` on 127.0.0.1, port 0, recording each request. */
export async function startServer(listener: RequestListener): Promise<TestServer> {
  const requests: SeenRequest[] = [];
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: { ...req.headers } });
    listener(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        // Slow-answer tests leave requests hanging; cut them so close() returns at once.
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

/** A flag server double: the in-memory log, 404 for anything else. */
export async function startLogServer(
  log: AdminEventLog = createAdminEventLog({ adminTokens: [ADMIN_TOKEN], clientTokens: [CLIENT_TOKEN] }),
): Promise<TestServer & { log: AdminEventLog }> {
  const server = await startServer((req, res) => {
    if (!log.handle(req, res)) {
      res.statusCode = 404;
      res.setHeader('content-type', 'application/json');
      res.end('{"message":"not found"}');
    }
  });
  return { ...server, log };
}

/** A server that answers every request with this status, content type and body. */
export function startFixedServer(status: number, body: string, contentType = 'application/json; charset=utf-8'): Promise<TestServer> {
  return startServer((_req, res) => {
    res.statusCode = status;
    res.setHeader('content-type', contentType);
    res.end(body);
  });
}

/**
 * A URL on which nothing listens: port 2 on loopback (fetch refuses port 1 itself as a "bad port").
 * A port just released by closing a server is not one: the kernel can hand it to a server another
 * test file starts meanwhile.
 */
export async function closedPortUrl(): Promise<string> {
  return 'http://127.0.0.1:2';
}

/** Everything an error carries (message, details, cause chain, stack), as text to search. */
export function everythingIn(err: unknown): string {
  const parts = [inspect(err, { depth: Infinity, showHidden: true, breakLength: Infinity })];
  let current: unknown = err;
  for (let i = 0; i < 10 && current !== undefined && current !== null; i++) {
    if (typeof current === 'object') {
      const e = current as { message?: unknown; stack?: unknown; details?: unknown; cause?: unknown };
      parts.push(String(e.message), String(e.stack), JSON.stringify(e.details) ?? '');
      current = e.cause;
    } else {
      parts.push(String(current));
      current = undefined;
    }
  }
  return parts.join('\n');
}

/** Calls a function that must throw and returns what it threw. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw, got a return');
}

/** Awaits a promise that must reject and returns the rejection. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection, got a value');
}

/** A fetch double answering one fixed JSON body, recording the URLs and inits it was called with. */
export function fakeFetch(body: unknown, status = 200): {
  fetch: (url: string, init: RequestInit) => Promise<Response>;
  calls: { url: string; init: RequestInit }[];
} {
  const calls: { url: string; init: RequestInit }[] = [];
  return {
    calls,
    fetch: async (url, init) => {
      calls.push({ url, init });
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      return new Response(text, { status, headers: { 'content-type': 'application/json; charset=utf-8' } });
    },
  };
}

/** A client whose fetch is a double: `answer(url)` gives each response; every URL asked lands in `urls`, in order. */
export function clientAnswering(
  flagUrl: string,
  answer: (url: string) => Response,
): { client: AdminEventsClient; urls: string[] } {
  const urls: string[] = [];
  const client = createAdminEventsClient({
    flagUrl,
    adminToken: ADMIN_TOKEN,
    fetch: async (url) => {
      urls.push(url);
      return answer(url);
    },
  });
  return { client, urls };
}

/** A well-formed event record, with overrides. */
export function eventRecord(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 1,
    type: 'feature-created',
    createdBy: 'someone',
    createdAt: '2026-11-21T10:20:46.294Z',
    createdByUserId: 7,
    data: { name: 'checkout' },
    preData: null,
    tags: [],
    featureName: 'checkout',
    project: 'default',
    environment: null,
    ...overrides,
  };
}
