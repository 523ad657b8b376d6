import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAdminEventLog } from '../../src/testing/admin-event-log.js';
import { ADMIN_TOKEN, CLIENT_TOKEN, startLogServer } from './helpers.js';

type LogServer = Awaited<ReturnType<typeof startLogServer>>;

describe('createAdminEventLog', () => {
  let server: LogServer;
  beforeAll(async () => {
    server = await startLogServer();
  });
  afterAll(() => server.close());
  beforeEach(() => server.log.clear());

  /** `token: null` sends no Authorization header. */
  const get = async (path: string, token: string | null = ADMIN_TOKEN, method = 'GET') => {
    const res = await fetch(`${server.url}${path}`, { method, headers: token === null ? {} : { authorization: token } });
    return { status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as Record<string, any> };
  };

  const fill = (count: number, input: Parameters<LogServer['log']['record']>[0]) => {
    for (let i = 0; i < count; i++) server.log.record(input);
  };

  describe('record', () => {
    it('assigns increasing ids and an ISO timestamp with milliseconds, with defaults', () => {
      const a = server.log.record({ type: 'feature-created', featureName: 'a', project: 'default' });
      const b = server.log.record({ type: 'feature-archived', featureName: 'a', project: 'default', createdBy: 'ci' });
      expect(b.id).toBe(a.id + 1);
      expect(a.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(a).toEqual({
        id: a.id,
        type: 'feature-created',
        createdBy: 'test-admin',
        createdAt: a.createdAt,
        createdByUserId: null,
        data: null,
        preData: null,
        tags: [],
        featureName: 'a',
        project: 'default',
        environment: null,
      });
      expect(b.createdBy).toBe('ci');
    });

    it('snapshots data: later changes to the caller object do not show', () => {
      const data = { name: 'a', enabled: true };
      server.log.record({ type: 'feature-updated', data, tags: [{ type: 'simple', value: 'x' }] });
      data.enabled = false;
      expect(server.log.events()[0]?.data).toEqual({ name: 'a', enabled: true });
    });

    it('returns copies from events(), oldest first', () => {
      server.log.record({ type: 'feature-created' });
      server.log.record({ type: 'feature-updated' });
      const copy = server.log.events();
      expect(copy.map((e) => e.type)).toEqual(['feature-created', 'feature-updated']);
      copy[0]!.type = 'tampered';
      expect(server.log.events()[0]?.type).toBe('feature-created');
    });

    it('keeps ids increasing across clear()', () => {
      const before = server.log.record({ type: 'feature-created' });
      server.log.clear();
      expect(server.log.events()).toEqual([]);
      expect(server.log.record({ type: 'feature-created' }).id).toBe(before.id + 1);
    });

    it('throws for an event without a type', () => {
      expect(() => server.log.record({ type: '' })).toThrow(TypeError);
    });

    it('throws without adminTokens', () => {
      expect(() => createAdminEventLog({} as never)).toThrow(/adminTokens/);
    });
  });

  describe('auth', () => {
    it('answers 401 JSON with a message without a token', async () => {
      const res = await get('/api/admin/events', null);
      expect(res.status).toBe(401);
      expect(res.type).toMatch(/^application\/json/);
      expect(typeof res.body.message).toBe('string');
    });

    it('answers 401 for an unknown token', async () => {
      expect((await get('/api/admin/search/events', 'who-knows')).status).toBe(401);
    });

    it('answers 403 JSON with a message for a client token on every endpoint', async () => {
      for (const path of ['/api/admin/events', '/api/admin/events/x', '/api/admin/search/events']) {
        const res = await get(path, CLIENT_TOKEN);
        expect(res.status).toBe(403);
        expect(typeof res.body.message).toBe('string');
      }
    });

    it('answers 405 to an admin POST', async () => {
      expect((await get('/api/admin/events', ADMIN_TOKEN, 'POST')).status).toBe(405);
    });

    it('leaves other paths to the host (handle returns false)', async () => {
      const res = await fetch(`${server.url}/api/admin/features`, { headers: { authorization: ADMIN_TOKEN } });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ message: 'not found' });
    });
  });

  describe('GET /api/admin/events', () => {
    it('answers the newest 100, newest first, with totalEvents counting all', async () => {
      fill(120, { type: 'feature-updated', featureName: 'f', project: 'p' });
      const res = await get('/api/admin/events');
      expect(res.status).toBe(200);
      expect(res.body.version).toBe(1);
      expect(res.body.totalEvents).toBe(120);
      expect(res.body.events).toHaveLength(100);
      const ids = res.body.events.map((e: { id: number }) => e.id);
      expect(ids[0]).toBe(server.log.events().at(-1)?.id);
      expect(ids).toEqual([...ids].sort((a: number, b: number) => b - a));
    });

    it('answers at most 50 of a project, and [] with totalEvents 0 for an unknown one', async () => {
      fill(70, { type: 'feature-updated', featureName: 'f', project: 'p' });
      fill(5, { type: 'feature-updated', featureName: 'g', project: 'q' });
      const p = await get('/api/admin/events?project=p');
      expect(p.body.events).toHaveLength(50);
      expect(p.body.totalEvents).toBe(70);
      expect(p.body.events.every((e: { project: string }) => e.project === 'p')).toBe(true);
      expect((await get('/api/admin/events?project=nope')).body).toEqual({ version: 1, events: [], totalEvents: 0 });
    });
  });

  describe('GET /api/admin/events/<name>', () => {
    it('answers at most 50 of the toggle with its name, and [] for an unknown one', async () => {
      fill(55, { type: 'feature-updated', featureName: 'the toggle', project: 'p' });
      const res = await get('/api/admin/events/the%20toggle');
      expect(res.body).toMatchObject({ version: 1, toggleName: 'the toggle', totalEvents: 55 });
      expect(res.body.events).toHaveLength(50);
      expect((await get('/api/admin/events/unknown')).body).toEqual({
        version: 1,
        toggleName: 'unknown',
        events: [],
        totalEvents: 0,
      });
    });
  });

  describe('GET /api/admin/search/events', () => {
    beforeEach(() => {
      fill(1200, { type: 'feature-updated', featureName: 'bulk', project: 'p' });
      server.log.record({ type: 'feature-created', featureName: 'checkout', project: 'shop', createdBy: 'ann' });
      server.log.record({ type: 'feature-environment-enabled', featureName: 'checkout', project: 'shop', environment: 'production' });
      server.log.record({ type: 'feature-environment-disabled', featureName: 'checkout', project: 'shop', environment: 'production' });
    });

    it('pages 50 by default and up to 1000, falling back to 50 above', async () => {
      expect((await get('/api/admin/search/events')).body.events).toHaveLength(50);
      expect((await get('/api/admin/search/events?limit=1000')).body.events).toHaveLength(1000);
      const over = await get('/api/admin/search/events?limit=1001');
      expect(over.body.events).toHaveLength(50);
      expect(over.body.total).toBe(1203);
      expect(over.body).not.toHaveProperty('version');
    });

    it('skips offset events, newest first', async () => {
      const first = await get('/api/admin/search/events?limit=3');
      const second = await get('/api/admin/search/events?limit=3&offset=2');
      expect(second.body.events[0].id).toBe(first.body.events[2].id);
      expect(first.body.events.map((e: { type: string }) => e.type)).toEqual([
        'feature-environment-disabled',
        'feature-environment-enabled',
        'feature-created',
      ]);
    });

    it('filters by project, feature and type (IS and IS_ANY_OF)', async () => {
      expect((await get('/api/admin/search/events?project=IS:shop')).body.total).toBe(3);
      expect((await get('/api/admin/search/events?feature=IS:checkout&type=IS:feature-created')).body.total).toBe(1);
      const types = await get(
        '/api/admin/search/events?type=IS_ANY_OF:feature-environment-enabled,feature-environment-disabled',
      );
      expect(types.body.total).toBe(2);
      expect((await get('/api/admin/search/events?project=IS_NOT:p')).body.total).toBe(3);
    });

    it('adds a label and a summary to each event', async () => {
      const res = await get('/api/admin/search/events?project=IS:shop');
      for (const e of res.body.events) {
        expect(typeof e.label).toBe('string');
        expect(typeof e.summary).toBe('string');
      }
      expect(res.body.events[1]).toMatchObject({ label: 'Flag enabled', summary: expect.stringContaining('production') });
      expect(res.body.events[2].summary).toContain('ann');
      expect(server.log.events().at(-1)).not.toHaveProperty('label');
    });

    it('answers 400 for a filter without an operator or a bad limit', async () => {
      expect((await get('/api/admin/search/events?project=shop')).status).toBe(400);
      expect((await get('/api/admin/search/events?limit=-1')).status).toBe(400);
    });
  });
});
