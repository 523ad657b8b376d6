/**
 * The OFREP wire pieces every OFREP route shares: the key a request presents, the request body
 * (as OFREP's own errors), and the error answers.
 */
import type { IncomingMessage } from 'node:http';
import type { FlagProxyConfig } from '../../config/resolve.js';
import { readJsonBody } from '../../core/body.js';
import { APPLICATION_JSON, type ProxyResponse } from '../../core/http.js';
import type { EvaluationService } from '../../core/service.js';
import { isFlagProxyError } from '../../errors.js';
import { ofrepKeyOf } from '../../http-headers.js';
import { InvalidContext, unleashContextOf } from './mapping.js';

/** OFREP's error codes for a request (the evaluation's own are in mapping.ts). */
export type OfrepErrorCode = 'PARSE_ERROR' | 'INVALID_CONTEXT' | 'FLAG_NOT_FOUND' | 'GENERAL';

/** An OFREP answer that ends a request early; thrown inside the routes, answered by {@link ofrepRoute}. */
export class OfrepAnswer extends Error {
  constructor(readonly response: ProxyResponse) {
    super('OFREP answer');
  }
}

/** A JSON answer without an ETag (errors must never be revalidated into a 304). */
export function ofrepJson(status: number, value: unknown, headers: Record<string, string> = {}): ProxyResponse {
  return { status, headers: { 'Content-Type': APPLICATION_JSON, ...headers }, body: JSON.stringify(value), etag: false };
}

/** An OFREP error: `{ key?, errorCode, errorDetails }`. */
export function ofrepError(status: number, errorCode: OfrepErrorCode, errorDetails: string, key?: string): OfrepAnswer {
  return new OfrepAnswer(ofrepJson(status, key === undefined ? { errorCode, errorDetails } : { key, errorCode, errorDetails }));
}

/** 503 before the first flag set, 401 without a key, 403 with a key the proxy does not know. Returns the key. */
export function admit(service: EvaluationService, req: IncomingMessage, key?: string): string {
  if (!service.isReady() || service.isClosed()) {
    const body = { ...(key === undefined ? {} : { key }), errorCode: 'GENERAL', errorDetails: 'The flag proxy is not ready yet' };
    throw new OfrepAnswer(ofrepJson(503, body, { 'Retry-After': '1' }));
  }
  const presented = ofrepKeyOf(req, service.config.clientKeysHeaderName);
  if (presented === undefined || presented === '') {
    throw new OfrepAnswer(ofrepJson(401, { errorDetails: 'Send a client key in X-API-Key or Authorization: Bearer' }));
  }
  if (!service.keys.isClientKey(presented)) throw new OfrepAnswer(ofrepJson(403, { errorDetails: 'This key is not a client key of this proxy' }));
  return presented;
}

/** The raw (Unleash) context of an OFREP request body `{ context }`: 400 `PARSE_ERROR` or `INVALID_CONTEXT` when it is not one. */
export async function requestedContext(service: EvaluationService, req: IncomingMessage, key?: string): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await readJsonBody(req, service.config.maxBodyBytes);
  } catch (error) {
    if (isFlagProxyError(error) && error.code === 'INVALID_JSON') throw ofrepError(400, 'PARSE_ERROR', 'The request body is not valid JSON', key);
    throw error;
  }
  if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body))) {
    throw ofrepError(400, 'PARSE_ERROR', 'The request body must be a JSON object: {"context": {...}}', key);
  }
  try {
    return unleashContextOf((body as { context?: unknown } | undefined)?.context, service.config.ofrep.targetingKey);
  } catch (error) {
    if (error instanceof InvalidContext) throw ofrepError(400, 'INVALID_CONTEXT', error.message, key);
    throw error;
  }
}

/** Runs an OFREP route body: an {@link OfrepAnswer} it throws is its answer; anything else goes on to the handler. */
export async function answering(run: () => Promise<ProxyResponse>): Promise<ProxyResponse> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof OfrepAnswer) return error.response;
    throw error;
  }
}
