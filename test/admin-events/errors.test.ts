import { afterEach, describe, expect, it } from 'vitest';
import { createAdminEventsClient, isFlagProxyError, type FlagProxyError } from 'flag-proxy/admin-events';
import {
  ADMIN_TOKEN,
  CLIENT_TOKEN,
  closedPortUrl,
  everythingIn,
  rejectionOf,
  startFixedServer,
  startLogServer,
  startServer,
  type TestServer,
} from './helpers.js';

const servers: TestServer[] = [];
async function track<T extends TestServer>(server: Promise<T>): Promise<T> {
  const s = await server;
  servers.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** Calls list() against `url` and returns the FlagProxyError it rejects with. */
async function failureOf(url: string, adminToken = ADMIN_TOKEN, timeoutMs?: number): Promise<FlagProxyError> {
  const client = createAdminEventsClient({ flagUrl: `${url}/api/`, adminToken, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
  const err = await rejectionOf(client.list());
  expect(isFlagProxyError(err)).toBe(true);
  // Whatever happened, the token must not be anywhere in what the error carries.
  expect(everythingIn(err)).not.toContain(adminToken);
  return err as FlagProxyError;
}

describe('createAdminEventsClient errors', () => {
  it('throws UNAUTHORIZED when the flag server answers 401 (unknown token)', async () => {
    const { url } = await track(startLogServer());
    const err = await failureOf(url, 'not-a-known-token-123');
    expect(err.code).toBe('UNAUTHORIZED');
    expect(err.status).toBe(502);
    expect(err.expose).toBe(false);
    expect(err.details).toMatchObject({ status: 401, url: `GET ${url}/api/admin/events` });
    expect(err.message).toMatch(/401/);
  });

  it('throws FORBIDDEN with a hint when the token is a client token (403)', async () => {
    const { url } = await track(startLogServer());
    const err = await failureOf(url, CLIENT_TOKEN);
    expect(err.code).toBe('FORBIDDEN');
    expect(err.message).toContain('ADMIN token');
    expect(err.details).toMatchObject({ status: 403 });
    expect((err.details as { upstreamMessage?: string }).upstreamMessage).toMatch(/admin token/);
  });

  it('throws NOT_FOUND when the URL does not serve the endpoint (404)', async () => {
    const { url } = await track(startFixedServer(404, '{"message":"no such route"}'));
    const err = await failureOf(url);
    expect(err.code).toBe('NOT_FOUND');
    expect(err.message).toMatch(/flagUrl/);
    expect(err.details).toMatchObject({ status: 404, upstreamMessage: 'no such route' });
  });

  it.each([500, 503, 418])('throws UPSTREAM with the status in details for %i', async (status) => {
    const { url } = await track(startFixedServer(status, 'upstream broke', 'text/plain'));
    const err = await failureOf(url);
    expect(err.code).toBe('UPSTREAM');
    expect(err.status).toBe(502);
    expect(err.details).toMatchObject({ status, upstreamMessage: 'upstream broke' });
    expect(err.message).toContain(String(status));
  });

  it('throws INVALID_RESPONSE when a 200 answer is not JSON', async () => {
    const { url } = await track(startFixedServer(200, '<html>login</html>', 'text/html'));
    const err = await failureOf(url);
    expect(err.code).toBe('INVALID_RESPONSE');
    expect(err.message).toMatch(/not JSON.*text\/html/);
  });

  it('throws TIMEOUT when the flag server does not answer within timeoutMs', async () => {
    const { url } = await track(startServer(() => undefined));
    const started = Date.now();
    const err = await failureOf(url, ADMIN_TOKEN, 150);
    expect(err.code).toBe('TIMEOUT');
    expect(err.status).toBe(504);
    expect(err.message).toContain('150 ms');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('throws TIMEOUT when the body stalls after the headers', async () => {
    const { url } = await track(
      startServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"version":1,');
      }),
    );
    const err = await failureOf(url, ADMIN_TOKEN, 150);
    expect(err.code).toBe('TIMEOUT');
  });

  it('throws NETWORK naming the reason when nothing listens', async () => {
    const url = await closedPortUrl();
    const err = await failureOf(url);
    expect(err.code).toBe('NETWORK');
    expect(err.status).toBe(502);
    expect(err.message).toContain('ECONNREFUSED');
    expect(err.cause).toBeDefined();
  });

  it('throws NETWORK when the connection is cut mid-answer', async () => {
    const { url } = await track(startServer((req) => req.socket.destroy()));
    expect((await failureOf(url)).code).toBe('NETWORK');
  });

  it('rejects with the caller abort reason, not a FlagProxyError, when the call signal aborts', async () => {
    const { url } = await track(startServer(() => undefined));
    const client = createAdminEventsClient({ flagUrl: url, adminToken: ADMIN_TOKEN });
    const controller = new AbortController();
    const pending = client.list({ signal: controller.signal });
    const reason = new Error('caller gave up');
    setTimeout(() => controller.abort(reason), 20);
    expect(await rejectionOf(pending)).toBe(reason);
  });

  it('rejects every call once the client signal has aborted', async () => {
    const { url, requests } = await track(startLogServer());
    const controller = new AbortController();
    controller.abort(new Error('shutting down'));
    const client = createAdminEventsClient({ flagUrl: url, adminToken: ADMIN_TOKEN, signal: controller.signal });
    expect(((await rejectionOf(client.list())) as Error).message).toBe('shutting down');
    expect(requests).toHaveLength(0);
  });

  describe('the admin token never leaks', () => {
    it('redacts the token when an error body echoes it', async () => {
      const { url } = await track(startFixedServer(401, JSON.stringify({ message: `token ${ADMIN_TOKEN} is unknown` })));
      const err = await failureOf(url);
      expect(err.code).toBe('UNAUTHORIZED');
      expect((err.details as { upstreamMessage: string }).upstreamMessage).toBe('token [redacted] is unknown');
    });

    it('keeps the token out of INVALID_RESPONSE when a non-JSON body contains it', async () => {
      const { url } = await track(startFixedServer(200, `oops ${ADMIN_TOKEN}`, 'text/plain'));
      const err = await failureOf(url);
      expect(err.code).toBe('INVALID_RESPONSE');
    });

    it('redacts the token from a custom fetch that throws with it', async () => {
      const client = createAdminEventsClient({
        flagUrl: 'http://flags.test/api/',
        adminToken: ADMIN_TOKEN,
        fetch: async (_url, init) => {
          throw new Error(`failed with headers ${JSON.stringify(init.headers)}`);
        },
      });
      const err = await rejectionOf(client.list());
      expect((err as FlagProxyError).code).toBe('NETWORK');
      expect(everythingIn(err)).not.toContain(ADMIN_TOKEN);
      expect(everythingIn(err)).toContain('[redacted]');
    });

    it('keeps the token out of every error code in one sweep', async () => {
      const slow = await track(startServer(() => undefined));
      const fixed = await Promise.all([
        track(startFixedServer(401, '{}')),
        track(startFixedServer(403, '{}')),
        track(startFixedServer(404, '{}')),
        track(startFixedServer(500, '{}')),
        track(startFixedServer(200, 'garbage')),
        track(startFixedServer(200, JSON.stringify({ version: 1, events: [{ id: 'x' }] }))),
      ]);
      const codes: string[] = [];
      for (const s of fixed) codes.push((await failureOf(s.url)).code);
      codes.push((await failureOf(slow.url, ADMIN_TOKEN, 100)).code);
      codes.push((await failureOf(await closedPortUrl())).code);
      expect(codes).toEqual([
        'UNAUTHORIZED',
        'FORBIDDEN',
        'NOT_FOUND',
        'UPSTREAM',
        'INVALID_RESPONSE',
        'INVALID_RESPONSE',
        'TIMEOUT',
        'NETWORK',
      ]);
    });
  });

  it('makes exactly one request per call (no hidden retries)', async () => {
    const { url, requests } = await track(startFixedServer(500, '{}'));
    const client = createAdminEventsClient({ flagUrl: url, adminToken: ADMIN_TOKEN });
    await rejectionOf(client.list());
    await rejectionOf(client.list());
    expect(requests).toHaveLength(2);
  });
});
