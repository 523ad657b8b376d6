/**
 * Server-side rendering: `proxy.bootstrap(context)` gives the bytes and the ETag `GET /proxy`
 * answers when the browser SDK asks with the echoed context (checked with the query the SDK
 * builds, and with `unleash-proxy-client` itself), and `bootstrapScript` cannot be broken out of.
 * The HTML side of the script is parsed by Chromium in test/browser/express-ssr.test.ts.
 */
import http from 'node:http';
import vm from 'node:vm';
import { UnleashClient, type IConfig, type IToggle } from 'unleash-proxy-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapScript, createFlagProxy, isFlagProxyError, serializeForScript, type BootstrapContext, type FlagProxy } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { contextFor, generateFlags } from '../../bench/flags.js';
import { serveProxy, type ServedProxy } from '../support/served-proxy.js';
import { CLIENT_KEY, rawRequest } from '../support/harness.js';

const silent = { debug() {}, info() {}, warn() {}, error() {}, fatal() {} };

/** The query `unleash-proxy-client` builds from its context (its `urlWithContextAsQuery`). */
function sdkQuery(context: BootstrapContext): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(context)) {
    if (key === 'properties') for (const [name, property] of Object.entries(value as Record<string, string>)) params.append(`properties[${name}]`, property);
    else params.append(key, value as string);
  }
  return params.toString();
}

/** What the SDK asked for and was answered, through its `fetch` option. */
/**
 * A route's ETag without its request tag (README: a stable GET answer's ETag is the body's plus
 * `.<tag>`): the bootstrap gives the body's, which the route takes back for a 304 as well.
 */
