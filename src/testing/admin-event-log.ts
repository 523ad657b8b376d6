/**
 * An in-memory event log that answers the flag server's admin events endpoints the way
 * unleash-server 8.2.0 does (caps, `totalEvents`, newest first, 401/403, the search endpoint's
 * paging and filters), so code that reads the audit log can be tested with no real server.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminEvent } from '../admin-events/schemas.js';

/**
 * Options of {@link createAdminEventLog}.
 *
 * @example
 * ```ts
 * const options: AdminEventLogOptions = { adminTokens: ['admin-secret'], clientTokens: ['client-secret'] };
 * ```
 */
export interface AdminEventLogOptions {
  /** Tokens that may read the events (ADMIN-type tokens). */
  adminTokens: readonly string[];
  /** Tokens the server knows but refuses on the admin API with 403 (client or frontend tokens). @default [] */
  clientTokens?: readonly string[];
}

/**
 * What {@link AdminEventLog.record} takes; everything but `type` is optional.
 *
 * @example
 * ```ts
 * const input: AdminEventInput = {
 *   type: 'feature-environment-enabled',
 *   featureName: 'checkout',
 *   project: 'default',
 *   environment: 'development',
 * };
 * ```
 */
export interface AdminEventInput {
  /** Event type, e.g. `feature-created`. */
  type: string;
  /** @default null */
  featureName?: string | null;
  /** @default null */
  project?: string | null;
  /** @default null (flag-level events carry none) */
  environment?: string | null;
  /** Payload after the change. @default null */
  data?: object | null;
  /** Payload before the change. @default null */
  preData?: object | null;
  /** Who caused the event. @default 'test-admin' */
  createdBy?: string;
  /** Tags of the toggle at the time of the event. @default [] */
  tags?: { type: string; value: string }[];
}

/**
 * The log {@link createAdminEventLog} returns.
 *
 * @example
 * ```ts
 * const log: AdminEventLog = createAdminEventLog({ adminTokens: ['admin-secret'] });
 * log.record({ type: 'feature-created', featureName: 'checkout', project: 'default' });
 * ```
 */
export interface AdminEventLog {
  /** Stores an event with the next id and the current time, and returns (a copy of) it. */
  record(event: AdminEventInput): AdminEvent;
  /** Copies of all stored events, oldest first (in the order they were recorded). */
  events(): AdminEvent[];
  /** Forgets every event. Ids keep increasing, as a database sequence would. */
  clear(): void;
  /**
   * Answers `GET /api/admin/events`, `/api/admin/events/<name>` and `/api/admin/search/events`
   * and returns true; returns false without touching `res` for any other path.
   */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
}

/** A stored event: the fields the real server always sends. (A type alias, so it fits `AdminEvent`'s index signature.) */
type StoredEvent = {
  id: number;
  type: string;
  createdBy: string;
  createdAt: string;
  createdByUserId: number | null;
  data: Record<string, unknown> | null;
  preData: Record<string, unknown> | null;
  tags: { type: string; value: string }[];
  featureName: string | null;
  project: string | null;
  environment: string | null;
};

const FEED_LIMIT = 100;
const FILTERED_FEED_LIMIT = 50;
const SEARCH_DEFAULT_LIMIT = 50;
const SEARCH_MAX_LIMIT = 1000;

const LABELS: Record<string, { label: string; verb: string }> = {
  'feature-created': { label: 'Flag created', verb: 'created' },
  'feature-updated': { label: 'Flag updated', verb: 'updated' },
  'feature-environment-enabled': { label: 'Flag enabled', verb: 'enabled' },
  'feature-environment-disabled': { label: 'Flag disabled', verb: 'disabled' },
  'feature-archived': { label: 'Flag archived', verb: 'archived' },
};

/**
 * Creates an in-memory admin event log. Plug `handle` into a test server (the testing kit's flag
 * server does) and call `record` whenever the test changes a toggle.
 *
 * @example
 * ```ts
 * import http from 'node:http';
 * import { createAdminEventLog } from 'flag-proxy/testing';
 *
 * const log = createAdminEventLog({ adminTokens: ['admin-secret'] });
 * log.record({ type: 'feature-created', featureName: 'checkout', project: 'default' });
 * const server = http.createServer((req, res) => {
 *   if (!log.handle(req, res)) { res.statusCode = 404; res.end(); }
 * });
 * server.listen(0, '127.0.0.1');
 * ```
 */
