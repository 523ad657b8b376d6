/**
 * The normalized response every route returns, and the one writer that puts it on the wire with
 * the predecessor's headers: weak ETag on every body, 304 for fresh GET/HEAD, `Vary:
 * Accept-Encoding` on compressible bodies, gzip from 1 kB.
 */
import { channel } from 'node:diagnostics_channel';
import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http';
import { Socket } from 'node:net';
import { gzipSync, deflateSync } from 'node:zlib';
import { digestText } from '../digests.js';
import { acceptsEncoding, addVary } from '../http-headers.js';

/** Header fields as `writeHead` takes them: `[name, value, name, value, …]`. */
export type HeaderList = readonly string[];

const NO_HEADERS: HeaderList = Object.freeze([]);

/** What a route answers; written by {@link writeResponse}. */
export interface ProxyResponse {
  status: number;
  /** Header names as they go on the wire. */
  headers: OutgoingHttpHeaders;
  /** Absent for empty answers. */
  body?: string | Buffer;
  /** Precomputed ETag of `body`, or `false` for none (and so no 304). */
  etag?: string | false;
  /** Gives the gzipped `body`, so a cached answer is compressed once. */
  compress?: () => Buffer;
  /**
   * A stream instead of a body (server-sent events): called with the response once the status
   * and headers are written; it owns the response from then on.
   */
  stream?: (res: ServerResponse) => void;
  /** Called instead of `stream` when the response is not written after all (the client left). */
  release?: () => void;
  /**
   * Gives `body`'s memory back for another answer (see answer-buffers.ts): called once nothing
   * reads the body any more, which only {@link writesToKernel} responses can tell. Never called
   * otherwise, and then the body is collected as any other.
   */
  recycle?: () => void;
}

export const TEXT_HTML = 'text/html; charset=utf-8';
export const TEXT_PLAIN = 'text/plain; charset=utf-8';
export const APPLICATION_JSON = 'application/json; charset=utf-8';
export const CACHE_CONTROL = 'public, max-age=2';

const COMPRESS_THRESHOLD = 1024;

/** String bodies longer than this (UTF-16 units) are handed to node as their bytes ({@link endBody}). */
const BYTES_FROM = 2048;

/**
 * What `res.end` is given for `body`: a long string as its UTF-8 bytes. Given a string, node joins
 * it to the header block into one new string on V8's heap, which it then encodes as it writes: for
 * an 11 kB answer, 11 kB more garbage per request, and the answer alive across whichever young
 * collection came meanwhile. Its bytes leave the heap at once. Measured at 200 flags when `/proxy`
 * answers were still strings (alternated runs of the handler in node:http, 4 s each): heap
 * allocated per new context 48 → 37 kB, CPU per request the same or 2% less (the write is one
 * `writev` of the header block and the bytes). Those answers are built as bytes now; this serves
 * the other long string bodies (OFREP's bulk answer, named lookups, the frontend API's).
 */
function endBody(body: string | Buffer): string | Buffer {
  return typeof body === 'string' && body.length > BYTES_FROM ? Buffer.from(body) : body;
}

/**
 * A JSON object's text with `members` (`,"name":value…`) added before its closing brace. A long
 * one comes back as bytes written once: a string joined onto a long body is a rope, which node
 * copies flat on V8's heap to measure it before {@link endBody} encodes it anyway (25 kB more
 * garbage per OFREP bulk answer at 200 flags).
 */
export function withMembers(object: string | Buffer, members: string): string | Buffer {
  if (typeof object === 'string' && object.length <= BYTES_FROM) return `${object.slice(0, -1)}${members}}`;
  // Everything but the closing brace, one byte in UTF-8.
  const head = (typeof object === 'string' ? Buffer.byteLength(object) : object.length) - 1;
  const bytes = Buffer.allocUnsafeSlow(head + Buffer.byteLength(members) + 1);
  if (typeof object === 'string') bytes.write(object, 0, head);
  else object.copy(bytes, 0, 0, head);
  const end = head + bytes.write(members, head);
  bytes[end] = 0x7d;
  return bytes;
}

