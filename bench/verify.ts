/**
 * Correctness before timing: flag-proxy and @unleash/proxy must give the same toggles for the same
 * contexts, answers must be stable (so ETags are), conditional GETs must give 304, preflights 204
 * and health 200 — and the bare server must serve the bytes it was given. Any failure throws, and
 * the runner aborts before measuring anything.
 */
import { isDeepStrictEqual } from 'node:util';
import http from 'node:http';
import type { TargetConfig } from './protocol.js';
import { ADOPTION_USER, contextFor, queryFor } from './flags.js';
import { HOT_CONTEXT_IDS, POLL_CONTEXT_BASE, preflightHeaders } from './scenarios.js';

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The header fields as they came, `[name, value, …]`. */
  rawHeaders: string[];
  body: string;
}

export function request(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method, headers, agent: false, timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

export class VerificationError extends Error {
  override name = 'VerificationError';
}

interface Toggle {
  name: string;
  enabled: boolean;
  variant?: { name: string; payload?: unknown };
}

function toggles(answer: Answer, what: string): Toggle[] {
  if (answer.status !== 200) throw new VerificationError(`${what}: status ${answer.status}, body ${answer.body.slice(0, 300)}`);
  let parsed: { toggles?: Toggle[] };
  try {
    parsed = JSON.parse(answer.body) as { toggles?: Toggle[] };
  } catch {
    throw new VerificationError(`${what}: not JSON: ${answer.body.slice(0, 300)}`);
  }
  if (!Array.isArray(parsed.toggles)) throw new VerificationError(`${what}: no toggles array: ${answer.body.slice(0, 300)}`);
  return parsed.toggles;
}

/** Toggles in name order, so two answers compare by content and not by listing order. */
const normalized = (list: Toggle[]): Toggle[] => [...list].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

function describeDifference(ours: Toggle[], theirs: Toggle[]): string {
  const byName = new Map(theirs.map((t) => [t.name, t]));
  const lines: string[] = [];
  for (const t of ours) {
    const other = byName.get(t.name);
    if (!isDeepStrictEqual(t, other)) lines.push(`  ${t.name}:\n    flag-proxy:     ${JSON.stringify(t)}\n    @unleash/proxy: ${JSON.stringify(other)}`);
    byName.delete(t.name);
  }
  for (const t of byName.values()) lines.push(`  ${t.name}:\n    flag-proxy:     (absent)\n    @unleash/proxy: ${JSON.stringify(t)}`);
  return lines.slice(0, 8).join('\n') + (lines.length > 8 ? `\n  ... and ${lines.length - 8} more` : '');
}

/** The requests whose answers are compared: GET, POST and POST-with-names for each sample context. */
export function sampleRequests(clientKey: string, named: string[]): Array<{ what: string; method: string; path: string; headers: Record<string, string>; body?: string }> {
  // A spread of ordinary contexts, two of the hot ones, two polling clients, two "unique" ones.
  const ids = [...new Set([0, 1, 2, 3, 5, 8, 13, 21, 34, 55, ...HOT_CONTEXT_IDS.slice(-2), POLL_CONTEXT_BASE, POLL_CONTEXT_BASE + 1, 10_000_007, 20_000_011])];
  const key = { authorization: clientKey };
  const json = { ...key, 'content-type': 'application/json' };
  return ids.flatMap((id) => {
    const context = contextFor(id);
    return [
      { what: `GET /proxy (context ${id})`, method: 'GET', path: `/proxy?${queryFor(context)}`, headers: key },
      { what: `POST /proxy (context ${id})`, method: 'POST', path: '/proxy', headers: json, body: JSON.stringify({ context }) },
      { what: `POST /proxy with 10 names (context ${id})`, method: 'POST', path: '/proxy', headers: json, body: JSON.stringify({ context, toggles: named }) },
    ];
  });
}

export interface Reference {
  /** flag-proxy's GET answer for context 0: the bare server's `full` body. */
  full: string;
  /** flag-proxy's 10-name POST answer for context 0: the bare server's `named` body. */
  named: string;
  /** Normalized toggles per sample request, from flag-proxy (equal to @unleash/proxy's). */
  expected: Map<string, Toggle[]>;
  /**
   * flag-proxy's header fields (without those node adds itself) on the answers the bare server
   * writes without a body of flag-proxy's: its 304 to a poll, its preflight, its health.
   */
  fields: AnswerFields;
  /** Enabled toggles for context 0, and how many carry a variant payload. */
  stats: { enabled: number; withPayload: number; fullBytes: number; namedBytes: number; unleashFullBytes?: number };
}

/** Header fields `[name, value, …]` of the answers whose bytes are headers only, or nearly. */
export interface AnswerFields {
  notModified: string[];
  preflight: string[];
  health: string[];
}

/** Fields node's server adds to every answer itself; the rest are the target's own. */
const NODE_FIELDS = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);

