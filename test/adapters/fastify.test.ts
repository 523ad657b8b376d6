/** flag-proxy/fastify: prefix, not-found and error handling, encapsulated body parsing, closing, trust, host-derived context. */
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isFlagProxyError, type FlagProxyOptions } from 'flag-proxy';
import { createFastifyPlugin, type FastifyAdapterOptions } from 'flag-proxy/fastify';
import type { TestFlagServer } from 'flag-proxy/testing';
import { openEventStream } from '../support/sse.js';
import { addressRecorder, CLIENT_KEY, enabledNames, MAPPED_FORWARDED_FOR, proxyOptions, startUpstream, throwingEnricher } from './fixtures.js';

let upstream: TestFlagServer;
beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(() => upstream.close());

const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

async function host(
  options: Partial<FlagProxyOptions> = {},
  adapter: FastifyAdapterOptions = {},
  fastifyOptions: { trustProxy?: boolean } = {},
  address: '127.0.0.1' | '::' = '127.0.0.1',
) {
  const app = Fastify(fastifyOptions);
  apps.push(app);
  const errors: unknown[] = [];
  app.setErrorHandler((error, _request, reply) => {
    errors.push(error);
    void reply.code(500).send('host error handler');
  });
  app.setNotFoundHandler((_request, reply) => void reply.code(404).send('host 404'));
  app.post('/api/echo', async (request) => ({ echoed: request.body }));
  app.addHook('onRequest', async (request) => {
    if (request.headers['x-session'] === 'session-of-7') (request as FastifyRequest & { user?: { id: string } }).user = { id: '7' };
  });
  const flags = createFastifyPlugin(proxyOptions(upstream, options), adapter);
  await app.register(flags, { prefix: '/api/flags' });
  await app.listen({ port: 0, host: address });
  await flags.proxy.ready;
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${base}${path}`, { headers: { authorization: CLIENT_KEY, ...headers } });
  return { app, flags, errors, base, get };
}

describe('createFastifyPlugin', () => {
  it("serves the proxy under the register prefix and sends other paths to the host's not-found handler", async () => {
    const h = await host();
    expect(await enabledNames(await h.get('/api/flags/proxy'))).toEqual(['everyone']);
    expect((await h.get('/api/flags/PROXY/health/')).status).toBe(200);
    const unknown = await h.get('/api/flags/proxy/unknown');
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toBe('host 404');
  });

  it("keeps its pass-through body parsing to itself: the host's JSON routes still parse", async () => {
    const h = await host();
    const echoed = await fetch(`${h.base}/api/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    expect(await echoed.json()).toEqual({ echoed: { a: 1 } });
    const malformed = await fetch(`${h.base}/api/flags/proxy`, {
      method: 'POST',
      headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' },
      body: '{bad',
    });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: string }).error).toMatch(/^We were unable to parse the data you provided/);
  });

  it('serves under a prefix with parameters, which the context hook can read', async () => {
    const app = Fastify();
    apps.push(app);
    const flags = createFastifyPlugin(proxyOptions(upstream), {
      context: (request) => ({ properties: { tenant: (request.params as { tenant: string }).tenant } }),
    });
    await app.register(flags, { prefix: '/tenants/:tenant/flags' });
    await app.listen({ port: 0, host: '127.0.0.1' });
    await flags.proxy.ready;
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const get = (path: string) => fetch(`${base}${path}`, { headers: { authorization: CLIENT_KEY } });
    expect(await enabledNames(await get('/tenants/acme/flags/proxy'))).toEqual(['everyone', 'acme-only']);
    expect(await enabledNames(await get('/tenants/other/flags/proxy?tenant=acme'))).toEqual(['everyone']);
    expect((await get('/tenants/acme/flags/proxy/health')).status).toBe(200);
  });

  it("sends unexpected errors to the host's error handler with status 500 and expose false", async () => {
    const h = await host({ expCustomEnrichers: [throwingEnricher] });
    const res = await h.get('/api/flags/proxy');
    expect(res.status).toBe(500);
    expect(await res.text()).toBe('host error handler');
    expect(isFlagProxyError(h.errors[0])).toBe(true);
    expect(h.errors[0]).toMatchObject({ code: 'INTERNAL', status: 500, expose: false });
  });

  it('replaces a spoofed userId with the one the hook derives from the Fastify request', async () => {
    const h = await host({}, { context: (request) => ({ userId: (request as FastifyRequest & { user?: { id: string } }).user?.id ?? 'anonymous' }) });
    expect(await enabledNames(await h.get('/api/flags/proxy?userId=7'))).not.toContain('only-user-7');
    expect(await enabledNames(await h.get('/api/flags/proxy?userId=1', { 'x-session': 'session-of-7' }))).toContain('only-user-7');
  });

  it("follows Fastify's trustProxy setting while the proxy's trustProxy is unset", async () => {
    const trusting = await host({}, {}, { trustProxy: true });
    expect(await enabledNames(await trusting.get('/api/flags/proxy', { 'x-forwarded-for': '10.0.0.1' }))).toContain('from-10-0-0-1');
    const plain = await host();
    expect(await enabledNames(await plain.get('/api/flags/proxy', { 'x-forwarded-for': '10.0.0.1' }))).not.toContain('from-10-0-0-1');
  });

  it('gives an IPv4 client the IPv4 form of its address when request.ip has the mapped one (server on ::)', async () => {
    const { seen, options } = addressRecorder();
    const h = await host(options, {}, { trustProxy: true }, '::');
    expect(await enabledNames(await h.get('/api/flags/proxy', MAPPED_FORWARDED_FOR))).toContain('from-10-0-0-1');
    expect(await enabledNames(await h.get('/api/flags/proxy'))).toEqual(['everyone']);
    expect(seen).toEqual(['10.0.0.1', '127.0.0.1']);
  });

  it('closes the proxy it created when the Fastify instance closes', async () => {
    const h = await host({ refreshInterval: 50 });
    await h.app.close();
    const fetches = () => upstream.requests.filter((r) => r.path === '/api/client/features').length;
    const after = fetches();
    await new Promise((r) => setTimeout(r, 200));
    expect(fetches()).toBe(after);
  });

  it('ends open event streams when the Fastify instance closes, so close() does not wait for the clients', async () => {
    const h = await host({ expServerSideSdkConfig: { tokens: ['fastify-server-token'] } });
    const stream = await openEventStream(`${h.base}/api/flags/api/client/streaming`, { authorization: 'fastify-server-token' });
    await stream.event(0);
    const closed = await Promise.race([h.app.close().then(() => 'closed'), new Promise((r) => setTimeout(() => r('still waiting'), 3000))]);
    expect(closed).toBe('closed');
    await stream.ended;
    stream.close();
  });
});
