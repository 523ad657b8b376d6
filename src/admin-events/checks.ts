/**
 * Checks of the admin events client's options and arguments: bad options throw `INVALID_OPTION`
 * at creation, bad arguments `BAD_REQUEST` at the call, before any request.
 */
import { FlagProxyError } from '../errors.js';
import type { AdminEventsClientOptions, AdminEventsFetch, AdminEventsFilter } from './types.js';

const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_TIMER_MS = 2_147_483_647;

/** The client's options, checked and with their defaults. */
export interface ClientSettings {
  root: URL;
  token: string;
  fetchImpl: AdminEventsFetch;
  timeoutMs: number;
  clientSignal: AbortSignal | undefined;
}

/** Checks the options of `createAdminEventsClient` once; throws `INVALID_OPTION` naming the option. */
export function resolveClientOptions(options: AdminEventsClientOptions): ClientSettings {
  if (typeof options !== 'object' || options === null) {
    throw invalidOption('createAdminEventsClient needs an options object with flagUrl and adminToken');
  }
  const root = resolveRoot(options.flagUrl);
  const token = checkToken(options.adminToken);
  const maybeFetch: unknown = options.fetch ?? globalThis.fetch;
  if (typeof maybeFetch !== 'function') {
    throw invalidOption('fetch must be a function (no global fetch is available in this runtime)');
  }
  const fetchImpl = maybeFetch as AdminEventsFetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > MAX_TIMER_MS) {
    throw invalidOption(`timeoutMs must be an integer from 0 to ${MAX_TIMER_MS} (0: no limit)`);
  }
  const clientSignal = options.signal;
  if (clientSignal !== undefined && !isAbortSignal(clientSignal)) {
    throw invalidOption('signal must be an AbortSignal');
  }
  return { root, token, fetchImpl, timeoutMs, clientSignal };
}

/**
 * Accepts the API URL (`…/api`, `…/api/`) or the server root (with or without a path prefix) and
 * returns the root with a trailing slash, so relative paths resolve under it.
 */
export function resolveRoot(flagUrl: unknown): URL {
  if (typeof flagUrl !== 'string' && !(flagUrl instanceof URL)) {
    throw invalidOption('flagUrl is required (env FLAG_URL): the flag server URL, e.g. https://flags.example.com/api/');
  }
  let url: URL;
  try {
    url = new URL(String(flagUrl));
  } catch {
    throw invalidOption('flagUrl (env FLAG_URL) is not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalidOption(`flagUrl (env FLAG_URL) must use http or https, not ${url.protocol}`);
  }
  if (url.username !== '' || url.password !== '') {
    throw invalidOption('flagUrl (env FLAG_URL) must not contain credentials; pass the token as adminToken');
  }
  const path = url.pathname.replace(/\/+$/, '').replace(/\/api$/i, '');
  const root = new URL(url.origin);
  root.pathname = `${path}/`;
  return root;
}

export function checkToken(token: unknown): string {
  if (typeof token !== 'string' || token.trim() === '') {
    throw invalidOption('adminToken is required (env FLAG_ADMIN_TOKEN): an ADMIN API token of the flag server');
  }
  // fetch would reject such a header with a message that quotes the value, i.e. the token.
  if (!/^[\t\x20-\x7e\x80-\xff]+$/.test(token) || token !== token.trim()) {
    throw invalidOption('adminToken (env FLAG_ADMIN_TOKEN) contains characters not allowed in an HTTP header');
  }
  return token;
}

export function filterQuery(opts: AdminEventsFilter): URLSearchParams {
  const query = new URLSearchParams();
  const project = optionalName('project', opts.project);
  const feature = optionalName('feature', opts.feature);
  if (project !== undefined) query.set('project', `IS:${project}`);
  if (feature !== undefined) query.set('feature', `IS:${feature}`);
  if (opts.type !== undefined) {
    const types = typeof opts.type === 'string' ? [opts.type] : [...opts.type];
    if (types.length === 0 || types.some((t) => typeof t !== 'string' || t === '' || t.includes(','))) {
      throw badRequest('type must be a non-empty event type or a non-empty list of them (without commas)');
    }
    query.set('type', types.length === 1 ? `IS:${types[0]}` : `IS_ANY_OF:${types.join(',')}`);
  }
  return query;
}

export function optionalName(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw badRequest(`${name} must be a non-empty string`);
  return value;
}

export function toggleSegment(name: unknown): string {
  if (typeof name !== 'string' || name === '') throw badRequest('the toggle name must be a non-empty string');
  // URL parsers treat "." and ".." (even percent-encoded) as path navigation, so they cannot be sent.
  if (name === '.' || name === '..') throw badRequest(`"${name}" cannot be used as a toggle name in a URL`);
  return encodeURIComponent(name);
}

export function checkInteger(name: string, value: unknown, min: number, max: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw badRequest(`${name} must be an integer from ${min} to ${max}`);
  }
}

export function isAbortSignal(value: unknown): value is AbortSignal {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as AbortSignal).aborted === 'boolean' &&
    typeof (value as AbortSignal).addEventListener === 'function'
  );
}

export function invalidOption(message: string): FlagProxyError {
  return new FlagProxyError('INVALID_OPTION', message, { status: 500, expose: false });
}

export function badRequest(message: string): FlagProxyError {
  return new FlagProxyError('BAD_REQUEST', message, { status: 400 });
}