export function createAdminEventLog(options: AdminEventLogOptions): AdminEventLog {
  if (typeof options !== 'object' || options === null || !isStringList(options.adminTokens)) {
    throw new TypeError('createAdminEventLog needs adminTokens: a list of strings');
  }
  if (options.clientTokens !== undefined && !isStringList(options.clientTokens)) {
    throw new TypeError('clientTokens must be a list of strings');
  }
  const adminTokens = new Set(options.adminTokens);
  const clientTokens = new Set(options.clientTokens ?? []);
  let stored: StoredEvent[] = [];
  let lastId = 0;

  function record(input: AdminEventInput): AdminEvent {
    if (typeof input !== 'object' || input === null || typeof input.type !== 'string' || input.type === '') {
      throw new TypeError('record needs an event with a non-empty type');
    }
    const event = storedEvent(input, ++lastId);
    stored.push(event);
    return structuredClone(event);
  }

  /** Newest first, as the server orders every feed. */
  function newestFirst(keep: (e: StoredEvent) => boolean): StoredEvent[] {
    const out: StoredEvent[] = [];
    for (let i = stored.length - 1; i >= 0; i--) if (keep(stored[i]!)) out.push(stored[i]!);
    return out;
  }

  function handle(req: IncomingMessage, res: ServerResponse): boolean {
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    const path = (q === -1 ? raw : raw.slice(0, q)).replace(/\/$/, '');
    const params = new URLSearchParams(q === -1 ? '' : raw.slice(q + 1));

    let route: (() => void) | undefined;
    if (/^\/api\/admin\/events$/i.test(path)) route = () => answerFeed(res, params, newestFirst);
    else if (/^\/api\/admin\/search\/events$/i.test(path)) route = () => answerSearch(res, params, newestFirst);
    else {
      const match = /^\/api\/admin\/events\/([^/]+)$/i.exec(path);
      if (match !== null) route = () => answerToggleFeed(res, match[1]!, newestFirst);
    }
    if (route === undefined) return false;

    if (refused(req, res, { adminTokens, clientTokens })) return true;
    if (req.method !== 'GET') {
      res.setHeader('allow', 'GET');
      sendJson(res, 405, { message: `${req.method ?? 'This method'} is not supported here; use GET.` });
      return true;
    }
    route();
    return true;
  }

  return {
    record,
    events: () => structuredClone(stored),
    clear: () => {
      stored = [];
    },
    handle,
  };
}

/** The stored events that `keep` accepts, newest first. */
type NewestFirst = (keep: (e: StoredEvent) => boolean) => StoredEvent[];

/** The event as the log keeps it: copies of the caller's objects, the server's defaults filled in. */
function storedEvent(input: AdminEventInput, id: number): StoredEvent {
  return {
    id,
    type: input.type,
    createdBy: input.createdBy ?? 'test-admin',
    createdAt: new Date().toISOString(),
    createdByUserId: null,
    // Copies: the log is a snapshot, later changes to the caller's objects must not show up.
    data: input.data == null ? null : (structuredClone(input.data) as Record<string, unknown>),
    preData: input.preData == null ? null : (structuredClone(input.preData) as Record<string, unknown>),
    tags: (input.tags ?? []).map((t) => ({ type: t.type, value: t.value })),
    featureName: input.featureName ?? null,
    project: input.project ?? null,
    environment: input.environment ?? null,
  };
}

/** Answers 401 for a missing or unknown token and 403 for a client token; `true` when it answered. */
function refused(req: IncomingMessage, res: ServerResponse, tokens: { adminTokens: Set<string>; clientTokens: Set<string> }): boolean {
  const { adminTokens, clientTokens } = tokens;
  const token = req.headers.authorization;
  if (token === undefined || token === '' || (!adminTokens.has(token) && !clientTokens.has(token))) {
    sendJson(res, 401, {
      id: randomUUID(),
      name: 'AuthenticationRequired',
      message: 'Authentication required: send a valid admin API token in the Authorization header.',
      details: [{ message: 'Authentication required: send a valid admin API token in the Authorization header.' }],
    });
    return true;
  }
  if (!adminTokens.has(token)) {
    sendJson(res, 403, { message: 'This token may not use the admin API; an admin token is required.' });
    return true;
  }
  return false;
}

