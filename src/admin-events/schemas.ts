/**
 * zod schemas of the flag server's admin events answers. Every object is loose: fields the server
 * adds (`createdByUserId`, `groupType`, `label`, …, or anything a later version sends) are kept
 * as they came, never stripped and never rejected.
 */
import { z } from 'zod';

/**
 * One tag attached to an event (a snapshot taken when the event was stored).
 *
 * @example
 * ```ts
 * adminEventTagSchema.parse({ type: 'simple', value: 'checkout' });
 * ```
 */
export const adminEventTagSchema = z.looseObject({
  type: z.string(),
  value: z.string(),
});

/** A nullable JSON object; arrays and scalars are refused. */
const payload = z.record(z.string(), z.unknown()).nullable();

/**
 * One event record of the flag server's admin API, as sent by `/api/admin/events` and
 * `/api/admin/search/events`. Unknown fields are kept.
 *
 * @example
 * ```ts
 * const event = adminEventSchema.parse(JSON.parse(line));
 * console.log(event.id, event.type, event.featureName ?? '-');
 * ```
 */
export const adminEventSchema = z.looseObject({
  id: z.number().int(),
  type: z.string(),
  createdBy: z.string(),
  // The server writes UTC with milliseconds; an explicit offset is tolerated rather than refused.
  createdAt: z.iso.datetime({ offset: true }),
  data: payload,
  preData: payload,
  tags: z.array(adminEventTagSchema),
  // null for events that concern no toggle, project or environment; absent on some server versions.
  featureName: z.string().nullable().optional(),
  project: z.string().nullable().optional(),
  environment: z.string().nullable().optional(),
  createdByUserId: z.number().int().nullable().optional(),
  // Only on events written inside a transaction.
  groupType: z.string().nullable().optional(),
  groupId: z.string().nullable().optional(),
  // Only on answers of the search endpoint.
  label: z.string().nullable().optional(),
  summary: z.string().nullable().optional(),
});

/** @internal Body of `GET /api/admin/events[?project=P]`. */
export const adminEventListSchema = z.looseObject({
  version: z.number().int(),
  events: z.array(adminEventSchema),
  totalEvents: z.number().int().nonnegative().optional(),
});

/** @internal Body of `GET /api/admin/events/<toggle>`. */
export const toggleEventListSchema = z.looseObject({
  version: z.number().int().optional(),
  toggleName: z.string(),
  events: z.array(adminEventSchema),
  totalEvents: z.number().int().nonnegative().optional(),
});

/** @internal Body of `GET /api/admin/search/events`. */
export const adminEventSearchPageSchema = z.looseObject({
  events: z.array(adminEventSchema),
  total: z.number().int().nonnegative(),
});

/**
 * One event record. Besides the listed fields it carries whatever else the server sent.
 *
 * @example
 * ```ts
 * const byToggle = (events: AdminEvent[]) => Map.groupBy(events, (e) => e.featureName ?? '');
 * ```
 */
export type AdminEvent = z.infer<typeof adminEventSchema>;

/**
 * A tag of an event.
 *
 * @example
 * ```ts
 * const labels = (tags: AdminEventTag[]) => tags.map((t) => `${t.type}:${t.value}`);
 * ```
 */
export type AdminEventTag = z.infer<typeof adminEventTagSchema>;

/**
 * What `list()` resolves to: `totalEvents` counts every match on the server, `events` holds the
 * ones returned (at most 100, or 50 with a project, unless `all: true`).
 *
 * @example
 * ```ts
 * const { events, totalEvents } = await client.list({ project: 'default' });
 * if ((totalEvents ?? 0) > events.length) console.warn('capped; pass all: true');
 * ```
 */
export type AdminEventList = z.infer<typeof adminEventListSchema>;

/**
 * What `forToggle()` resolves to.
 *
 * @example
 * ```ts
 * const { toggleName, events } = await client.forToggle('checkout');
 * ```
 */
export type ToggleEventList = z.infer<typeof toggleEventListSchema>;

/**
 * One page of `GET /api/admin/search/events`: `total` counts every match, `events` the page.
 *
 * @example
 * ```ts
 * const { events, total } = await client.search({ project: 'default', limit: 20, offset: 40 });
 * ```
 */
export type AdminEventSearchPage = z.infer<typeof adminEventSearchPageSchema>;
