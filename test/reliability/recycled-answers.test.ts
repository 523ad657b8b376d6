/**
 * Large answers are built in memory that is used again once their response is written
 * (src/core/answer-buffers.ts). Used again too early, it would send one caller's flags to another.
 * Every test here reads what callers received and compares it with what a separate proxy over the
 * same flags answers for the same context.
 */
import type http from 'node:http';
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FlagProxy } from 'flag-proxy';
import { createFetchHandler } from 'flag-proxy/fetch';
import { createExpressMiddleware } from 'flag-proxy/express';
import express from 'express';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { contextFor, generateFlags, queryFor } from '../../bench/flags.js';
import { CLIENT_KEY } from '../support/harness.js';
import { serveProxy, testProxy, type ServedProxy } from '../support/served-proxy.js';

// 1,500 flags: a /proxy/all answer of about 280 kB, above LARGE_ANSWER_BYTES.
const FLAGS = 1500;

let upstream: TestFlagServer;
let reference: ServedProxy;
const expected = new Map<number, string>();

/** The answer cache off (every answer is built anew), and /proxy/all, the largest answer. */
const OPTIONS = { enableAllEndpoint: true, answerCacheBytes: 0 };

const serve = (host?: (proxy: FlagProxy) => http.RequestListener): Promise<ServedProxy> => serveProxy(upstream, OPTIONS, host);

const pathOf = (n: number): string => `/proxy/all?${queryFor(contextFor(n))}`;

/** GET of context `n`'s answer, uncompressed unless `encoding` asks otherwise (fetch decodes it). */
async function get(base: string, n: number, encoding = 'identity'): Promise<string> {
  const res = await fetch(`${base}${pathOf(n)}`, { headers: { Authorization: CLIENT_KEY, 'Accept-Encoding': encoding } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-encoding')).toBe(encoding === 'identity' ? null : encoding);
  return res.text();
}

/** What the reference proxy answers for context `n` (fetched once). */
async function expectedFor(n: number): Promise<string> {
  let body = expected.get(n);
  if (body === undefined) {
    body = await get(reference.base, n);
    expected.set(n, body);
  }
  return body;
}

/**
 * A caller that reads nothing until `reading` resolves: it sends its requests on one keep-alive
 * connection, one every `gapMs` (not pipelined: each is answered on the socket as soon as it
 * arrives, until the kernel buffers are full and the proxy's write waits); gives the bodies in order.
 */
function slowReader(base: string, contexts: number[], gapMs: number, reading: Promise<void>): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(new URL(base).port), '127.0.0.1');
    socket.pause();
    socket.on('error', reject);
    void (async () => {
      for (const n of contexts) {
        socket.write(`GET ${pathOf(n)} HTTP/1.1\r\nHost: test\r\nAuthorization: ${CLIENT_KEY}\r\n\r\n`);
        await new Promise((r) => setTimeout(r, gapMs));
      }
      await reading;
      socket.resume();
    })();
    let pending = Buffer.alloc(0);
    const bodies: string[] = [];
    void reading.then(() => socket.resume());
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const end = pending.indexOf('\r\n\r\n');
        if (end === -1) return;
        const head = pending.subarray(0, end).toString('latin1');
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
        if (!head.startsWith('HTTP/1.1 200') || !Number.isFinite(length)) {
          reject(new Error(`unexpected head: ${head}`));
          socket.destroy();
          return;
        }
        if (pending.length < end + 4 + length) return;
        bodies.push(pending.subarray(end + 4, end + 4 + length).toString());
        pending = pending.subarray(end + 4 + length);
        if (bodies.length === contexts.length) {
          socket.end();
          resolve(bodies);
          return;
        }
      }
    });
  });
}

/** Counts the Buffers of at least 64 kB made with `Buffer.allocUnsafeSlow` (how the answer memory is made). */
function countLargeAllocations(): { count(): number } {
  let made = 0;
  const original = Buffer.allocUnsafeSlow.bind(Buffer);
  vi.spyOn(Buffer, 'allocUnsafeSlow').mockImplementation((size: number) => {
    if (size >= 64 * 1024) made += 1;
    return original(size);
  });
  return { count: () => made };
}

beforeAll(async () => {
  const { features, segments } = generateFlags(FLAGS);
  upstream = await createTestFlagServer({ features, segments });
  reference = await serve();
  expect((await expectedFor(0)).length).toBeGreaterThan(200_000);
}, 60_000);

