/** flag-proxy/fetch: Request in, Response out, with no server listening; Hono on top; errors, prefix, address, host-derived context. */
import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isFlagProxyError } from 'flag-proxy';
import { createFetchHandler, type FlagProxyFetchHandler } from 'flag-proxy/fetch';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { addressRecorder, CLIENT_KEY, enabledNames, FEATURES, listen, MAPPED_FORWARDED_FOR, proxyOptions, startUpstream, throwingEnricher } from './fixtures.js';

let upstream: TestFlagServer;
let flags: FlagProxyFetchHandler;
beforeAll(async () => {
  upstream = await startUpstream();
  flags = createFetchHandler(proxyOptions(upstream, { enableAllEndpoint: true }), {
    prefix: '/api/flags',
    context: (request) => ({ userId: new URLSearchParams(request.headers.get('cookie') ?? '').get('session') === 'of-7' ? '7' : 'anonymous' }),
  });
  await flags.proxy.ready;
});
afterAll(async () => {
  await flags.proxy.close();
  await upstream.close();
});

const request = (path: string, init: RequestInit = {}) =>
  new Request(`http://app.example${path}`, { ...init, headers: { authorization: CLIENT_KEY, ...(init.headers as Record<string, string>) } });

describe('createFetchHandler', () => {
  it('answers a Request with the Response node:http would give, no server listening', async () => {
    const res = await flags(request('/api/flags/proxy'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('etag')).toMatch(/^W\/"/);
    expect(res.headers.get('cache-control')).toBe('public, max-age=2');
    for (const hop of ['connection', 'keep-alive', 'transfer-encoding']) expect(res.headers.get(hop)).toBeNull();
    expect(await res.json()).toMatchObject({ toggles: [{ name: 'everyone', enabled: true }] });
    const notModified = await flags(request('/api/flags/proxy', { headers: { 'if-none-match': res.headers.get('etag')! } }));
    expect(notModified.status).toBe(304);
    expect(notModified.body).toBeNull();
  });

  it('streams a POST body through, and keeps the gzip encoding of a large answer', async () => {
    const res = await flags(
      request('/api/flags/proxy', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ toggles: ['everyone', 'nope'] }) }),
    );
    expect(((await res.json()) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name)).toEqual(['everyone', 'nope']);
    const many = Array.from({ length: 30 }, (_, i) => `toggle-with-a-rather-long-name-${i}`);
    const big = await flags(
      request('/api/flags/proxy', { method: 'POST', headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip' }, body: JSON.stringify({ toggles: many }) }),
    );
    expect(big.headers.get('content-encoding')).toBe('gzip');
    const decoded = JSON.parse(gunzipSync(Buffer.from(await big.arrayBuffer())).toString('utf8')) as { toggles: unknown[] };
    expect(decoded.toggles).toHaveLength(30);
  });

  it('answers 404 for paths outside the prefix or unknown to the proxy', async () => {
    expect((await flags(request('/elsewhere/proxy'))).status).toBe(404);
    const unknown = await flags(request('/api/flags/proxy/unknown'));
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toBe('Not Found');
  });

  it('rejects with the masked error on an unexpected failure, for the host to answer', async () => {
    const failing = createFetchHandler(proxyOptions(upstream, { expCustomEnrichers: [throwingEnricher] }));
    try {
      await failing.proxy.ready;
      const error = await failing(request('/proxy')).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isFlagProxyError(error)).toBe(true);
      expect(error).toMatchObject({ code: 'INTERNAL', status: 500, expose: false });
    } finally {
      await failing.proxy.close();
    }
  });

  it('replaces a spoofed userId with the one the hook derives from the Request', async () => {
    expect(await enabledNames(await flags(request('/api/flags/proxy?userId=7')))).not.toContain('only-user-7');
    expect(await enabledNames(await flags(request('/api/flags/proxy?userId=1', { headers: { cookie: 'session=of-7' } })))).toContain('only-user-7');
  });

  it('uses the remoteAddress the runtime passes as the default context remoteAddress', async () => {
    expect(await enabledNames(await flags(request('/api/flags/proxy'), { remoteAddress: '10.0.0.1' }))).toContain('from-10-0-0-1');
    expect(await enabledNames(await flags(request('/api/flags/proxy'), { remoteAddress: '10.0.0.2' }))).not.toContain('from-10-0-0-1');
  });

  it('gives an IPv4 client the IPv4 form of the address the runtime passes mapped (server on ::)', async () => {
    for (const trustProxy of [undefined, true]) {
      const { seen, options } = addressRecorder();
      const handler = createFetchHandler(proxyOptions(upstream, { ...options, ...(trustProxy ? { trustProxy } : {}) }), { prefix: '/api/flags' });
      const listener = getRequestListener(
        (req, env) => handler(req, { remoteAddress: (env as { incoming: http.IncomingMessage }).incoming.socket.remoteAddress }),
        { overrideGlobalObjects: false },
      );
      const server = await listen(http.createServer(listener), '::');
      try {
        await handler.proxy.ready;
        const get = (headers: Record<string, string> = {}) => fetch(`${server.base}/api/flags/proxy`, { headers: { authorization: CLIENT_KEY, ...headers } });
        expect(await enabledNames(await get())).toEqual(['everyone']);
        if (trustProxy) expect(await enabledNames(await get(MAPPED_FORWARDED_FOR))).toContain('from-10-0-0-1');
        expect(seen).toEqual(trustProxy ? ['127.0.0.1', '10.0.0.1'] : ['127.0.0.1']);
      } finally {
        await handler.proxy.close();
        await server.close();
      }
    }
  });

  it('runs under Hono, next to its own routes', async () => {
    const app = new Hono();
    app.get('/api/hello', (c) => c.json({ hello: 'world' }));
    app.all('/api/flags/*', (c) => flags(c.req.raw));
    expect(await (await app.request('/api/hello')).json()).toEqual({ hello: 'world' });
    const res = await app.request('/api/flags/proxy/all', { headers: { authorization: CLIENT_KEY } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name)).toEqual(['everyone', 'only-user-7', 'from-10-0-0-1', 'acme-only']);
  });
});


