import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createAdminEventsClient,
  createAdminEventsHandler,
  isFlagProxyError,
  type AdminEventsHandler,
} from 'flag-proxy/admin-events';
import { ADMIN_TOKEN, startFixedServer, startLogServer, startServer, thrownBy, type TestServer } from './helpers.js';

type LogServer = Awaited<ReturnType<typeof startLogServer>>;

// Express is not a dependency; when a copy happens to be resolvable the same checks run through it.
const expressName = 'express';
const express: any = await import(/* @vite-ignore */ expressName).then(
  (m: { default: unknown }) => m.default,
  () => undefined,
);

const CALLER_SECRET = 'caller-session-secret-91ab';
const allowAll = () => true;
const failingAuthorize = (): boolean => {
  throw new Error('session store down');
};

/** Mounts `handler` under `prefix` the way Express and Connect do: the prefix is cut from req.url. */
function mountUnder(prefix: string, handler: AdminEventsHandler): RequestListener {
  return (req, res) => {
    const original = req.url ?? '/';
    const hostFallback = (err?: unknown) => {
      req.url = original;
      res.statusCode = err === undefined ? 404 : 500;
      res.setHeader('content-type', 'text/plain');
      res.end(err === undefined ? 'host 404' : `host error ${isFlagProxyError(err) ? err.code : 'other'}`);
    };
    if (original !== prefix && !original.startsWith(`${prefix}/`) && !original.startsWith(`${prefix}?`)) {
      hostFallback();
      return;
    }
    const rest = original.slice(prefix.length);
    req.url = rest.startsWith('/') ? rest : `/${rest}`;
    handler(req, res, hostFallback);
  };
}

async function getJson(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, headers: res.headers, text, body };
}