/** zlib's level for bodies made per request or per context (see {@link gzipAnswer}). */
const ANSWER_LEVEL = 3;
/** zlib's smallest output chunk. */
const MIN_ZLIB_CHUNK = 64;

/**
 * zlib settings for one answer. Its one-shot functions write into an output chunk (16 KiB unless
 * told) and give back a view of it, which keeps the whole chunk alive: a typical answer's 1.2 kB of
 * gzip held 16 KiB, in the answer cache as long as it stayed and otherwise until V8's next young
 * collection (under the benchmark's gzip load, 11 MB more glibc heap). Answers compress to about a
 * tenth, so a chunk of an eighth of the body holds the result (from Node's shared pool while under
 * 4 KiB); a body that compresses less takes more chunks, which zlib joins into one exact Buffer.
 */
function answerZlib(body: string | Buffer): { level: number; chunkSize: number } {
  return { level: ANSWER_LEVEL, chunkSize: Math.max(MIN_ZLIB_CHUNK, Math.ceil(body.length / 8)) };
}

/**
 * Gzip for bodies made per request or per context (evaluation answers): level 3, which took 32 µs
 * for a typical 11.6 kB answer against zlib's default level 6's 52 µs, for 8% more bytes (1,150
 * against 1,068). Bodies compressed once and served many times (documents, the client API's flag
 * set) keep the default level.
 */
export function gzipAnswer(body: string | Buffer): Buffer {
  return gzipSync(body, answerZlib(body));
}

/** Deflate, as {@link gzipAnswer}, for the rare caller that asks for it and not for gzip. */
export function deflateAnswer(body: string | Buffer): Buffer {
  return deflateSync(body, answerZlib(body));
}

/** Express-compatible weak ETag: `W/"<byte length hex>-<sha1 base64, 27 chars>"`. */
export function weakEtag(body: string | Buffer): string {
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  const hash = digestText('sha1', body, 'base64').slice(0, 27);
  return `W/"${length.toString(16)}-${hash}"`;
}

export function text(status: number, body: string, contentType = TEXT_HTML): ProxyResponse {
  return { status, headers: { 'Content-Type': contentType }, body };
}

/**
 * A constant text answer, with its ETag computed once. The body stays a string: node writes a
 * string body together with the headers in one write, where a Buffer takes a second (`writev`),
 * which for a body of a few bytes costs more than encoding it.
 */
export function constantText(status: number, body: string, contentType = TEXT_HTML): ProxyResponse {
  return Object.freeze({ status, headers: Object.freeze({ 'Content-Type': contentType }), body, etag: weakEtag(body) });
}

export function json(status: number, value: unknown, headers: OutgoingHttpHeaders = {}): ProxyResponse {
  return { status, headers: { 'Content-Type': APPLICATION_JSON, ...headers }, body: JSON.stringify(value) };
}

/** A JSON error body `{"error": message}` (plus extra fields). */
export function jsonError(status: number, message: string, extra: Record<string, unknown> = {}): ProxyResponse {
  return json(status, { error: message, ...extra });
}

/**
 * A request tag appended to a body's ETag (`W/"<len>-<hash>.<tag>"`): it lets a later poll be
 * answered 304 from the request alone (see `requestTag` in service.ts). Body hashes are base64 and
 * never hold a `.`.
 */
const REQUEST_TAG = /\.[A-Za-z0-9_-]+"$/;

/** The ETag without `W/` and without a request tag. */
function bareTag(tag: string): string {
  const bare = tag.startsWith('W/') ? tag.slice(2) : tag;
  return REQUEST_TAG.test(bare) ? bare.replace(REQUEST_TAG, '"') : bare;
}

/** Appends a request tag to a body ETag. */
export function withRequestTag(etag: string, tag: string): string {
  return `${etag.slice(0, -1)}.${tag}"`;
}

