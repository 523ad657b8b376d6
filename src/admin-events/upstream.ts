/**
 * One GET to the flag server's admin API: the token, the time limit and the signals, then the
 * answer checked against its schema. Every failure becomes a `FlagProxyError` whose message and
 * cause never hold the token.
 */
import { inspect } from 'node:util';
import type { z } from 'zod';
import { FlagProxyError, type FlagProxyErrorCode } from '../errors.js';
import { redactUrlCredentials } from '../logger.js';
import type { ClientSettings } from './checks.js';

const REDACTED = '[redacted]';

/** GETs `path` under the flag server's root and returns the answer parsed by `schema`. */
export type GetJson = <S extends z.ZodType>(
  path: string,
  query: URLSearchParams | undefined,
  schema: S,
  callSignal: AbortSignal | undefined,
) => Promise<z.infer<S>>;

/** What the steps of one GET share: the checked options and how to fail without the token. */
interface Upstream extends ClientSettings {
  redact: (text: string) => string;
  upstreamError: (code: FlagProxyErrorCode, message: string, details: Record<string, unknown>, cause?: unknown) => FlagProxyError;
}

/** Makes the client's one way to the flag server. */
export function createGetJson(settings: ClientSettings): GetJson {
  const { token } = settings;
  const redact = (text: string): string => redactUrlCredentials(text.split(token).join(REDACTED));
  const upstream: Upstream = {
    ...settings,
    redact,
    upstreamError: (code, message, details, cause) =>
      new FlagProxyError(code, message, {
        status: code === 'TIMEOUT' ? 504 : 502,
        details,
        ...(cause === undefined ? {} : { cause: safeCause(cause, token, redact) }),
      }),
  };
  return async (path, query, schema, callSignal) => {
    const url = new URL(path, settings.root);
    if (query !== undefined) url.search = query.toString();
    const where = `GET ${url.origin}${url.pathname}${url.search}`;
    const { res, text } = await fetchText(upstream, { url, where, callSignal });
    if (!res.ok) throw statusError(res, text, where, redact);
    return parseAnswer(upstream, { res, text, where }, schema);
  };
}

/** The answer and its whole body; rejects on a timeout, an abort or a network failure. */
async function fetchText(
  { fetchImpl, token, timeoutMs, clientSignal, redact, upstreamError }: Upstream,
  { url, where, callSignal }: { url: URL; where: string; callSignal: AbortSignal | undefined },
): Promise<{ res: Response; text: string }> {
  const timeout = timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined;
  const sources = [timeout, clientSignal, callSignal].filter((s): s is AbortSignal => s !== undefined);
  const signal = sources.length > 0 ? AbortSignal.any(sources) : undefined;
  // A caller's abort is theirs to handle: reject with their reason, as fetch itself does.
  const interrupted = (err: unknown): unknown => {
    if (signal?.aborted !== true) return undefined;
    if (timeout !== undefined && signal.reason === timeout.reason) {
      return upstreamError('TIMEOUT', `No answer from the flag server within ${timeoutMs} ms (${where})`, {
        url: where,
        timeoutMs,
      }, err);
    }
    return signal.reason;
  };

  try {
    const res = await fetchImpl(url.href, {
      method: 'GET',
      headers: { authorization: token, accept: 'application/json' },
      ...(signal === undefined ? {} : { signal }),
    });
    return { res, text: await res.text() };
  } catch (err) {
    const stop = interrupted(err);
    if (stop !== undefined) throw stop;
    throw upstreamError('NETWORK', `Could not reach the flag server (${where}): ${networkReason(err, redact)}`, {
      url: where,
    }, err);
  }
}

/** The body as JSON, checked against `schema`; `INVALID_RESPONSE` naming the first bad path otherwise. */
function parseAnswer<S extends z.ZodType>(
  { redact, upstreamError }: Upstream,
  { res, text, where }: { res: Response; text: string; where: string },
  schema: S,
): z.infer<S> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    const type = res.headers.get('content-type') ?? 'no content type';
    throw upstreamError('INVALID_RESPONSE', `The flag server's answer is not JSON (${where}, ${type})`, {
      url: where,
      status: res.status,
      contentType: type,
    }, err);
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({
      path: formatPath(issue.path),
      code: issue.code,
      message: redact(issue.message),
    }));
    const first = issues[0]!;
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
    throw upstreamError(
      'INVALID_RESPONSE',
      `The flag server's answer has an unexpected shape at ${first.path}: ${first.message}${more} (${where})`,
      { url: where, status: res.status, issues },
    );
  }
  return parsed.data;
}

function statusError(res: Response, text: string, where: string, redact: (s: string) => string): FlagProxyError {
  const status = res.status;
  const details: Record<string, unknown> = { status, url: where };
  const upstreamMessage = messageOf(text);
  if (upstreamMessage !== undefined) details.upstreamMessage = redact(upstreamMessage);
  const options = { status: 502, details };
  switch (status) {
    case 401:
      return new FlagProxyError(
        'UNAUTHORIZED',
        `The flag server rejected the admin token (401 Unauthorized, ${where}); check adminToken / FLAG_ADMIN_TOKEN`,
        options,
      );
    case 403:
      return new FlagProxyError(
        'FORBIDDEN',
        `The flag server refused access (403 Forbidden, ${where}): the admin events API needs an ADMIN token; ` +
          'client and frontend tokens are refused',
        options,
      );
    case 404:
      return new FlagProxyError(
        'NOT_FOUND',
        `The flag server has no such endpoint (404 Not Found, ${where}); flagUrl should be the server root or its ` +
          '/api/ URL, and paging needs a server with /api/admin/search/events',
        options,
      );
    default:
      return new FlagProxyError(
        'UPSTREAM',
        `The flag server answered ${status}${res.statusText === '' ? '' : ` ${res.statusText}`} (${where})`,
        options,
      );
  }
}

/** The `message` of a JSON error body, or the start of a text one; nothing from an HTML page. */
function messageOf(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  try {
    const body: unknown = JSON.parse(trimmed);
    if (typeof body === 'object' && body !== null && typeof (body as { message?: unknown }).message === 'string') {
      return (body as { message: string }).message.slice(0, 500);
    }
    return undefined;
  } catch {
    return trimmed.startsWith('<') ? undefined : trimmed.slice(0, 200);
  }
}

/** `ECONNREFUSED 127.0.0.1:9` rather than undici's bare "fetch failed". */
function networkReason(err: unknown, redact: (s: string) => string): string {
  let current: unknown = err;
  let reason = 'network error';
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const e = current as { message?: unknown; code?: unknown; cause?: unknown };
    if (typeof e.code === 'string') {
      const text = typeof e.message === 'string' ? e.message : '';
      return redact(text.includes(e.code) ? text : `${e.code}${text === '' ? '' : `: ${text}`}`);
    }
    if (typeof e.message === 'string' && e.message !== '') reason = e.message;
    current = e.cause;
  }
  return redact(reason);
}

/**
 * Keeps the original cause for debugging unless anything reachable from it mentions the token or
 * a URL with credentials; then a copy of its message alone, redacted.
 */
function safeCause(cause: unknown, token: string, redact: (s: string) => string): unknown {
  const seen = inspect(cause, { depth: 6, showHidden: false, breakLength: Infinity });
  if (!seen.includes(token) && redactUrlCredentials(seen) === seen) return cause;
  const message = cause instanceof Error ? cause.message : String(cause);
  const clean = new Error(redact(message));
  clean.name = cause instanceof Error ? cause.name : 'Error';
  return clean;
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out === '' ? '(root)' : out;
}
