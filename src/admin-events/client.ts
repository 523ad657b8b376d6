/**
 * A typed client for the flag server's read-only admin events API. The legacy feeds cap their
 * answers (100 events, or 50 for a project or a toggle), so full history is read from
 * `GET /api/admin/search/events`, page by page (paging.ts). The mountable feed that serves the
 * same events to a host's own users is in feed.ts; the transport in upstream.ts.
 */
import { optionalName, resolveClientOptions, toggleSegment } from './checks.js';
import { createPaging } from './paging.js';
import { adminEventListSchema, toggleEventListSchema, type AdminEventList, type ToggleEventList } from './schemas.js';
import type { AdminEventsClient, AdminEventsClientOptions, AdminEventsListOptions, AdminEventsToggleOptions } from './types.js';
import { createGetJson } from './upstream.js';

export type {
  AdminEventsClient,
  AdminEventsClientOptions,
  AdminEventsFetch,
  AdminEventsFilter,
  AdminEventsIterateOptions,
  AdminEventsListOptions,
  AdminEventsSearchOptions,
  AdminEventsToggleOptions,
} from './types.js';

/**
 * Creates a client for the flag server's admin events API. Options are validated here, so a bad
 * URL or a missing token fails at once with code `INVALID_OPTION`. Nothing runs until a method is
 * called.
 *
 * @example
 * ```ts
 * import { createAdminEventsClient } from 'flag-proxy/admin-events';
 *
 * const client = createAdminEventsClient({
 *   flagUrl: 'https://flags.example.com/api/',
 *   adminToken: process.env.FLAG_ADMIN_TOKEN!,
 * });
 * const recent = await client.list({ project: 'default' });          // at most 50
 * const everything = await client.list({ project: 'default', all: true });
 * for await (const event of client.iterate({ feature: 'checkout' })) {
 *   if (event.type === 'feature-created') break;
 * }
 * ```
 */
export function createAdminEventsClient(options: AdminEventsClientOptions): AdminEventsClient {
  const getJson = createGetJson(resolveClientOptions(options));
  const paging = createPaging(getJson);

  return {
    async list(opts: AdminEventsListOptions = {}): Promise<AdminEventList> {
      const project = optionalName('project', opts.project);
      if (opts.all === true) {
        const events = await paging.collect({ project, signal: opts.signal });
        return { version: 1, events, totalEvents: events.length };
      }
      const query = project === undefined ? undefined : new URLSearchParams({ project });
      return getJson('api/admin/events', query, adminEventListSchema, opts.signal);
    },

    async forToggle(name: string, opts: AdminEventsToggleOptions = {}): Promise<ToggleEventList> {
      const segment = toggleSegment(name);
      if (opts.all === true) {
        const events = await paging.collect({ feature: name, signal: opts.signal });
        return { version: 1, toggleName: name, events, totalEvents: events.length };
      }
      return getJson(`api/admin/events/${segment}`, undefined, toggleEventListSchema, opts.signal);
    },

    search: paging.search,
    iterate: paging.iterate,
  };
}