describe('createAdminEventsHandler', () => {
  let upstream: LogServer;
  const hosts: TestServer[] = [];
  const host = async (listener: RequestListener) => {
    const s = await startServer(listener);
    hosts.push(s);
    return s;
  };

  beforeAll(async () => {
    upstream = await startLogServer();
    for (let i = 0; i < 130; i++) upstream.log.record({ type: 'feature-updated', featureName: `t${i % 3}`, project: 'big' });
    upstream.log.record({ type: 'feature-created', featureName: 'solo', project: 'small' });
  });
  afterAll(() => upstream.close());
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((s) => s.close()));
  });

  const options = () => ({ client: { flagUrl: `${upstream.url}/api/`, adminToken: ADMIN_TOKEN }, authorize: allowAll });

  describe('creation', () => {
    it('throws INVALID_OPTION without an authorize function', () => {
      for (const authorize of [undefined, null, true, 'yes']) {
        const caught = thrownBy(() => createAdminEventsHandler({ ...options(), authorize: authorize as never }));
        expect(isFlagProxyError(caught) && caught.code).toBe('INVALID_OPTION');
        expect((caught as Error).message).toMatch(/authorize/);
      }
    });

    it('throws INVALID_OPTION for bad client options, without the token in the message', () => {
      const client = { flagUrl: 'nope', adminToken: ADMIN_TOKEN };
      const caught = thrownBy(() => createAdminEventsHandler({ client, authorize: allowAll }));
      expect(isFlagProxyError(caught) && caught.code).toBe('INVALID_OPTION');
      expect((caught as Error).message).not.toContain(ADMIN_TOKEN);
    });

    it('accepts a ready client instead of options', async () => {
      const client = createAdminEventsClient({ flagUrl: upstream.url, adminToken: ADMIN_TOKEN });
      const handler = createAdminEventsHandler({ client, authorize: allowAll });
      const s = await host((req, res) => handler(req, res));
      expect((await getJson(`${s.url}/events?project=small`)).body.events).toHaveLength(1);
    });
  });

  describe('in node:http', () => {
    it('serves GET /events like client.list(), as uncacheable JSON', async () => {
      const handler = createAdminEventsHandler(options());
      const s = await host((req, res) => handler(req, res));
      const res = await getJson(`${s.url}/events`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.body.version).toBe(1);
      expect(res.body.totalEvents).toBe(131);
      expect(res.body.events).toHaveLength(100);
    });

    it('passes ?project through and pages everything with ?all=true', async () => {
      const handler = createAdminEventsHandler(options());
      const s = await host((req, res) => handler(req, res));
      const before = upstream.requests.length;
      const capped = await getJson(`${s.url}/events?project=big`);
      expect(capped.body.events).toHaveLength(50);
      expect(capped.body.totalEvents).toBe(130);
      expect(upstream.requests[before]?.url).toBe('/api/admin/events?project=big');

      const all = await getJson(`${s.url}/events?project=big&all=true`);
      expect(all.body.events).toHaveLength(130);
      expect(all.body.events.every((e: { project: string }) => e.project === 'big')).toBe(true);
      expect(upstream.requests.slice(before + 1).every((r) => r.url.includes('project=IS%3Abig'))).toBe(true);
    });

    it('serves GET /events/<toggle> with the decoded name', async () => {
      const handler = createAdminEventsHandler(options());
      const s = await host((req, res) => handler(req, res));
      const res = await getJson(`${s.url}/events/t1?all=1`);
      expect(res.status).toBe(200);
      expect(res.body.toggleName).toBe('t1');
      expect(res.body.events).toHaveLength(43);
      const unknown = await getJson(`${s.url}/events/no%20such`);
      expect(unknown.body).toEqual({ version: 1, toggleName: 'no such', events: [], totalEvents: 0 });
    });

    it('never forwards the caller Authorization header upstream', async () => {
      const handler = createAdminEventsHandler(options());
      const s = await host((req, res) => handler(req, res));
      const before = upstream.requests.length;
      const res = await getJson(`${s.url}/events?project=small`, { headers: { authorization: CALLER_SECRET } });
      expect(res.status).toBe(200);
      const seen = upstream.requests.slice(before);
      expect(seen).toHaveLength(1);
      expect(seen[0]?.headers.authorization).toBe(ADMIN_TOKEN);
      expect(JSON.stringify(seen)).not.toContain(CALLER_SECRET);
    });

    it('answers 403 JSON when authorize says no, without calling upstream', async () => {
      const seenBy: IncomingMessage[] = [];
      const handler = createAdminEventsHandler({
        ...options(),
        authorize: async (req) => {
          seenBy.push(req);
          return req.headers['x-role'] === 'auditor';
        },
      });
      const s = await host((req, res) => handler(req, res));
      const before = upstream.requests.length;
      const denied = await getJson(`${s.url}/events`, { headers: { 'x-role': 'guest' } });
      expect(denied.status).toBe(403);
      expect(denied.body).toEqual({ error: 'Forbidden' });
      expect(upstream.requests.length).toBe(before);
      expect((await getJson(`${s.url}/events`, { headers: { 'x-role': 'auditor' } })).status).toBe(200);
      expect(seenBy).toHaveLength(2);
    });

    it('answers 403 when authorize returns something truthy that is not true', async () => {
      const handler = createAdminEventsHandler({ ...options(), authorize: (() => 'yes') as never });
      const s = await host((req, res) => handler(req, res));
      expect((await getJson(`${s.url}/events`)).status).toBe(403);
    });

    it('answers 405 with Allow: GET to other methods', async () => {
      const handler = createAdminEventsHandler(options());
      const s = await host((req, res) => handler(req, res));
      const res = await getJson(`${s.url}/events`, { method: 'POST', body: '{}' });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET');
      expect(typeof res.body.error).toBe('string');
    });

    it('answers 404 JSON for unknown paths without next', async () => {
      const handler = createAdminEventsHandler(options());
      const s = await host((req, res) => handler(req, res));
      for (const path of ['/', '/event', '/events/a/b', '/eventsx']) {
        const res = await getJson(`${s.url}${path}`);
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ error: 'Not found' });
      }
    });

    it('answers 400 for a bad all value', async () => {
      const handler = createAdminEventsHandler(options());
      const s = await host((req, res) => handler(req, res));
      const res = await getJson(`${s.url}/events?all=maybe`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/all/);
    });

    it('strips its own basePath when the host does not', async () => {
      const handler = createAdminEventsHandler({ ...options(), basePath: '/audit/' });
      const s = await host((req, res) => handler(req, res));
      expect((await getJson(`${s.url}/audit/events?project=small`)).body.events).toHaveLength(1);
      expect((await getJson(`${s.url}/events`)).status).toBe(404);
    });
  });

  describe('mounted under a prefix (the host strips it, as Express does)', () => {
    it('serves <mount>/events and hands unknown paths to next()', async () => {
      const handler = createAdminEventsHandler(options());
      const s = await host(mountUnder('/audit', handler));
      const res = await getJson(`${s.url}/audit/events?project=small`);
      expect(res.status).toBe(200);
      expect(res.body.events[0].featureName).toBe('solo');
      const other = await getJson(`${s.url}/audit/other`);
      expect(other).toMatchObject({ status: 404, body: 'host 404' });
    });

    it('hands an authorize failure to next(err) as a masked INTERNAL error', async () => {
      const handler = createAdminEventsHandler({ ...options(), authorize: failingAuthorize });
      const s = await host(mountUnder('/audit', handler));
      const res = await getJson(`${s.url}/audit/events`);
      expect(res).toMatchObject({ status: 500, body: 'host error INTERNAL' });
    });

    it('answers 500 Internal error for an authorize failure without next', async () => {
      const handler = createAdminEventsHandler({ ...options(), authorize: failingAuthorize });
      const s = await host((req, res) => handler(req, res));
      const res = await getJson(`${s.url}/events`);
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: 'Internal error' });
    });
  });

  describe('upstream failures', () => {
    const viaFailingUpstream = async (upstreamServer: TestServer, timeoutMs?: number) => {
      hosts.push(upstreamServer);
      const handler = createAdminEventsHandler({
        client: { flagUrl: upstreamServer.url, adminToken: ADMIN_TOKEN, ...(timeoutMs === undefined ? {} : { timeoutMs }) },
        authorize: allowAll,
      });
      const s = await host(mountUnder('/audit', handler));
      return getJson(`${s.url}/audit/events`);
    };

    it.each([
      [401, 'UNAUTHORIZED'],
      [403, 'FORBIDDEN'],
      [404, 'NOT_FOUND'],
      [500, 'UPSTREAM'],
    ])('answers 502 JSON when upstream answers %i, without the token', async (status, code) => {
      const res = await viaFailingUpstream(await startFixedServer(status, JSON.stringify({ message: `bad ${ADMIN_TOKEN}` })));
      expect(res.status).toBe(502);
      expect(res.body.code).toBe(code);
      expect(typeof res.body.error).toBe('string');
      expect(res.text).not.toContain(ADMIN_TOKEN);
      expect(res.text).not.toContain('127.0.0.1');
    });

    it('answers 502 INVALID_RESPONSE for a broken upstream answer', async () => {
      const res = await viaFailingUpstream(await startFixedServer(200, '{"version":1,"events":[{}]}'));
      expect(res).toMatchObject({ status: 502, body: { code: 'INVALID_RESPONSE' } });
    });

    it('answers 504 when upstream is too slow', async () => {
      const res = await viaFailingUpstream(await startServer(() => undefined), 150);
      expect(res).toMatchObject({ status: 504, body: { code: 'TIMEOUT' } });
    });
  });

  describe.skipIf(express === undefined)('in Express (when resolvable)', () => {
    it('works under app.use(mount, handler) and falls through to Express for unknown paths', async () => {
      const app = express();
      app.use('/audit', createAdminEventsHandler(options()));
      app.use((_req: IncomingMessage, res: ServerResponse) => {
        res.statusCode = 404;
        res.end('express 404');
      });
      const s = await host(app);
      const res = await getJson(`${s.url}/audit/events/solo`, { headers: { authorization: CALLER_SECRET } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ toggleName: 'solo', totalEvents: 1 });
      expect(upstream.requests.at(-1)?.headers.authorization).toBe(ADMIN_TOKEN);
      expect((await getJson(`${s.url}/audit/nope`)).text).toBe('express 404');
    });
  });
});
