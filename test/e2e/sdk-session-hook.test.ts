/**
 * `unleash-proxy-client` in Node against a proxy whose `context` hook decides the user from the
 * caller's session, not from what the SDK sends (the README's pattern), with the answer cache off.
 * Through the SDK and the wire log: each session gets its own user's flags whatever userId the SDK
 * claims; its polls come back 304 from the tag of the built context, with no evaluation and no
 * per-client state; a flag changed upstream still reaches it.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EVENTS, InMemoryStorageProvider, UnleashClient } from 'unleash-proxy-client';
import { createFlagProxy, type FlagProxy } from 'flag-proxy';
import type { TestFlagServer } from 'flag-proxy/testing';
import { evaluationCount } from '../support/harness.js';
import { CLIENT_KEY, eventually, MOUNT_PATH, polls, PROXY_REFRESH_MS, proxyOptions, serveLogged, startUpstream, type LoggedRequest, type LoggedServer } from './sdk-fixtures.js';

const REFRESH_S = 0.3;
/** Who each session is, as the host's session store would say. */
const SESSIONS: Record<string, string> = { 's-alice': '1', 's-bob': '9' };
const TAGGED = /^W\/"[0-9a-f]+-[A-Za-z0-9+/]{27}\.[A-Za-z0-9_-]{22}"$/;

describe('unleash-proxy-client against a proxy whose context hook decides the user', () => {
  let upstream: TestFlagServer;
  let proxy: FlagProxy;
  let server: LoggedServer;
  const log: LoggedRequest[] = [];
  const clients: UnleashClient[] = [];

  const evaluations = (): Promise<number> => evaluationCount(proxy);
  /** An SDK whose requests carry a session header, and which claims to be user 2 itself. */
  const start = async (session: string): Promise<UnleashClient> => {
    const client = new UnleashClient({
      url: `${server.origin}${MOUNT_PATH}/proxy`,
      clientKey: CLIENT_KEY,
      appName: 'sdk-session-hook',
      refreshInterval: REFRESH_S,
      disableMetrics: true,
      storageProvider: new InMemoryStorageProvider(),
      customHeaders: { 'x-session': session },
      context: { userId: '2' },
    });
    clients.push(client);
    const ready = new Promise((resolve) => client.on(EVENTS.READY, resolve));
    void client.start();
    await ready;
    return client;
  };
  const pollsOf = (session: string): LoggedRequest[] => polls(log).filter((r) => r.headers['x-session'] === session);

  beforeAll(async () => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    upstream = await startUpstream();
    proxy = createFlagProxy(
      proxyOptions(upstream, {
        proxyBasePath: MOUNT_PATH,
        answerCacheBytes: 0,
        // The session decides the user; an anonymous caller gets no userId, whatever it sends.
        context: (req) => ({ userId: SESSIONS[String(req.headers['x-session'])] }),
      }),
    );
    server = await serveLogged('proxy', (req: http.IncomingMessage, res: http.ServerResponse) => proxy(req, res, () => res.writeHead(404).end()), log);
    await proxy.ready;
  });
  afterAll(async () => {
    for (const client of clients) client.stop();
    await proxy?.close();
    await server?.close();
    await upstream?.close();
    vi.restoreAllMocks();
  });

  it("gives each session its own user's flags, and answers its polls 304 from the built context's tag without evaluating", async () => {
    const alice = await start('s-alice');
    const bob = await start('s-bob');
    // Both SDKs claim userId 2 (in the users-1-2 list); the hook says who they are.
    expect(alice.isEnabled('sdk.users-1-2')).toBe(true);
    expect(bob.isEnabled('sdk.users-1-2')).toBe(false);
    await eventually(() => {
      expect(pollsOf('s-alice').filter((r) => r.status === 304).length).toBeGreaterThanOrEqual(2);
      expect(pollsOf('s-bob').filter((r) => r.status === 304).length).toBeGreaterThanOrEqual(2);
    }, 5000);
    const first = pollsOf('s-alice').find((r) => r.status === 200)!;
    expect(String(first.responseHeaders?.etag)).toMatch(TAGGED);
    const notModified = pollsOf('s-alice').find((r) => r.status === 304)!;
    expect(notModified.headers['if-none-match']).toBe(first.responseHeaders?.etag);
    expect(notModified.responseHeaders?.etag).toBe(first.responseHeaders?.etag);
    expect(pollsOf('s-bob').find((r) => r.status === 200)!.responseHeaders?.etag).not.toBe(first.responseHeaders?.etag);
    // More polls, all 304, and not one toggle evaluated for them (the answer cache is off).
    const before = await evaluations();
    const seen = log.length;
    await eventually(() => expect(polls(log.slice(seen)).filter((r) => r.status === 304).length).toBeGreaterThanOrEqual(4), 5000);
    expect(polls(log.slice(seen)).every((r) => r.status === 304)).toBe(true);
    expect(await evaluations()).toBe(before);
  });

  it('still sees a flag changed upstream within a poll', async () => {
    const [alice] = clients;
    expect(alice!.isEnabled('sdk.flip')).toBe(true);
    upstream.setEnabled('sdk.flip', false);
    await eventually(() => expect(alice!.isEnabled('sdk.flip')).toBe(false), REFRESH_S * 1000 + PROXY_REFRESH_MS + 3000);
    const changed = polls(log).filter((r) => r.headers['x-session'] === 's-alice' && r.status === 200);
    expect(changed.length).toBeGreaterThanOrEqual(2);
    expect(String(changed[changed.length - 1]!.responseHeaders?.etag)).toMatch(TAGGED);
  });
});
