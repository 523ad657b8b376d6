/**
 * The read-only events feed mounted in Koa, with the recipe the README gives: a few lines that hand
 * Koa's node request and response to the handler, as the proxy's own Koa adapter does.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminEventsHandler, type AdminEventsHandler } from 'flag-proxy/admin-events';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { feature } from '../support/harness.js';

/** The README's recipe: mount a Connect-style handler under a Koa prefix. */
function koaMount(prefix: string, handler: AdminEventsHandler): Koa.Middleware {
  return (ctx, next) => {
    if (ctx.path !== prefix && !ctx.path.startsWith(`${prefix}/`)) return next();
    const original = ctx.req.url;
    ctx.req.url = ctx.req.url!.slice(prefix.length) || '/';
    return new Promise<void>((resolve, reject) => {
      ctx.respond = false; // the handler writes the answer itself
      ctx.res.once('finish', resolve);
      handler(ctx.req, ctx.res, (err?: unknown) => {
        ctx.req.url = original;
        ctx.respond = true;
        if (err) reject(err);
        else resolve(next());
      });
    });
  };
}

describe('createAdminEventsHandler in Koa', () => {
  let upstream: TestFlagServer;
  let server: Server;
  let base: string;
  const seen: string[] = [];

  beforeAll(async () => {
    upstream = await createTestFlagServer({ features: [feature('a', { project: 'web' }), feature('b')] });
    const app = new Koa();
    app.use(
      koaMount(
        '/audit',
        createAdminEventsHandler({
          client: { flagUrl: upstream.url, adminToken: upstream.adminToken },
          authorize: (req) => req.headers['x-role'] === 'auditor',
        }),
      ),
    );
    app.use((ctx) => {
      seen.push(ctx.path);
      ctx.body = 'host route';
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await upstream.close();
  });

  it('serves the feed to authorized callers, passing project through, and never the caller’s Authorization', async () => {
    // The test flag server refuses any token but its admin token (401, answered as 502 by the
    // feed): a 200 means the caller's own Authorization never went upstream.
    const res = await fetch(`${base}/audit/events?project=web`, { headers: { 'x-role': 'auditor', authorization: 'caller-secret' } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { events: Array<{ featureName: string }> };
    expect(body.events.map((e) => e.featureName)).toEqual(['a']);
  });

  it('answers 403 without authorization and leaves other paths to Koa', async () => {
    expect((await fetch(`${base}/audit/events`)).status).toBe(403);
    const other = await fetch(`${base}/orders`);
    expect(await other.text()).toBe('host route');
    expect(seen).toContain('/orders');
  });
});