/**
 * The ETag of `If-None-Match` that ends with `.${tag}${after}` (a request tag and what the surface
 * writes after it), trimmed. The tag is compared in time that does not depend on where it differs:
 * a match stands in for the key check (see `requestTag` in request-identity.ts), so how much of a
 * guess was right must not show.
 */
export function sentWithTag(ifNoneMatch: string, tag: string, after: string): string | undefined {
  // What an SDK sends back: the one ETag it was given, no list to split (the split's array was
  // about 2% of a tagged 304's CPU).
  if (!ifNoneMatch.includes(',')) {
    const sent = ifNoneMatch.trim();
    return endsWithTag(sent, tag, after) ? sent : undefined;
  }
  for (const part of ifNoneMatch.split(',')) {
    const sent = part.trim();
    if (endsWithTag(sent, tag, after)) return sent;
  }
  return undefined;
}

function endsWithTag(sent: string, tag: string, after: string): boolean {
  const start = sent.length - after.length - tag.length;
  // Where the tag sits and what follows it are no secret; the tag's characters are.
  if (start < 1 || sent.charCodeAt(start - 1) !== 0x2e || !sent.endsWith(after)) return false;
  let differ = 0;
  for (let i = 0; i < tag.length; i += 1) differ |= sent.charCodeAt(start + i) ^ tag.charCodeAt(i);
  return differ === 0;
}

/** `If-None-Match` matches `etag` (weak comparison, request tags ignored, `*` matches anything). */
export function etagMatches(header: string | undefined, etag: string): boolean {
  return matchesEtag(header, etag, true);
}

/**
 * {@link etagMatches} for an answer that carries request tags: only an ETag without a tag (the
 * predecessor's form, or an answer given untagged) is compared by body. One with a tag is fresh by
 * its tag alone, which the surface checks first; when that no longer holds (a changed flag set, a
 * passed instant, another key) the answer is a 200 even if its body is the same, since SDKs keep
 * the ETag of their last 200 and ignore a 304's: answered 304, a client would send the stale tag,
 * and be evaluated in full, on every poll from then on.
 */
export function untaggedEtagMatches(header: string | undefined, etag: string): boolean {
  return matchesEtag(header, etag, false);
}

/** The two above: `*`, the very ETag (tag and all), or the same body, for a tagged ETag only when `tagsByBody`. */
function matchesEtag(header: string | undefined, etag: string, tagsByBody: boolean): boolean {
  if (!header) return false;
  // What an SDK sends back: the one tag it was given, as it was given.
  if (header === etag) return true;
  if (header.trim() === '*') return true;
  const bare = bareTag(etag);
  for (const part of header.split(',')) {
    const sent = part.trim();
    if (sent === etag || ((tagsByBody || !carriesRequestTag(sent)) && bareTag(sent) === bare)) return true;
  }
  return false;
}

/** Whether an ETag carries a request tag (`W/"<len>-<hash>.<tag>"`). */
function carriesRequestTag(etag: string): boolean {
  return REQUEST_TAG.test(etag);
}

/**
 * Whether a request may be answered 304 at all: a GET or HEAD (and a POST where `post`: a surface
 * whose clients poll by POST), without `Cache-Control: no-cache` (Express's rule).
 */
export function mayBeFresh(req: IncomingMessage, post = false): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD' && !(post && req.method === 'POST')) return false;
  const cacheControl = req.headers['cache-control'];
  return !(cacheControl && /(?:^|,)\s*no-cache\s*(?:,|$)/i.test(cacheControl));
}

/** Express's freshness rule: GET/HEAD, a 2xx or 304, no `Cache-Control: no-cache`, a matching `If-None-Match`. */
export function isFresh(req: IncomingMessage, status: number, etag: string): boolean {
  if ((status < 200 || status >= 300) && status !== 304) return false;
  // A tagged answer is fresh by its whole ETag, or by its body for an ETag without a tag.
  const matches = carriesRequestTag(etag) ? untaggedEtagMatches : etagMatches;
  return mayBeFresh(req) && matches(req.headers['if-none-match'], etag);
}