/** `GET /api/admin/events[?project=P]`: the capped feed. */
function answerFeed(res: ServerResponse, params: URLSearchParams, newestFirst: NewestFirst): void {
  const project = params.get('project');
  const matches = project === null || project === '' ? newestFirst(() => true) : newestFirst((e) => e.project === project);
  const limit = project === null || project === '' ? FEED_LIMIT : FILTERED_FEED_LIMIT;
  sendJson(res, 200, { version: 1, events: matches.slice(0, limit), totalEvents: matches.length });
}

/** `GET /api/admin/events/<name>`: the capped feed of one toggle. */
function answerToggleFeed(res: ServerResponse, encodedName: string, newestFirst: NewestFirst): void {
  let name: string;
  try {
    name = decodeURIComponent(encodedName);
  } catch {
    sendJson(res, 400, { message: 'The toggle name is not valid percent-encoding.' });
    return;
  }
  const matches = newestFirst((e) => e.featureName === name);
  sendJson(res, 200, {
    version: 1,
    toggleName: name,
    events: matches.slice(0, FILTERED_FEED_LIMIT),
    totalEvents: matches.length,
  });
}

/** `GET /api/admin/search/events`: filtered, paged by limit and offset. */
function answerSearch(res: ServerResponse, params: URLSearchParams, newestFirst: NewestFirst): void {
  const limitRaw = params.get('limit');
  const offsetRaw = params.get('offset');
  if ((limitRaw !== null && !/^\d+$/.test(limitRaw)) || (offsetRaw !== null && !/^\d+$/.test(offsetRaw))) {
    sendJson(res, 400, { message: 'limit and offset must be non-negative integers.' });
    return;
  }
  const asked = limitRaw === null ? SEARCH_DEFAULT_LIMIT : Number(limitRaw);
  // The real server quietly falls back to its default rather than refusing an oversized page.
  const limit = asked >= 1 && asked <= SEARCH_MAX_LIMIT ? asked : SEARCH_DEFAULT_LIMIT;
  const offset = offsetRaw === null ? 0 : Number(offsetRaw);

  const tests: ((e: StoredEvent) => boolean)[] = [];
  for (const [param, field] of [
    ['project', 'project'],
    ['feature', 'featureName'],
    ['type', 'type'],
  ] as const) {
    const raw = params.get(param);
    if (raw === null) continue;
    const matcher = parseFilter(raw);
    if (matcher === undefined) {
      sendJson(res, 400, {
        message: `${param} must look like IS:value, IS_NOT:value, IS_ANY_OF:a,b or IS_NONE_OF:a,b.`,
      });
      return;
    }
    tests.push((e) => matcher(e[field]));
  }
  const matches = newestFirst((e) => tests.every((t) => t(e)));
  const events = matches.slice(offset, offset + limit).map((e) => ({ ...e, ...searchExtras(e) }));
  sendJson(res, 200, { events, total: matches.length });
}

function parseFilter(raw: string): ((value: string | null) => boolean) | undefined {
  const match = /^(IS|IS_NOT|IS_ANY_OF|IS_NONE_OF):(.+)$/.exec(raw);
  if (match === null) return undefined;
  const operator = match[1]!;
  const values = operator === 'IS' || operator === 'IS_NOT' ? [match[2]!] : match[2]!.split(',');
  const negate = operator === 'IS_NOT' || operator === 'IS_NONE_OF';
  return (value) => {
    const hit = value !== null && values.includes(value);
    return negate ? !hit : hit;
  };
}

/** The `label` and `summary` the search endpoint adds to each event (our own wording). */
function searchExtras(e: StoredEvent): { label: string; summary: string } {
  const known = LABELS[e.type];
  if (known === undefined) return { label: e.type, summary: `**${e.createdBy}** caused **${e.type}**` };
  const where =
    (e.environment === null ? '' : ` in the **${e.environment}** environment`) +
    (e.project === null ? '' : ` of project **${e.project}**`);
  return { label: known.label, summary: `**${e.createdBy}** ${known.verb} **${e.featureName ?? '?'}**${where}` };
}

function isStringList(value: unknown): value is readonly string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(json));
  res.end(json);
}