describe('createFetchHandler with an event stream', () => {
  const TOKEN = 'server-token-of-the-fetch-test';
  const read = async (reader: ReadableStreamDefaultReader<Uint8Array>, until: string): Promise<string> => {
    let text = '';
    const decoder = new TextDecoder();
    while (!text.includes(until)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the body ended before ${until}: ${text}`);
      text += decoder.decode(value, { stream: true });
    }
    return text;
  };

  it('resolves once the headers arrive, with a body that flows as events are sent and stops on cancel', async () => {
    const streaming = createFetchHandler(proxyOptions(upstream, { expServerSideSdkConfig: { tokens: [TOKEN] } }));
    try {
      await streaming.proxy.ready;
      const res = await streaming(new Request('http://app.example/api/client/streaming', { headers: { authorization: TOKEN } }));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      const reader = res.body!.getReader();
      expect(await read(reader, '\n\n')).toMatch(/^id: \d+-[0-9a-f]{8}\nevent: unleash-connected\ndata: \{"events":\[\{"type":"hydration"/);
      upstream.setEnabled('everyone', false);
      expect(await read(reader, '\n\n')).toContain('event: unleash-updated');
      expect(await streaming.proxy.metrics()).toContain('flag_proxy_event_streams{surface="client-streaming"} 1');
      await reader.cancel();
      // The cancel reaches the proxy: its stream is dropped and no longer counted.
      for (let i = 0; i < 100 && (await streaming.proxy.metrics()).includes('surface="client-streaming"} 1'); i += 1) await new Promise((r) => setTimeout(r, 20));
      expect(await streaming.proxy.metrics()).toContain('flag_proxy_event_streams{surface="client-streaming"} 0');
    } finally {
      upstream.setEnabled('everyone', true);
      await streaming.proxy.close();
    }
  });

  it('passes backpressure on, so a consumer that stops reading is dropped by the proxy instead of buffered', async () => {
    const own = await createTestFlagServer({ features: FEATURES });
    const streaming = createFetchHandler(proxyOptions(own, { eventStreamHeartbeatInterval: 20, expServerSideSdkConfig: { tokens: [TOKEN] } }));
    try {
      await streaming.proxy.ready;
      const res = await streaming(new Request('http://app.example/api/client/streaming', { headers: { authorization: TOKEN } }));
      expect(res.status).toBe(200);
      const open = async () => (await streaming.proxy.metrics()).match(/flag_proxy_event_streams\{surface="client-streaming"\} (\d+)/)?.[1];
      // Updates of about 512 kB each that nobody reads: once more than 1 MiB waits, the proxy drops the stream.
      for (let round = 0; round < 8 && (await open()) !== '0'; round += 1) {
        const description = `${round}`.repeat(64 * 1024);
        own.setFeatures(Array.from({ length: 8 }, (_, i) => ({ ...FEATURES[0]!, name: `big-${i}`, description })));
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(await open()).toBe('0');
      await res.body?.cancel();
    } finally {
      await streaming.proxy.close();
      await own.close();
    }
  });

  it('ends the body when the proxy closes', async () => {
    const streaming = createFetchHandler(proxyOptions(upstream, { expServerSideSdkConfig: { tokens: [TOKEN] } }));
    await streaming.proxy.ready;
    const res = await streaming(new Request('http://app.example/api/client/streaming', { headers: { authorization: TOKEN } }));
    const reader = res.body!.getReader();
    await read(reader, '\n\n');
    await streaming.proxy.close();
    for (;;) if ((await reader.read()).done) break;
  });
});
