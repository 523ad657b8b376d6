/**
 * Reading a JSON request body: content type (415), size (413), syntax (400). A body the host
 * already parsed (e.g. `express.json()` ran first) is reused.
 */
import type { IncomingMessage } from 'node:http';
import { FlagProxyError } from '../errors.js';

const PARSE_PREFIX =
  'We were unable to parse the data you provided. Please check it for syntax errors. The message we got was: ';

function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';
}

/** 415 unless the content type is JSON in UTF-8 (a missing content type counts as JSON). */
function checkContentType(req: IncomingMessage): void {
  const header = req.headers['content-type'];
  // What SDKs send, taken without splitting it.
  if (header === undefined || header === 'application/json' || header.trim() === '') return;
  const [type, ...params] = header.split(';').map((s) => s.trim().toLowerCase());
  if (type !== 'application/json') {
    throw new FlagProxyError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported content type; send application/json', { status: 415 });
  }
  const charset = params.find((p) => p.startsWith('charset='))?.slice('charset='.length).replace(/"/g, '');
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new FlagProxyError('UNSUPPORTED_MEDIA_TYPE', `Unsupported charset "${charset.toUpperCase()}"; send UTF-8`, {
      status: 415,
    });
  }
}

function tooLarge(limit: number): FlagProxyError {
  return new FlagProxyError('PAYLOAD_TOO_LARGE', `Request body is larger than the limit of ${limit} bytes`, { status: 413 });
}

function readRaw(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(tooLarge(limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.resume();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(new FlagProxyError('BAD_REQUEST', 'The request body could not be read', { status: 400, cause: error }));
    };
    const onAborted = (): void => onError(new Error('request aborted'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

function parseJson(text: string): unknown {
  const first = text.trimStart()[0];
  // Strict like body-parser: only objects and arrays at the top level.
  if (first !== '{' && first !== '[') {
    const shown = text.length > 20 ? `${text.slice(0, 20)}...` : text;
    throw new FlagProxyError('INVALID_JSON', `${PARSE_PREFIX}"Unexpected token '${first ?? ''}', "${shown}" is not valid JSON"`, {
      status: 400,
    });
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new FlagProxyError('INVALID_JSON', `${PARSE_PREFIX}"${(error as Error).message}"`, { status: 400 });
  }
}

/**
 * 415 for a body that is not JSON, on a route that takes none (a GET or HEAD with a body), as
 * `@unleash/proxy` checks every request's body type before its routes. The body is not read.
 * @throws FlagProxyError 415.
 */
export function requireJsonBodyType(req: IncomingMessage): void {
  // Without a content type there is nothing to refuse: one header looked up, not two, on every GET.
  if (req.headers['content-type'] !== undefined && hasBody(req)) checkContentType(req);
}

/**
 * The parsed JSON body, or `undefined` when the request has none.
 * @throws FlagProxyError 415, 413 or 400.
 */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const preParsed = (req as IncomingMessage & { body?: unknown }).body;
  if (preParsed !== undefined && req.readableEnded) {
    if (typeof preParsed === 'string') return preParsed.trim() === '' ? undefined : parseJson(preParsed);
    if (Buffer.isBuffer(preParsed)) return preParsed.length === 0 ? undefined : parseJson(preParsed.toString('utf8'));
    // A host body parser that found no body leaves `{}`; both mean "no body" to us.
    return preParsed;
  }
  if (!hasBody(req)) return undefined;
  checkContentType(req);
  const raw = await readRaw(req, limit);
  if (raw.length === 0) return undefined;
  return parseJson(raw.toString('utf8'));
}
