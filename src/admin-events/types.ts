/**
 * The public types of the admin events client: its options, each method's options and the client
 * itself. Apart from the code so that the client, its paging and its checks can share them.
 */
import type { AdminEvent, AdminEventList, AdminEventSearchPage, ToggleEventList } from './schemas.js';

/**
 * The `fetch` the client calls: the global one, undici's, or a test double. It is always called
 * with a string URL and a `GET` init.
 *
 * @example
 * ```ts
 * const logged: AdminEventsFetch = (url, init) => { console.log(url); return fetch(url, init); };
 * ```
 */
export type AdminEventsFetch = (url: string, init: RequestInit) => Promise<Response>;

/**
 * Options of {@link createAdminEventsClient}.
 *
 * @example
 * ```ts
 * const options: AdminEventsClientOptions = {
 *   flagUrl: process.env.FLAG_URL!,
 *   adminToken: process.env.FLAG_ADMIN_TOKEN!,
 *   timeoutMs: 5_000,
 * };
 * ```
 */
export interface AdminEventsClientOptions {
  /**
   * Where the flag server is: its API URL (the proxy's `FLAG_URL`, e.g.
   * `https://flags.example.com/api/`) or its bare root (`https://flags.example.com`). Both reach
   * `<root>/api/admin/events`.
   */
  flagUrl: string | URL;
  /** An ADMIN-type API token of the flag server. Sent as `Authorization`; never logged or echoed. */
  adminToken: string;
  /** The fetch implementation. @default globalThis.fetch */
  fetch?: AdminEventsFetch;
  /** Milliseconds one request may take, body included; `0` disables the limit. @default 10000 */
  timeoutMs?: number;
  /** Aborts every request of this client (e.g. at shutdown). Requests reject with its reason. */
  signal?: AbortSignal;
}

/**
 * Options of {@link AdminEventsClient.list}.
 *
 * @example
 * ```ts
 * await client.list({ project: 'default', all: true });
 * ```
 */
export interface AdminEventsListOptions {
  /** Only events of this project (id). */
  project?: string;
  /** Page through the search endpoint and return every matching event, not just the capped feed. @default false */
  all?: boolean;
  /** Aborts this call; it rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Options of {@link AdminEventsClient.forToggle}.
 *
 * @example
 * ```ts
 * await client.forToggle('checkout', { all: true });
 * ```
 */
export interface AdminEventsToggleOptions {
  /** Page through the search endpoint and return every event of the toggle. @default false */
  all?: boolean;
  /** Aborts this call; it rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Filters shared by {@link AdminEventsClient.search} and {@link AdminEventsClient.iterate}.
 *
 * @example
 * ```ts
 * const filter: AdminEventsFilter = { project: 'default', type: ['feature-created', 'feature-archived'] };
 * ```
 */
export interface AdminEventsFilter {
  /** Only events of this project (sent as `project=IS:<project>`). */
  project?: string;
  /** Only events of this toggle (sent as `feature=IS:<name>`). */
  feature?: string;
  /** Only events of this type, or of any of these types (`type=IS:a` / `type=IS_ANY_OF:a,b`). */
  type?: string | readonly string[];
  /** Aborts the call; it rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Options of {@link AdminEventsClient.search}: the filters plus one page window.
 *
 * @example
 * ```ts
 * await client.search({ feature: 'checkout', limit: 10, offset: 0 });
 * ```
 */
export interface AdminEventsSearchOptions extends AdminEventsFilter {
  /** Page size, 1 to 1000 (the server's own maximum). @default 50 */
  limit?: number;
  /** Events to skip, newest first. @default 0 */
  offset?: number;
}

/**
 * Options of {@link AdminEventsClient.iterate}: the filters plus the page size used underneath.
 *
 * @example
 * ```ts
 * for await (const event of client.iterate({ project: 'default', pageSize: 500 })) console.log(event.id);
 * ```
 */
export interface AdminEventsIterateOptions extends AdminEventsFilter {
  /** Events fetched per request, 1 to 1000. @default 100 */
  pageSize?: number;
}

/**
 * The client {@link createAdminEventsClient} returns. Every method rejects with a
 * {@link FlagProxyError} whose `code` is one of `UNAUTHORIZED`, `FORBIDDEN`, `NOT_FOUND`,
 * `UPSTREAM`, `TIMEOUT`, `NETWORK`, `INVALID_RESPONSE` (or `BAD_REQUEST` for a bad argument).
 *
 * @example
 * ```ts
 * const client: AdminEventsClient = createAdminEventsClient({ flagUrl, adminToken });
 * const { events } = await client.forToggle('checkout');
 * ```
 */
export interface AdminEventsClient {
  /**
   * `GET /api/admin/events[?project=P]`: the newest 100 events (50 with a project), newest first,
   * and `totalEvents`, the full count. With `all: true` every matching event is returned.
   */
  list(options?: AdminEventsListOptions): Promise<AdminEventList>;
  /**
   * `GET /api/admin/events/<name>`: the newest 50 events of one toggle. An unknown toggle gives an
   * empty list. With `all: true` every event of the toggle is returned.
   */
  forToggle(name: string, options?: AdminEventsToggleOptions): Promise<ToggleEventList>;
  /** One page of `GET /api/admin/search/events`, newest first, with `total`, the full count. */
  search(options?: AdminEventsSearchOptions): Promise<AdminEventSearchPage>;
  /**
   * Every matching event, newest first, fetched page by page from the search endpoint until
   * `total` is reached or a page comes back empty. `break` stops it without another request.
   * An event recorded while iterating never appears twice (it may be missed). A bad `pageSize`
   * or filter throws `BAD_REQUEST` at the call itself, before any request.
   */
  iterate(options?: AdminEventsIterateOptions): AsyncGenerator<AdminEvent, void, undefined>;
}