afterAll(async () => {
  await reference?.close();
  await upstream?.close();
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('large answers in recycled memory', () => {
  const reused: Array<[string, ((proxy: FlagProxy) => http.RequestListener) | undefined, string, number]> = [
    ['written from, on a plain node server', undefined, 'identity', 1000],
    [
      'written from, in an Express app (which sets headers first)',
      (proxy) => {
        const app = express();
        app.use(createExpressMiddleware(proxy));
        return app;
      },
      'identity',
      1200,
    ],
    ['compressed from', undefined, 'gzip', 1100],
  ];
  it.each(reused)('build each answer in the memory the one before was %s', async (_, host, encoding, first) => {
    const served = await serve(host);
    try {
      const allocations = countLargeAllocations();
      for (let n = first; n < first + 20; n += 1) expect(await get(served.base, n, encoding)).toBe(await expectedFor(n));
      // The first answer (or two, when a later context's answer is longer) makes memory; the rest reuse it.
      expect(allocations.count()).toBeLessThanOrEqual(2);
    } finally {
      await served.close();
    }
  });

  it('keep the memory of answers a slow reader has not taken yet, while other callers are answered', async () => {
    const served = await serve();
    try {
      // The slow connection asks for 30 answers (about 8 MB, more than the kernel takes while
      // nothing is read) and reads nothing while 120 other contexts are answered on other connections.
      const slowContexts = Array.from({ length: 30 }, (_, i) => 2000 + i);
      let othersDone!: () => void;
      const reading = new Promise<void>((resolve) => {
        othersDone = resolve;
      });
      const slow = slowReader(served.base, slowContexts, 10, reading);
      const others = Array.from({ length: 120 }, (_, i) => 3000 + i);
      for (let i = 0; i < others.length; i += 8) {
        const batch = others.slice(i, i + 8);
        const bodies = await Promise.all(batch.map((n) => get(served.base, n)));
        for (const [j, n] of batch.entries()) expect(bodies[j]).toBe(await expectedFor(n));
      }
      othersDone();
      const bodies = await slow;
      for (const [i, n] of slowContexts.entries()) expect(bodies[i] === (await expectedFor(n)), `answer ${i} of the slow connection`).toBe(true);
    } finally {
      await served.close();
    }
  }, 60_000);

  it('never reuse memory under a host that wraps res.end and reads the body after the response finished', async () => {
    // A body logger: it keeps what the proxy passes to res.end and reads it once the next request is answered.
    const logged: Buffer[] = [];
    const served = await serve((proxy) => (req, res) => {
      const end = res.end.bind(res) as (chunk?: unknown) => http.ServerResponse;
      res.end = ((chunk?: unknown) => {
        if (Buffer.isBuffer(chunk)) logged.push(chunk);
        return end(chunk);
      }) as typeof res.end;
      proxy(req, res);
    });
    try {
      const allocations = countLargeAllocations();
      const first = await get(served.base, 4000);
      expect(await get(served.base, 4001)).toBe(await expectedFor(4001));
      expect(first).toBe(await expectedFor(4000));
      expect(logged).toHaveLength(2);
      expect(logged[0]?.toString()).toBe(first);
      expect(allocations.count()).toBe(2);
    } finally {
      await served.close();
    }
  });

  it('answer right behind the fetch adapter, in new memory each time: its in-memory connection hands the Buffers it is given to its reader', async () => {
    const handler = createFetchHandler(testProxy(upstream, OPTIONS));
    try {
      await handler.proxy.ready;
      const allocations = countLargeAllocations();
      // From the address the reference proxy sees, since flags may target it.
      const ask = (n: number): Promise<Response> => handler(new Request(`http://host${pathOf(n)}`, { headers: { Authorization: CLIENT_KEY, 'Accept-Encoding': 'identity' } }), { remoteAddress: '127.0.0.1' });
      // Each Response is read only after the next one was answered.
      const responses: Response[] = [];
      for (let n = 5000; n < 5008; n += 1) responses.push(await ask(n));
      for (const [i, res] of responses.entries()) expect(await res.text(), `answer ${i}`).toBe(await expectedFor(5000 + i));
      expect(allocations.count()).toBeGreaterThanOrEqual(8);
    } finally {
      await handler.proxy.close();
    }
  });
});
