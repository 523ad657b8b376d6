/** What the adapter tests share: an upstream with two telling flags, and proxy options pointing at it. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { isFlagProxyError, type FlagProxyOptions } from 'flag-proxy';
import { createTestFlagServer, type TestFlagServer, silentLogger as silent } from 'flag-proxy/testing';
import { CLIENT_KEY, closeServer, feature, testProxyOptions } from '../support/harness.js';

export { CLIENT_KEY };

/** `everyone` is always on; `only-user-7` for userId 7 alone; `from-10-0-0-1` for remoteAddress 10.0.0.1 alone; `acme-only` for the property tenant=acme. */
export const FEATURES = [
  feature('everyone'),
  feature('only-user-7', { strategies: [{ name: 'userWithId', parameters: { userIds: '7' }, constraints: [] }] as never }),
  feature('from-10-0-0-1', { strategies: [{ name: 'remoteAddress', parameters: { IPs: '10.0.0.1' }, constraints: [] }] as never }),
  feature('acme-only', {
    strategies: [{ name: 'default', parameters: {}, constraints: [{ contextName: 'tenant', operator: 'IN', values: ['acme'], inverted: false }] }] as never,
  }),
];

export { silent };

export function startUpstream(): Promise<TestFlagServer> {
  return createTestFlagServer({ features: FEATURES });
}

/** Proxy options pointing at `upstream` (the harness's, so every suite starts its proxies alike). */
export const proxyOptions = testProxyOptions;

/**
 * The hooks of an adapter suite: one upstream for the whole file (started before, closed after),
 * and closers a test registers, run after each test.
 */
export function useAdapterSuite(): { upstream(): TestFlagServer; cleanups: Array<() => Promise<void>> } {
  let upstream: TestFlagServer | undefined;
  beforeAll(async () => {
    upstream = await startUpstream();
  });
  afterAll(() => upstream?.close());
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    await Promise.all(cleanups.splice(0).map((c) => c()));
  });
  return {
    upstream: () => {
      if (!upstream) throw new Error('the suite upstream starts in beforeAll');
      return upstream;
    },
    cleanups,
  };
}

/** Enabled toggle names of a `/proxy` answer. */
export async function enabledNames(res: Response): Promise<string[]> {
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { toggles: Array<{ name: string; enabled: boolean }> }).toggles.filter((t) => t.enabled).map((t) => t.name);
}

/**
 * Listens on loopback, or on `::` (every interface: IPv4 clients then have the socket address
 * `::ffff:127.0.0.1`); returns the loopback base URL and a closer that also drops keep-alive sockets.
 */
export async function listen(server: http.Server, address: '127.0.0.1' | '::' = '127.0.0.1'): Promise<{ base: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => closeServer(server),
  };
}

/** An enricher that throws: the proxy masks it as an unexpected error. */
export const throwingEnricher = (): never => {
  throw new Error('enricher secret detail');
};

/** Proxy options whose enricher records the `remoteAddress` of each evaluation's context, in `seen`. */
export function addressRecorder(): { seen: Array<string | undefined>; options: Partial<FlagProxyOptions> } {
  const seen: Array<string | undefined> = [];
  return {
    seen,
    options: {
      expCustomEnrichers: [
        (context) => {
          seen.push(context.remoteAddress);
          return context;
        },
      ],
    },
  };
}

/** What a Node hop listening on `::` writes for an IPv4 client it forwards. */
export const MAPPED_FORWARDED_FOR = { 'x-forwarded-for': '::ffff:10.0.0.1' };

// --- Cases every framework adapter passes, with the host under /api/flags -----------------------

/** A body the host's own parser already read is what the proxy evaluates (it does not read the stream again). */
export async function expectHostParsedBodyUsed(base: string): Promise<void> {
  const res = await fetch(`${base}/api/flags/proxy`, {
    method: 'POST',
    headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ context: { userId: '7' }, toggles: ['only-user-7', 'nope'] }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { toggles: Array<{ name: string; enabled: boolean }> };
  expect(body.toggles.map((t) => [t.name, t.enabled])).toEqual([
    ['only-user-7', true],
    ['nope', false],
  ]);
}

/**
 * With {@link throwingEnricher}, `GET /api/flags/proxy` reaches the host's error handling (which
 * answers `host error handler`) as a masked `INTERNAL` error: status 500, expose false.
 */
export async function expectUnexpectedErrorToHost(get: (path: string) => Promise<Response>, errors: unknown[]): Promise<void> {
  const res = await get('/api/flags/proxy');
  expect(res.status).toBe(500);
  expect(await res.text()).toBe('host error handler');
  expect(isFlagProxyError(errors[0])).toBe(true);
  expect(errors[0]).toMatchObject({ code: 'INTERNAL', status: 500, expose: false });
}