/** An answer's own header fields, `[name, value, …]`, as they came. */
export function ownFields(answer: Answer): string[] {
  const own: string[] = [];
  for (let i = 0; i < answer.rawHeaders.length; i += 2) {
    const name = answer.rawHeaders[i] as string;
    if (!NODE_FIELDS.has(name.toLowerCase())) own.push(name, answer.rawHeaders[i + 1] as string);
  }
  return own;
}

/**
 * How two field lists differ (names compared in any case, order ignored), or undefined when they
 * hold the same fields with the same values.
 */
export function fieldDifference(got: readonly string[], want: readonly string[]): string | undefined {
  const lines = (fields: readonly string[]): string[] => {
    const out: string[] = [];
    for (let i = 0; i < fields.length; i += 2) out.push(`${(fields[i] as string).toLowerCase()}: ${fields[i + 1] as string}`);
    return out.sort();
  };
  const a = lines(got);
  const b = lines(want);
  const missing = b.filter((line) => !a.includes(line));
  const extra = a.filter((line) => !b.includes(line));
  if (missing.length === 0 && extra.length === 0) return undefined;
  return [...missing.map((line) => `missing ${line}`), ...extra.map((line) => `extra ${line}`)].join('; ');
}

/** What the bare server is given to serve: flag-proxy's bodies, and its fields where it writes no body of ours. */
export function bareAnswers(reference: Reference): NonNullable<TargetConfig['bare']> {
  const { notModified, health, preflight } = reference.fields;
  return { full: reference.full, named: reference.named, notModified, health, preflight };
}

/** Fields with the ETag's value left out: each server names its answers its own way. */
const anyTag = (fields: readonly string[]): string[] => fields.map((field, i) => (i % 2 === 1 && (fields[i - 1] as string).toLowerCase() === 'etag' ? '(a tag)' : field));

async function checkProtocol(base: string, label: string, clientKey: string): Promise<AnswerFields> {
  const path = `/proxy?${queryFor(contextFor(0))}`;
  const first = await request(base, 'GET', path, { authorization: clientKey });
  const second = await request(base, 'GET', path, { authorization: clientKey });
  if (first.body !== second.body) throw new VerificationError(`${label}: two GETs of the same context gave different bodies (the polling scenario needs stable answers)`);
  const etag = first.headers.etag;
  if (!etag) throw new VerificationError(`${label}: GET /proxy has no ETag`);
  const conditional = await request(base, 'GET', path, { authorization: clientKey, 'if-none-match': etag });
  if (conditional.status !== 304) throw new VerificationError(`${label}: GET with a matching If-None-Match answered ${conditional.status}, not 304`);
  const preflight = await request(base, 'OPTIONS', '/proxy', preflightHeaders());
  if (preflight.status !== 204 || !preflight.headers['access-control-allow-origin']) {
    throw new VerificationError(`${label}: preflight answered ${preflight.status} (allow-origin: ${preflight.headers['access-control-allow-origin']}), not 204 with CORS headers`);
  }
  const health = await request(base, 'GET', '/proxy/health');
  if (health.status !== 200 || health.body !== 'ok') throw new VerificationError(`${label}: health answered ${health.status} '${health.body.slice(0, 100)}'`);
  const unauthorized = await request(base, 'GET', path, { authorization: 'wrong-key' });
  if (unauthorized.status !== 401) throw new VerificationError(`${label}: a wrong client key answered ${unauthorized.status}, not 401`);
  return { notModified: ownFields(conditional), preflight: ownFields(preflight), health: ownFields(health) };
}

/**
 * Compares flag-proxy with @unleash/proxy on every sample request and checks both speak the
 * protocol the scenarios rely on. Returns flag-proxy's answers as the reference.
 */