const untagged = (etag: string | null | undefined): string | undefined => etag?.replace(/\.[A-Za-z0-9_-]+"$/, '"');

/** What unleash-proxy-client fetched, as {@link recordingFetch} saw it. */
interface Fetched {
  url: string;
  status: number;
  etag: string | null;
  body: string;
}

/**
 * unleash-proxy-client against `<base>/proxy`, started from a bootstrap and its echoed context, as
 * a server-rendered page starts it; no usage reports. `options` add to or override that.
 */
function bootstrappedClient(base: string, data: ReturnType<FlagProxy['bootstrap']>, options: Partial<IConfig>): UnleashClient {
  const { appName, ...context } = data.context;
  return new UnleashClient({
    url: `${base}/proxy`,
    clientKey: CLIENT_KEY,
    appName,
    context,
    // `impressionData` is optional here (absent when the upstream omits it), required in the SDK's type.
    bootstrap: data.toggles as IToggle[],
    disableMetrics: true,
    ...options,
  });
}

function recordingFetch(seen: Fetched[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const body = await res.clone().text();
    seen.push({ url: String(input), status: res.status, etag: res.headers.get('etag'), body });
    return res;
  };
}

describe('proxy.bootstrap', () => {
  let served: ServedProxy;
  let upstream: TestFlagServer;
  const { features, segments } = generateFlags(200);
  beforeAll(async () => {
    upstream = await createTestFlagServer({ features, segments });
    served = await serveProxy(upstream);
  });
  afterAll(async () => {
    await served.close();
    await upstream.close();
  });

  // Addresses given, so the caller's own address does not enter the HTTP side.
  const contexts = Array.from({ length: 100 }, (_, n) => ({ ...contextFor(n * 7919), remoteAddress: `10.1.${n % 256}.${(n * 31) % 256}` }));

  it('gives the bytes and the ETag GET /proxy answers for the echoed context, over many contexts', async () => {
    for (const [n, given] of contexts.entries()) {
      // Half without a sessionId: the generated one must be what the SDK then sends.
      const { sessionId, ...rest } = given;
      const data = served.proxy.bootstrap(n % 2 === 0 ? given : rest);
      if (n % 2 === 0) expect(data.context.sessionId).toBe(sessionId);
      const res = await fetch(`${served.base}/proxy?${sdkQuery(data.context)}`, { headers: { authorization: CLIENT_KEY } });
      expect(res.status).toBe(200);
      expect(untagged(res.headers.get('etag'))).toBe(data.etag);
      expect(JSON.stringify({ toggles: data.toggles })).toBe(await res.text());
    }
  });

  it('agrees with isEnabled on the echoed context for anonymous users, whose rollouts go by the generated sessionId', () => {
    for (const given of contexts.slice(0, 40)) {
      const { userId: _u, sessionId: _s, ...anonymous } = given;
      const data = served.proxy.bootstrap(anonymous);
      const enabled = new Set(data.toggles.map((t) => t.name));
      for (const { name } of features) expect([name, served.proxy.isEnabled(name, data.context)]).toEqual([name, enabled.has(name)]);
    }
  });

  it('answers the SDK its own ETag with 304', async () => {
    const data = served.proxy.bootstrap(contexts[3]);
    // Not fetch(): Node's adds `Cache-Control: no-cache` to a conditional request, which forbids a 304.
    const res = await rawRequest(`${served.base}/proxy?${sdkQuery(data.context)}`, { headers: { authorization: CLIENT_KEY, 'if-none-match': data.etag } });
    expect(res.status).toBe(304);
    expect(untagged(res.headers.etag as string)).toBe(data.etag);
  });

  it('is what unleash-proxy-client fetches when started with the bootstrap and the echoed context', async () => {
    for (const given of contexts.slice(0, 10)) {
      const { sessionId: _ignored, ...withoutSession } = given;
      const data = served.proxy.bootstrap(withoutSession);
      const seen: Fetched[] = [];
      const client = bootstrappedClient(served.base, data, {
        disableRefresh: true,
        fetch: recordingFetch(seen),
        storageProvider: { save: async () => undefined, get: async () => undefined },
      });
      const updates: number[] = [];
      client.on('update', () => updates.push(Date.now()));
      try {
        // Ready from the bootstrap alone, before any fetch.
        await new Promise<void>((resolve) => client.on('ready', resolve));
        expect(seen).toEqual([]);
        expect(client.getAllToggles()).toEqual(data.toggles);
        await client.start();
        expect(seen).toHaveLength(1);
        expect(seen[0]!.status).toBe(200);
        expect(untagged(seen[0]!.etag)).toBe(data.etag);
        expect(seen[0]!.body).toBe(JSON.stringify({ toggles: data.toggles }));
        expect(client.getAllToggles()).toEqual(data.toggles);
      } finally {
        client.stop();
      }
    }
  });

  it('with experimental.togglesStorageTTL, unleash-proxy-client starts without fetching', async () => {
    const data = served.proxy.bootstrap(contexts[5]);
    const seen: Fetched[] = [];
    const stored = new Map<string, unknown>();
    const client = bootstrappedClient(served.base, data, {
      refreshInterval: 60,
      experimental: { togglesStorageTTL: 60 },
      fetch: recordingFetch(seen),
      storageProvider: { save: async (name: string, value: unknown) => void stored.set(name, value), get: async (name: string) => stored.get(name) },
    });
    try {
      await client.start();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(seen).toEqual([]);
      expect(client.isReady()).toBe(true);
      expect(client.getAllToggles()).toEqual(data.toggles);
    } finally {
      client.stop();
    }
  });

  it('keeps a given sessionId, generates a different one per call otherwise, and never changes the caller’s context', () => {
    const given = { userId: 'u1', properties: { plan: 'pro', seats: 5 } };
    const copy = structuredClone(given);
    const first = served.proxy.bootstrap(given);
    const second = served.proxy.bootstrap(given);
    expect(given).toEqual(copy);
    expect(first.context.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(second.context.sessionId).not.toBe(first.context.sessionId);
    expect(first.context).toEqual({ appName: 'flag-proxy', userId: 'u1', sessionId: first.context.sessionId, properties: { plan: 'pro', seats: '5' } });
    expect(served.proxy.bootstrap({ userId: 'u1', sessionId: 's-7', appName: 'web' }).context).toEqual({ appName: 'web', userId: 'u1', sessionId: 's-7' });
  });

  it('echoes a Date currentTime as its ISO string', () => {
    const data = served.proxy.bootstrap({ userId: 'u1', sessionId: '1', currentTime: new Date('2030-01-02T03:04:05.000Z') });
    expect(data.context.currentTime).toBe('2030-01-02T03:04:05.000Z');
  });

  it('with a context from contextFromRequest, gives what the SDK gets from that same request', async () => {
    // The host binds the userId to its session (a cookie here) through the context hook.
    const hooked = await serveProxy(upstream, { context: (req: http.IncomingMessage) => ({ userId: /uid=(\w+)/.exec(req.headers.cookie ?? '')?.[1] }) });
    try {
      for (const n of [1, 2, 3, 4, 5]) {
        const page = new http.IncomingMessage(null as never);
        page.headers = { cookie: `uid=user${n}` };
        Object.defineProperty(page, 'socket', { value: { remoteAddress: '127.0.0.1' } });
        const context = await hooked.proxy.contextFromRequest(page, { properties: contexts[n]!.properties });
        const data = hooked.proxy.bootstrap(context);
        expect(data.context.userId).toBe(`user${n}`);
        const res = await fetch(`${hooked.base}/proxy?${sdkQuery(data.context)}`, { headers: { authorization: CLIENT_KEY, cookie: `uid=user${n}` } });
        expect(untagged(res.headers.get('etag'))).toBe(data.etag);
        expect(await res.text()).toBe(JSON.stringify({ toggles: data.toggles }));
      }
    } finally {
      await hooked.close();
    }
  });

  it('with an enricher, a configured environment and no answer cache, still gives what GET /proxy answers', async () => {
    // The enricher derives a property from another one, on the in-process side and on the route alike.
    const enrich = (context: import('flag-proxy').EvaluationContext) => {
      context.properties.tier = context.properties.plan === 'enterprise' ? 'top' : 'rest';
      return context;
    };
    const configured = await serveProxy(upstream, { expCustomEnrichers: [enrich], environment: 'production', answerCacheBytes: 0 });
    try {
      for (const given of contexts.slice(0, 30)) {
        const data = configured.proxy.bootstrap({ ...given, environment: 'development' });
        const res = await fetch(`${configured.base}/proxy?${sdkQuery(data.context)}`, { headers: { authorization: CLIENT_KEY } });
        expect(untagged(res.headers.get('etag'))).toBe(data.etag);
        expect(await res.text()).toBe(JSON.stringify({ toggles: data.toggles }));
      }
    } finally {
      await configured.close();
    }
  });

  it('throws NOT_READY before the proxy is ready', async () => {
    const proxy = createFlagProxy({ flagUrl: 'http://127.0.0.1:9/api/', flagApiToken: 't', clientKeys: ['k'], storageProvider: createMemoryStorageProvider(), logger: silent });
    try {
      let caught: unknown;
      try {
        proxy.bootstrap({ userId: 'u1' });
      } catch (error) {
        caught = error;
      }
      expect(isFlagProxyError(caught) && caught.code).toBe('NOT_READY');
    } finally {
      await proxy.close();
    }
  });
});

const HOSTILE = ['</script><script>alert(1)</script>', '<!--', '<!-- <script>', ']]>', 'a\u2028b\u2029c', '&amp;', '</SCRIPT >', '\u0000', '"\\\''];

describe('serializeForScript', () => {
  it('writes no <, >, & or line separators, and parses back to the same value', () => {
    const value = { toggles: HOSTILE.map((name) => ({ name, enabled: true, variant: { name, enabled: true, payload: { type: 'string', value: name } } })) };
    const text = serializeForScript(value);
    expect(text).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(text)).toEqual(value);
    // And as JavaScript, as the inline script runs it.
    expect(vm.runInNewContext(`(${text})`)).toEqual(value);
  });

  it('throws INVALID_OPTION for a value with no JSON form', () => {
    expect(() => serializeForScript(undefined)).toThrow(expect.objectContaining({ code: 'INVALID_OPTION' }));
  });
});

describe('bootstrapScript', () => {
  it('assigns the data to the global it names, with the nonce attribute', () => {
    const data = { toggles: [{ name: HOSTILE[0], enabled: true }], etag: 'W/"1"', context: { sessionId: HOSTILE[4] } };
    const html = bootstrapScript(data, { nonce: 'r4nd0m+/=', globalName: 'flags' });
    expect(html.startsWith('<script nonce="r4nd0m+/=">window.flags=')).toBe(true);
    expect(html.endsWith(';</script>')).toBe(true);
    // One element: the only `</script` is the closing tag.
    expect(html.toLowerCase().split('</script').length).toBe(2);
    const window: Record<string, unknown> = {};
    vm.runInNewContext(html.slice(html.indexOf('>') + 1, -'</script>'.length), { window });
    expect(window.flags).toEqual(data);
  });

  it('defaults to window.__FLAG_PROXY_BOOTSTRAP__ and no nonce', () => {
    expect(bootstrapScript({ toggles: [] })).toBe('<script>window.__FLAG_PROXY_BOOTSTRAP__={"toggles":[]};</script>');
  });

  it.each([['a"b'], ['a b'], [''], ['x><script>']])('rejects the nonce %j', (nonce) => {
    expect(() => bootstrapScript({}, { nonce })).toThrow(expect.objectContaining({ code: 'INVALID_OPTION' }));
  });

  it.each([['a.b'], ['1a'], ['a]=1;//'], ['']])('rejects the global name %j', (globalName) => {
    expect(() => bootstrapScript({}, { globalName })).toThrow(expect.objectContaining({ code: 'INVALID_OPTION' }));
  });
});
