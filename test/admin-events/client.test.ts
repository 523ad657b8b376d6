import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminEventsClient, isFlagProxyError, type AdminEventsClient } from 'flag-proxy/admin-events';
import {
  ADMIN_TOKEN,
  eventRecord,
  everythingIn,
  fakeFetch,
  rejectionOf,
  startLogServer,
  thrownBy,
  startServer,
  type TestServer,
} from './helpers.js';

function expectCode(err: unknown, code: string): void {
  expect(isFlagProxyError(err)).toBe(true);
  expect((err as { code: string }).code).toBe(code);
}

describe('createAdminEventsClient', () => {
  describe('options', () => {
    it('throws INVALID_OPTION when adminToken is missing or blank', () => {
      for (const adminToken of [undefined, '', '   ']) {
        const caught = thrownBy(() =>
          createAdminEventsClient({ flagUrl: 'http://127.0.0.1:1/api/', adminToken: adminToken as string }),
        );
        expectCode(caught, 'INVALID_OPTION');
        expect((caught as Error).message).toMatch(/adminToken.*FLAG_ADMIN_TOKEN/);
      }
    });

    it('throws INVALID_OPTION naming FLAG_URL when flagUrl is not an http(s) URL', () => {
      for (const flagUrl of ['not a url', 'ftp://flags.example.com/api/', undefined]) {
        expect(() => createAdminEventsClient({ flagUrl: flagUrl as string, adminToken: ADMIN_TOKEN })).toThrow(/FLAG_URL/);
      }
    });

    it('throws INVALID_OPTION when flagUrl carries credentials, without echoing them', () => {
      const flagUrl = 'https://user:hunter2@flags.example.com/api/';
      const caught = thrownBy(() => createAdminEventsClient({ flagUrl, adminToken: ADMIN_TOKEN }));
      expectCode(caught, 'INVALID_OPTION');
      expect(everythingIn(caught)).not.toContain('hunter2');
    });

    it('throws INVALID_OPTION for a timeoutMs that is negative or not an integer', () => {
      for (const timeoutMs of [-1, 1.5, Number.NaN]) {
        expect(() => createAdminEventsClient({ flagUrl: 'http://127.0.0.1:1', adminToken: ADMIN_TOKEN, timeoutMs })).toThrow(
          /timeoutMs/,
        );
      }
    });

    it('throws INVALID_OPTION for a token that cannot be a header value, without echoing it', () => {
      const badToken = `${ADMIN_TOKEN}\r\nx-evil: 1`;
      const caught = thrownBy(() => createAdminEventsClient({ flagUrl: 'http://127.0.0.1:1', adminToken: badToken }));
      expectCode(caught, 'INVALID_OPTION');
      expect(everythingIn(caught)).not.toContain(ADMIN_TOKEN);
    });

    it('does not mutate the options object', () => {
      const options = Object.freeze({ flagUrl: 'http://127.0.0.1:1/api/', adminToken: ADMIN_TOKEN });
      expect(() => createAdminEventsClient(options)).not.toThrow();
      expect(options).toEqual({ flagUrl: 'http://127.0.0.1:1/api/', adminToken: ADMIN_TOKEN });
    });
  });

  describe('flagUrl', () => {
    let spy: TestServer;
    beforeAll(async () => {
      spy = await startServer((_req, res) => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ version: 1, events: [], totalEvents: 0 }));
      });
    });
    afterAll(() => spy.close());

    it.each([
      ['the API URL with a slash', '/api/', '/api/admin/events'],
      ['the API URL without a slash', '/api', '/api/admin/events'],
      ['the bare root', '', '/api/admin/events'],
      ['the root with a slash', '/', '/api/admin/events'],
      ['an API URL under a path prefix', '/unleash/api/', '/unleash/api/admin/events'],
      ['a root under a path prefix', '/unleash', '/unleash/api/admin/events'],
    ])('reaches <root>/api/admin/events from %s', async (_label, suffix, expected) => {
      const before = spy.requests.length;
      const client = createAdminEventsClient({ flagUrl: `${spy.url}${suffix}`, adminToken: ADMIN_TOKEN });
      await client.list();
      expect(spy.requests.slice(before).map((r) => r.url)).toEqual([expected]);
    });

    it('accepts a URL object', async () => {
      const before = spy.requests.length;
      await createAdminEventsClient({ flagUrl: new URL(`${spy.url}/api/`), adminToken: ADMIN_TOKEN }).list();
      expect(spy.requests[before]?.url).toBe('/api/admin/events');
    });

    it('sends the admin token as Authorization and asks for JSON', async () => {
      const before = spy.requests.length;
      await createAdminEventsClient({ flagUrl: spy.url, adminToken: ADMIN_TOKEN }).list({ project: 'web shop' });
      const seen = spy.requests[before]!;
      expect(seen.method).toBe('GET');
      expect(seen.url).toBe('/api/admin/events?project=web+shop');
      expect(seen.headers.authorization).toBe(ADMIN_TOKEN);
      expect(seen.headers.accept).toBe('application/json');
    });
  });

  describe('against the in-memory flag server', () => {
    let server: Awaited<ReturnType<typeof startLogServer>>;
    let client: AdminEventsClient;
    beforeAll(async () => {
      server = await startLogServer();
      for (let i = 0; i < 3; i++) server.log.record({ type: 'feature-created', featureName: `f${i}`, project: 'default' });
      server.log.record({ type: 'feature-environment-enabled', featureName: 'a b/c?d', project: 'default', environment: 'production' });
      server.log.record({ type: 'tag-created', data: { type: 'simple', value: 'x' } });
      client = createAdminEventsClient({ flagUrl: `${server.url}/api/`, adminToken: ADMIN_TOKEN });
    });
    afterAll(() => server.close());

    it('lists events newest first with version and totalEvents', async () => {
      const result = await client.list();
      expect(result.version).toBe(1);
      expect(result.totalEvents).toBe(5);
      expect(result.events.map((e) => e.id)).toEqual([5, 4, 3, 2, 1]);
      expect(result.events[0]).toMatchObject({ type: 'tag-created', featureName: null, project: null, environment: null });
    });

    it('returns an empty list with totalEvents 0 for an unknown project', async () => {
      await expect(client.list({ project: 'no-such-project' })).resolves.toEqual({ version: 1, events: [], totalEvents: 0 });
    });

    it('URL-encodes the toggle name and returns its events', async () => {
      const before = server.requests.length;
      const result = await client.forToggle('a b/c?d');
      expect(server.requests[before]?.url).toBe('/api/admin/events/a%20b%2Fc%3Fd');
      expect(result.toggleName).toBe('a b/c?d');
      expect(result.events).toHaveLength(1);
      expect(result.events[0]).toMatchObject({ type: 'feature-environment-enabled', environment: 'production' });
    });

    it('returns an empty list for an unknown toggle', async () => {
      await expect(client.forToggle('no-such-toggle')).resolves.toEqual({
        version: 1,
        toggleName: 'no-such-toggle',
        events: [],
        totalEvents: 0,
      });
    });

    it('throws BAD_REQUEST for a toggle name that cannot be put in a path', async () => {
      for (const name of ['', '.', '..']) {
        const err = await rejectionOf(client.forToggle(name));
        expectCode(err, 'BAD_REQUEST');
      }
      expect(server.requests.some((r) => !r.url.startsWith('/api/admin/'))).toBe(false);
    });

    it('throws BAD_REQUEST for an empty project', async () => {
      expectCode(await rejectionOf(client.list({ project: '' })), 'BAD_REQUEST');
    });
  });

  describe('response schema', () => {
    const clientFor = (body: unknown) =>
      createAdminEventsClient({ flagUrl: 'http://flags.test/api/', adminToken: ADMIN_TOKEN, fetch: fakeFetch(body).fetch });

    it('accepts null data and preData, and missing featureName, project and environment', async () => {
      const event = eventRecord({ data: null, preData: null });
      delete event.featureName;
      delete event.project;
      delete event.environment;
      const result = await clientFor({ version: 1, events: [event] }).list();
      expect(result.events[0]).toEqual(event);
      expect(result.totalEvents).toBeUndefined();
    });

    it('keeps unknown fields on events and on the body', async () => {
      const event = eventRecord({ groupType: 'transaction', groupId: '01ABC', label: 'Flag created', somethingNew: { a: [1] } });
      const body = { version: 1, events: [event], totalEvents: 1, nextCursor: 'x' };
      await expect(clientFor(body).list()).resolves.toEqual(body);
    });

    it('accepts an empty event list', async () => {
      await expect(clientFor({ version: 1, events: [], totalEvents: 0 }).list()).resolves.toEqual({
        version: 1,
        events: [],
        totalEvents: 0,
      });
    });

    it('accepts a toggle feed without version', async () => {
      await expect(clientFor({ toggleName: 'x', events: [] }).forToggle('x')).resolves.toEqual({ toggleName: 'x', events: [] });
    });

    it('throws INVALID_RESPONSE naming events[3].createdAt when a timestamp is not ISO-8601', async () => {
      const events = [1, 2, 3, 4].map((id) => eventRecord({ id }));
      events[3]!.createdAt = 'yesterday';
      const err = await rejectionOf(clientFor({ version: 1, events }).list());
      expectCode(err, 'INVALID_RESPONSE');
      expect((err as Error).message).toContain('events[3].createdAt');
      expect((err as { details: { issues: { path: string }[] } }).details.issues[0]?.path).toBe('events[3].createdAt');
      expect((err as { status: number }).status).toBe(502);
    });

    it.each([
      ['a non-integer id', { id: 1.5 }, 'events[0].id'],
      ['data that is an array', { data: [1, 2] }, 'events[0].data'],
      ['a tag without value', { tags: [{ type: 'simple' }] }, 'events[0].tags[0].value'],
      ['a numeric featureName', { featureName: 3 }, 'events[0].featureName'],
    ])('throws INVALID_RESPONSE for %s', async (_label, overrides, path) => {
      const err = await rejectionOf(clientFor({ version: 1, events: [eventRecord(overrides)] }).list());
      expectCode(err, 'INVALID_RESPONSE');
      expect((err as Error).message).toContain(path);
    });

    it('throws INVALID_RESPONSE naming toggleName when the toggle feed lacks it', async () => {
      const err = await rejectionOf(clientFor({ version: 1, events: [] }).forToggle('x'));
      expectCode(err, 'INVALID_RESPONSE');
      expect((err as Error).message).toContain('toggleName');
    });

    it('throws INVALID_RESPONSE naming (root) when the body is not an object', async () => {
      const err = await rejectionOf(clientFor([]).list());
      expectCode(err, 'INVALID_RESPONSE');
      expect((err as Error).message).toContain('(root)');
    });
  });
});
