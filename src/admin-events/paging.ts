/**
 * Full history past the legacy feeds' caps: `GET /api/admin/search/events`, one page or page by
 * page until the total is reached.
 */
import { checkInteger, filterQuery } from './checks.js';
import { adminEventSearchPageSchema, type AdminEvent, type AdminEventSearchPage } from './schemas.js';
import type { AdminEventsFilter, AdminEventsIterateOptions, AdminEventsSearchOptions } from './types.js';
import type { GetJson } from './upstream.js';

const SEARCH_DEFAULT_LIMIT = 50;
const SEARCH_MAX_LIMIT = 1000;
const DEFAULT_PAGE_SIZE = 100;

/** The client's paging methods over one way to the flag server. */
export interface Paging {
  search(opts?: AdminEventsSearchOptions): Promise<AdminEventSearchPage>;
  iterate(opts?: AdminEventsIterateOptions): AsyncGenerator<AdminEvent, void, undefined>;
  /** Every event matching `filter`, read page by page. */
  collect(filter: AdminEventsFilter): Promise<AdminEvent[]>;
}

/** Makes the paging methods of a client. */
export function createPaging(getJson: GetJson): Paging {
  async function search(opts: AdminEventsSearchOptions = {}): Promise<AdminEventSearchPage> {
    const limit = opts.limit ?? SEARCH_DEFAULT_LIMIT;
    const offset = opts.offset ?? 0;
    checkInteger('limit', limit, 1, SEARCH_MAX_LIMIT);
    checkInteger('offset', offset, 0, Number.MAX_SAFE_INTEGER);
    const query = filterQuery(opts);
    query.set('limit', String(limit));
    query.set('offset', String(offset));
    return getJson('api/admin/search/events', query, adminEventSearchPageSchema, opts.signal);
  }

  function iterate(opts: AdminEventsIterateOptions = {}): AsyncGenerator<AdminEvent, void, undefined> {
    const pageSize = opts.pageSize ?? DEFAULT_PAGE_SIZE;
    checkInteger('pageSize', pageSize, 1, SEARCH_MAX_LIMIT);
    filterQuery(opts); // validate now, not on the first next()
    return pages({ ...opts, pageSize });
  }

  async function* pages(opts: AdminEventsIterateOptions & { pageSize: number }): AsyncGenerator<AdminEvent, void, undefined> {
    // Offsets count from the newest event, so one recorded mid-way shifts the next page by one;
    // remembering ids keeps such an event from being yielded twice.
    const seen = new Set<number>();
    let offset = 0;
    for (;;) {
      const page = await search({ ...opts, limit: opts.pageSize, offset });
      for (const event of page.events) {
        if (seen.has(event.id)) continue;
        seen.add(event.id);
        yield event;
      }
      offset += page.events.length;
      if (page.events.length === 0 || offset >= page.total) return;
    }
  }

  async function collect(filter: AdminEventsFilter): Promise<AdminEvent[]> {
    const events: AdminEvent[] = [];
    for await (const event of iterate(filter)) events.push(event);
    return events;
  }

  return { search, iterate, collect };
}