/** Whether `res` carries headers already (a host set some before the proxy ran). */
export function hasHeaders(res: ServerResponse): boolean {
  return res.getHeaderNames().length > 0;
}

/** Sets header fields given as a list, in order. */
export function setHeaderList(res: ServerResponse, list: HeaderList): void {
  for (let i = 0; i < list.length; i += 2) res.setHeader(list[i]!, list[i + 1]!);
}

/**
 * Writes a response. `leading` are header fields that go first (the CORS headers the handler
 * computed once); headers a host already set on `res` are kept, and then every field is set one by
 * one as before. On a response without headers yet (the proxy as the whole server, or a host that
 * set none), the fields are first put in one list (no `Vary` merging or removal on `res`), then
 * set and written at once ({@link writeHeadFields}): the same bytes in the same order.
 */
export function writeResponse(
  req: IncomingMessage,
  res: ServerResponse,
  response: ProxyResponse,
  leading: HeaderList = NO_HEADERS,
  constants?: ConstantHeads,
): void {
  if (response.stream || hasHeaders(res)) {
    setHeaderList(res, leading);
    writeFieldByField(req, res, response);
    return;
  }
  writeAtOnce(req, res, response, leading, constants);
}

/**
 * The finished header fields of constant answers (frozen responses, as {@link constantText} makes:
 * health, 401) written as a plain GET answer: made on the first such write, with the `leading`
 * fields they were made with. One per handler, so nothing is shared between proxies.
 */
export type ConstantHeads = WeakMap<ProxyResponse, { leading: HeaderList; fields: Fields }>;

/** A header list under construction: `setHeader`'s semantics (case-insensitive, replaced in place). */
type Fields = Array<string | number | readonly string[]>;

function indexOfField(fields: Fields, name: string): number {
  for (let i = 0; i < fields.length; i += 2) {
    const existing = fields[i] as string;
    if (existing === name || sameFieldName(existing, name)) return i;
  }
  return -1;
}

/**
 * Whether two header names are one field: equal but for ASCII case (node's own rule, which lower
 * cases them). Compared in place: lower-cased copies were a new string per field and answer.
 */
function sameFieldName(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Different: the same only as an upper and a lower case ASCII letter.
    const lower = x | 0x20;
    if (lower !== (y | 0x20) || lower < 0x61 || lower > 0x7a) return false;
  }
  return true;
}

function put(fields: Fields, name: string, value: string | number | readonly string[]): void {
  const at = indexOfField(fields, name);
  if (at === -1) fields.push(name, value);
  else fields[at + 1] = value;
}

/** {@link addVary} over a header list. */
function putVary(fields: Fields, field: string): void {
  const at = indexOfField(fields, 'Vary');
  if (at === -1) {
    fields.push('Vary', field);
    return;
  }
  const list = String(fields[at + 1]);
  if (!list.split(',').some((f) => f.trim().toLowerCase() === field.toLowerCase())) fields[at + 1] = `${list}, ${field}`;
}

/** node's own ways of writing a response, to tell them from a host's wrappers. */
const { writeHead: nodeWriteHead, write: nodeWrite, end: nodeEnd } = ServerResponse.prototype;
/** Where node announces every finished response to whoever subscribes (tracers). */
const responseFinished = channel('http.server.response.finish');
/** The name of the `'finish'` listener node itself puts on every response of its server. */
const NODE_FINISH = 'bound resOnFinish';

