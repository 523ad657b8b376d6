/** What a test flag server serves, records and fails with: the types its state and routes share. */
import type { IncomingMessage } from 'node:http';

/** What a test flag server received on one request. */
export interface ReceivedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: unknown;
  /** When it arrived (epoch milliseconds). */
  receivedAt: number;
  /** The status answered; `undefined` while held, or when the connection was dropped without an answer. */
  status?: number;
}

/** A usage report as received on `POST /api/client/metrics`. */
export interface ReceivedMetrics {
  appName: string;
  instanceId: string;
  bucket: { start: string; stop: string; toggles: Record<string, { yes: number; no: number; variants?: Record<string, number> }> };
  [key: string]: unknown;
}

/** A fault the server answers `/api/client/*` with until cleared. */
export interface TestFault {
  /** Answer this status (with a JSON error body). */
  status?: number;
  /** Extra headers on a faulty status answer, e.g. `{ 'retry-after': '2' }` with a 429 or 503. */
  headers?: Record<string, string>;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Answer 200 with this raw body (malformed JSON, a wrong shape...). */
  rawBody?: string;
  /** Which routes: features fetches, usage reports (and registrations), or both. @default 'all' */
  routes?: 'features' | 'metrics' | 'all';
  /**
   * Answer 200 as usual, but cut the body after this many bytes (the `Content-Length` header still
   * announces the whole body) and drop the connection: a truncated answer.
   */
  truncateAt?: number;
  /**
   * Hold the request without answering until the fault is changed or cleared (held requests are
   * then handled under the new fault, or normally) or the server closes: a hanging upstream.
   */
  hang?: boolean;
  /** Drop the connection without answering (the client sees a reset). */
  reset?: boolean;
  /** Send the status and headers at once, and the body only after this many milliseconds. */
  bodyDelayMs?: number;
  /**
   * Apply the fault only to every n-th matching request since it was set (2: the 2nd, 4th, ...),
   * so the upstream flaps between failing and answering. @default 1 (every request)
   */
  every?: number;
  /** Apply the fault only to the first n matching requests since it was set, then answer normally. */
  times?: number;
}
