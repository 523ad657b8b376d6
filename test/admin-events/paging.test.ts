import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminEventsClient, isFlagProxyError, type AdminEvent, type AdminEventsClient } from 'flag-proxy/admin-events';
import { ADMIN_TOKEN, clientAnswering, eventRecord, rejectionOf, startLogServer, thrownBy } from './helpers.js';

type LogServer = Awaited<ReturnType<typeof startLogServer>>;

const searchRequests = (server: LogServer, from: number) =>
  server.requests.slice(from).filter((r) => r.url.startsWith('/api/admin/search/events'));

const paramsOf = (url: string) => Object.fromEntries(new URL(url, 'http://x').searchParams);

describe('AdminEventsClient paging past the server caps', () => {
  let server: LogServer;
  let client: AdminEventsClient;

  beforeAll(async () => {
    server = await startLogServer();
    // 130 events in project "big" (60 of them on toggle "busy"), 20 elsewhere: 150 in all.
    for (let i = 0; i < 130; i++) {
      server.log.record({
        type: i % 2 === 0 ? 'feature-environment-enabled' : 'feature-environment-disabled',
        featureName: i < 60 ? 'busy' : `quiet-${i}`,
        project: 'big',
        environment: 'development',
      });
    }
    for (let i = 0; i < 20; i++) server.log.record({ type: 'feature-created', featureName: `other-${i}`, project: 'other' });
    client = createAdminEventsClient({ flagUrl: `${server.url}/api/`, adminToken: ADMIN_TOKEN });
  });
  afterAll(() => server.close());

  const expectNewestFirstAndUnique = (events: AdminEvent[]) => {
    const ids = events.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);
  };

  describe('list', () => {
    it('gets 50 of a project from the capped feed, with totalEvents 130', async () => {
      const result = await client.list({ project: 'big' });
      expect(result.events).toHaveLength(50);
      expect(result.totalEvents).toBe(130);
    });

    it('gets all 130 of a project with all: true', async () => {
      const result = await client.list({ project: 'big', all: true });
      expect(result.version).toBe(1);
      expect(result.events).toHaveLength(130);
      expect(result.totalEvents).toBe(130);
      expect(result.events.every((e) => e.project === 'big')).toBe(true);
      expectNewestFirstAndUnique(result.events);
    });

    it('gets 100 of the instance from the capped feed and all 150 with all: true', async () => {
      const capped = await client.list();
      expect(capped.events).toHaveLength(100);
      expect(capped.totalEvents).toBe(150);
      const all = await client.list({ all: true });
      expect(all.events).toHaveLength(150);
      expectNewestFirstAndUnique(all.events);
    });
  });

  describe('forToggle', () => {
    it('gets 50 of a toggle from the capped feed and all 60 with all: true', async () => {
      const capped = await client.forToggle('busy');
      expect(capped.events).toHaveLength(50);
      expect(capped.totalEvents).toBe(60);
      const all = await client.forToggle('busy', { all: true });
      expect(all).toMatchObject({ version: 1, toggleName: 'busy', totalEvents: 60 });
      expect(all.events).toHaveLength(60);
      expect(all.events.every((e) => e.featureName === 'busy')).toBe(true);
    });
  });

  describe('iterate', () => {
    it('pages with limit/offset and stops at total without an extra request', async () => {
      const before = server.requests.length;
      const ids: number[] = [];
      for await (const event of client.iterate({ project: 'big', pageSize: 25 })) ids.push(event.id);
      expect(ids).toHaveLength(130);
      const pages = searchRequests(server, before).map((r) => paramsOf(r.url));
      expect(pages).toEqual(
        [0, 25, 50, 75, 100, 125].map((offset) => ({ project: 'IS:big', limit: '25', offset: String(offset) })),
      );
    });

    it('stops fetching when the caller breaks early', async () => {
      const before = server.requests.length;
      let seen = 0;
      for await (const _event of client.iterate({ project: 'big', pageSize: 10 })) {
        if (++seen === 30) break;
      }
      expect(seen).toBe(30);
      expect(searchRequests(server, before)).toHaveLength(3);
    });

    it('filters by feature and by one or several types', async () => {
      const before = server.requests.length;
      const busy: AdminEvent[] = [];
      for await (const e of client.iterate({ feature: 'busy', type: 'feature-environment-enabled' })) busy.push(e);
      expect(busy).toHaveLength(30);
      expect(busy.every((e) => e.featureName === 'busy' && e.type === 'feature-environment-enabled')).toBe(true);

      const both: AdminEvent[] = [];
      for await (const e of client.iterate({ type: ['feature-created', 'feature-environment-disabled'] })) both.push(e);
      expect(both).toHaveLength(20 + 65);

      const params = searchRequests(server, before).map((r) => paramsOf(r.url));
      expect(params[0]).toMatchObject({ feature: 'IS:busy', type: 'IS:feature-environment-enabled', limit: '100' });
      expect(params.at(-1)).toMatchObject({ type: 'IS_ANY_OF:feature-created,feature-environment-disabled' });
    });

    it('search events carry label and summary, kept by the client', async () => {
      const page = await client.search({ project: 'other', limit: 2, offset: 1 });
      expect(page.total).toBe(20);
      expect(page.events.map((e) => e.featureName)).toEqual(['other-18', 'other-17']);
      expect(page.events[0]).toMatchObject({ label: 'Flag created', summary: expect.stringContaining('other-18') });
    });

    it('never yields an event twice when events are recorded while paging', async () => {
      const extra = await startLogServer();
      try {
        for (let i = 0; i < 30; i++) extra.log.record({ type: 'feature-updated', featureName: 'f', project: 'p' });
        const pager = createAdminEventsClient({ flagUrl: extra.url, adminToken: ADMIN_TOKEN });
        const ids: number[] = [];
        for await (const event of pager.iterate({ project: 'p', pageSize: 10 })) {
          ids.push(event.id);
          // New events land at the head and shift every later page by one.
          if (ids.length % 10 === 5) extra.log.record({ type: 'feature-updated', featureName: 'f', project: 'p' });
        }
        expect(new Set(ids).size).toBe(ids.length);
        expect(ids.filter((id) => id <= 30).sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
      } finally {
        await extra.close();
      }
    });

    it('stops on an empty page even when total promises more', async () => {
      const { client: pager, urls } = clientAnswering('http://flags.test', (url) => {
        const offset = Number(new URL(url).searchParams.get('offset'));
        const events = offset === 0 ? [eventRecord({ id: 2 }), eventRecord({ id: 1 })] : [];
        return new Response(JSON.stringify({ events, total: 1000 }));
      });
      const ids: number[] = [];
      for await (const e of pager.iterate({ pageSize: 2 })) ids.push(e.id);
      expect(ids).toEqual([2, 1]);
      expect(urls).toHaveLength(2);
    });

    it('throws BAD_REQUEST at the call for a pageSize outside 1..1000, before any request', () => {
      for (const pageSize of [0, 1001, 2.5]) {
        const caught = thrownBy(() => client.iterate({ pageSize }));
        expect(isFlagProxyError(caught) && caught.code).toBe('BAD_REQUEST');
      }
    });

    it('rejects search() limits the server would silently replace', async () => {
      const err = await rejectionOf(client.search({ limit: 5000 }));
      expect(isFlagProxyError(err) && err.code).toBe('BAD_REQUEST');
    });
  });
});