/**
 * Whether nothing but node itself could look at `res`'s header fields after the proxy wrote them:
 * node's own `writeHead`, `write` and `end` (no `on-headers`, compression or tracer around them),
 * no `'finish'` listener but node's, none on `'close'` or `'prefinish'` (a logger such as morgan,
 * pino-http or koa-logger reads `res.getHeader` there), and no subscriber to node's
 * `http.server.response.finish` channel. Not seen: a host that reads them synchronously right after
 * calling the handler, and a wrapper on node's prototype made before this module was loaded that
 * reads them itself (docs/frameworks.md, "Reading the answer's headers").
 *
 * A plain `ServerResponse` (node's own class: no framework's prototype over it) with at most one
 * `'finish'` listener has only node's: its server puts exactly one on every response. Reading a
 * bound listener's `name` builds the string anew each time (about 190 ns), so it is read only for
 * responses of other classes (Express's, fastify's `inject`).
 */
function unobserved(res: ServerResponse): boolean {
  if (res.writeHead !== nodeWriteHead || res.write !== nodeWrite || res.end !== nodeEnd || responseFinished.hasSubscribers) return false;
  if (res.listenerCount('close') !== 0 || res.listenerCount('prefinish') !== 0) return false;
  if (Object.getPrototypeOf(res) === ServerResponse.prototype && res.listenerCount('finish') <= 1) return true;
  for (const listener of res.listeners('finish')) if (listener.name !== NODE_FINISH) return false;
  return true;
}

/**
 * Sets a finished header list on `res` and writes the head. Where something besides node could
 * read the fields afterwards ({@link unobserved}), each goes through `setHeader`: the list form of
 * `writeHead` would leave them unreadable (`res.getHeader`: a logger's `:res[content-length]`,
 * tracing). Where nothing could, they go to node in one `writeHead(status, list)` call, the same
 * bytes for less work (health 8% and preflight 12% less CPU a request by `npm run bench:ab`;
 * docs/performance.md, "The head in one call").
 * When node refuses a field, the status message is cleared, so the error answer written next gets
 * the message of its own status.
 */
export function writeHeadFields(res: ServerResponse, status: number, fields: Fields | HeaderList): void {
  try {
    if (unobserved(res)) {
      res.writeHead(status, fields as OutgoingHttpHeader[]);
      return;
    }
    for (let i = 0; i < fields.length; i += 2) res.setHeader(fields[i] as string, fields[i + 1] as string | number | readonly string[]);
    res.writeHead(status);
  } catch (error) {
    res.statusMessage = '';
    throw error;
  }
}

function writeAtOnce(req: IncomingMessage, res: ServerResponse, response: ProxyResponse, leading: HeaderList, constants?: ConstantHeads): void {
  // A plain GET of a constant answer: no freshness to check, nothing to compress, the same fields.
  const plainGet = constants !== undefined && req.method === 'GET' && req.headers['if-none-match'] === undefined && Object.isFrozen(response);
  const known = plainGet ? constants.get(response) : undefined;
  if (known !== undefined && known.leading === leading) {
    writeHeadFields(res, response.status, known.fields);
    res.end(response.body);
    return;
  }
  const fields: Fields = leading.slice();
  const { headers, body } = response;
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) put(fields, name, value);
  }
  if (body === undefined) {
    if (response.etag) put(fields, 'ETag', response.etag);
    writeHeadFields(res, response.status, fields);
    res.end();
    return;
  }
  const etag = response.etag === false ? undefined : (response.etag ?? weakEtag(body));
  if (etag !== undefined) {
    put(fields, 'ETag', etag);
    if (isFresh(req, response.status, etag)) {
      const at = indexOfField(fields, 'Content-Type');
      if (at !== -1) fields.splice(at, 2);
      writeHeadFields(res, 304, fields);
      res.end();
      response.recycle?.();
      return;
    }
  }
  const contentType = String(headers['Content-Type'] ?? '');
  const compressible = /^(text\/|application\/json)/.test(contentType);
  if (compressible) putVary(fields, 'Accept-Encoding');
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  if (req.method === 'HEAD') {
    put(fields, 'Content-Length', length);
    writeHeadFields(res, response.status, fields);
    res.end();
    response.recycle?.();
    return;
  }
  if (compressible && length >= COMPRESS_THRESHOLD) {
    const encoding = acceptsEncoding(req, 'gzip') ? 'gzip' : acceptsEncoding(req, 'deflate') ? 'deflate' : undefined;
    if (encoding !== undefined) {
      const encoded = encoding === 'gzip' ? (response.compress ? response.compress() : gzipAnswer(body)) : deflateAnswer(body);
      put(fields, 'Content-Encoding', encoding);
      put(fields, 'Content-Length', encoded.length);
      writeHeadFields(res, response.status, fields);
      res.end(encoded);
      // What is written is the compressed copy.
      response.recycle?.();
      return;
    }
  }
  put(fields, 'Content-Length', length);
  if (plainGet && known === undefined && length < COMPRESS_THRESHOLD) constants.set(response, { leading, fields });
  writeHeadFields(res, response.status, fields);
  if (response.recycle && writesToKernel(res)) res.once('finish', response.recycle);
  res.end(endBody(body));
}