export async function verifyAgainstReference(flagProxy: string, unleashProxy: string | undefined, clientKey: string, named: string[]): Promise<Reference> {
  const expected = new Map<string, Toggle[]>();
  let full = '';
  let namedBody = '';
  let unleashFullBytes: number | undefined;
  for (const sample of sampleRequests(clientKey, named)) {
    const ours = await request(flagProxy, sample.method, sample.path, sample.headers, sample.body);
    const ourToggles = normalized(toggles(ours, `flag-proxy ${sample.what}`));
    if (unleashProxy) {
      const theirs = await request(unleashProxy, sample.method, sample.path, sample.headers, sample.body);
      const theirToggles = normalized(toggles(theirs, `@unleash/proxy ${sample.what}`));
      if (!isDeepStrictEqual(ourToggles, theirToggles)) {
        throw new VerificationError(`flag-proxy and @unleash/proxy disagree on ${sample.what}:\n${describeDifference(ourToggles, theirToggles)}`);
      }
      if (sample.what === 'GET /proxy (context 0)') unleashFullBytes = Buffer.byteLength(theirs.body);
    }
    expected.set(sample.what, ourToggles);
    if (sample.what === 'GET /proxy (context 0)') full = ours.body;
    if (sample.what === 'POST /proxy with 10 names (context 0)') namedBody = ours.body;
  }
  const fullToggles = toggles({ status: 200, headers: {}, rawHeaders: [], body: full }, 'reference');
  const stats = {
    enabled: fullToggles.length,
    withPayload: fullToggles.filter((t) => t.variant?.payload !== undefined).length,
    fullBytes: Buffer.byteLength(full),
    namedBytes: Buffer.byteLength(namedBody),
    ...(unleashFullBytes !== undefined ? { unleashFullBytes } : {}),
  };
  if (stats.enabled < 5 || stats.withPayload < 1) {
    throw new VerificationError(`The reference answer is too thin to measure anything (${stats.enabled} toggles, ${stats.withPayload} with payloads): check bench/flags.ts`);
  }
  if (JSON.parse(namedBody).toggles.length !== named.length) throw new VerificationError(`POST with ${named.length} names did not answer ${named.length} results`);
  const fields = await checkProtocol(flagProxy, 'flag-proxy', clientKey);
  if (unleashProxy) await checkProtocol(unleashProxy, '@unleash/proxy', clientKey);
  return { full, named: namedBody, expected, fields, stats };
}

/** Checks a freshly started target of a round against the reference, before it is timed. */
export async function checkTarget(name: string, base: string, reference: Reference, clientKey: string, named: string[]): Promise<void> {
  if (name === 'bare-node') {
    const path = `/proxy?${queryFor(contextFor(0))}`;
    const got = await request(base, 'GET', path, { authorization: clientKey });
    if (got.status !== 200 || got.body !== reference.full) throw new VerificationError(`bare-node: GET /proxy did not return the reference body (status ${got.status})`);
    const post = await request(base, 'POST', '/proxy', { authorization: clientKey, 'content-type': 'application/json' }, JSON.stringify({ context: contextFor(0), toggles: named }));
    if (post.status !== 200 || post.body !== reference.named) throw new VerificationError(`bare-node: POST /proxy with names did not return the reference body (status ${post.status})`);
    // Header fields cost too: the bare server's must be flag-proxy's, or the ratios compare unlike answers.
    const fields = await checkProtocol(base, 'bare-node', clientKey);
    for (const answer of ['notModified', 'preflight', 'health'] as const) {
      const difference = fieldDifference(anyTag(fields[answer]), anyTag(reference.fields[answer]));
      if (difference !== undefined) throw new VerificationError(`bare-node: its ${answer} answer's header fields are not flag-proxy's: ${difference}`);
    }
    return;
  }
  // A few of the sample requests again: this process must answer as the verified ones did.
  for (const sample of sampleRequests(clientKey, named).slice(0, 9)) {
    const answer = await request(base, sample.method, sample.path, sample.headers, sample.body);
    const got = normalized(toggles(answer, `${name} ${sample.what}`));
    const want = reference.expected.get(sample.what) ?? [];
    if (!isDeepStrictEqual(got, want)) throw new VerificationError(`${name} answers ${sample.what} differently from the verified reference:\n${describeDifference(got, want)}`);
  }
  await checkProtocol(base, name, clientKey);
}

/**
 * Makes a change to the upstream's flag set and waits until the target serves it: until the
 * answer for a fixed context lists `toggle` (or no longer does, when `listed` is false).
 */
export async function adoptUpstreamChange(
  base: string,
  clientKey: string,
  change: { apply(): void; toggle: string; listed: boolean },
  timeoutMs: number,
): Promise<void> {
  const path = `/proxy?userId=${ADOPTION_USER}&sessionId=${ADOPTION_USER}`;
  const adopted = async (): Promise<boolean> =>
    toggles(await request(base, 'GET', path, { authorization: clientKey }), `GET ${path}`).some((t) => t.name === change.toggle) === change.listed;
  if (await adopted()) throw new VerificationError(`GET ${path}: ${change.toggle} is ${change.listed ? 'listed' : 'missing'} before the upstream changed`);
  change.apply();
  const deadline = Date.now() + timeoutMs;
  while (!(await adopted())) {
    if (Date.now() > deadline) throw new VerificationError(`the target did not serve the upstream's changed flag set within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