/**
 * Whether node's own code writes `res` into a connection of the operating system: then its
 * `'finish'` comes once the socket has handed the last byte to the kernel, and nothing reads the
 * body after. Not so for a host that wraps `write` or `end` (compression, body logging), nor for a
 * socket without a handle (an in-memory connection, as the fetch adapter's, keeps the very
 * Buffers it was given for its reader).
 */
function writesToKernel(res: ServerResponse): boolean {
  const { socket } = res;
  return (
    socket instanceof Socket &&
    (socket as Socket & { _handle?: unknown })._handle != null &&
    socket.write === Socket.prototype.write &&
    res.write === ServerResponse.prototype.write &&
    res.end === ServerResponse.prototype.end
  );
}

/** Writes a response field by field over the headers already on `res`. */
function writeFieldByField(req: IncomingMessage, res: ServerResponse, response: ProxyResponse): void {
  for (const [name, value] of Object.entries(response.headers)) if (value !== undefined) res.setHeader(name, value);
  if (response.stream) {
    if (res.destroyed || req.method === 'HEAD') {
      response.release?.();
      res.statusCode = response.status;
      res.end();
      return;
    }
    res.statusCode = response.status;
    res.flushHeaders();
    response.stream(res);
    return;
  }
  const { body } = response;
  if (body === undefined) {
    if (response.etag) res.setHeader('ETag', response.etag);
    res.statusCode = response.status;
    res.end();
    return;
  }
  const etag = response.etag === false ? undefined : (response.etag ?? weakEtag(body));
  if (etag !== undefined) {
    res.setHeader('ETag', etag);
    if (isFresh(req, response.status, etag)) {
      res.removeHeader('Content-Type');
      res.statusCode = 304;
      res.end();
      response.recycle?.();
      return;
    }
  }
  const contentType = String(response.headers['Content-Type'] ?? '');
  const compressible = /^(text\/|application\/json)/.test(contentType);
  if (compressible) addVary(res, 'Accept-Encoding');
  res.statusCode = response.status;
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  if (req.method === 'HEAD') {
    res.setHeader('Content-Length', length);
    res.end();
    response.recycle?.();
    return;
  }
  if (compressible && length >= COMPRESS_THRESHOLD) {
    if (acceptsEncoding(req, 'gzip')) {
      const zipped = response.compress ? response.compress() : gzipAnswer(body);
      res.setHeader('Content-Encoding', 'gzip');
      res.setHeader('Content-Length', zipped.length);
      res.end(zipped);
      response.recycle?.();
      return;
    }
    if (acceptsEncoding(req, 'deflate')) {
      const deflated = deflateAnswer(body);
      res.setHeader('Content-Encoding', 'deflate');
      res.setHeader('Content-Length', deflated.length);
      res.end(deflated);
      response.recycle?.();
      return;
    }
  }
  res.setHeader('Content-Length', length);
  if (response.recycle && writesToKernel(res)) res.once('finish', response.recycle);
  res.end(endBody(body));
}
