/**
 * The bench's wrk runs (bench/wrk.ts): the requests a scenario draws are the bytes a real server
 * receives, in order, never repeated unless the drawn ones run out (which is counted), and the
 * counts wrk reports match what the server saw.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wrapped } from '../../bench/measure.js';
import { prepareWrk, rawRequest, writeRequests, wrkVersion } from '../../bench/wrk.js';

const installed = wrkVersion() !== undefined;
// .ci/run installs wrk: there these tests must run, not skip.
if (!installed && process.env.CI) throw new Error('wrk is not installed but CI is set: apt-get install wrk');

/** A scenario's request definition that numbers its requests from `first`, as the unique scenarios do. */
function numbered(first: number, method: 'GET' | 'POST' = 'GET', body?: (n: number) => string): autocannon.Request[] {
  let n = first;
  return [
    {
      method,
      setupRequest(req) {
        const i = n++;
        req.path = `/n?${i}`;
        req.headers = { authorization: 'key', 'x-n': String(i) };
        if (body) req.body = body(i);
        return req;
      },
    },
  ];
}

describe('drawing requests', () => {
  it('writes each request as the bytes autocannon would send, with host and the body length in bytes', () => {
    expect(rawRequest('127.0.0.1:9', 'POST', '/p?a=1', { 'content-type': 'application/json' }, '{"é":1}').toString('utf8')).toBe(
      'POST /p?a=1 HTTP/1.1\r\nhost: 127.0.0.1:9\r\ncontent-type: application/json\r\ncontent-length: 8\r\n\r\n{"é":1}',
    );
    expect(rawRequest('h', 'GET', '/', {}, undefined).toString()).toBe('GET / HTTP/1.1\r\nhost: h\r\n\r\n');
  });

  it('draws them in order from setupRequest, each as <length>\\n<bytes>', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-test-'));
    try {
      const file = join(dir, 'requests');
      writeRequests(file, 'h', numbered(5), 3);
      const text = readFileSync(file, 'latin1');
      const entries: string[] = [];
      for (let at = 0; at < text.length; ) {
        const newline = text.indexOf('\n', at);
        const length = Number(text.slice(at, newline));
        entries.push(text.slice(newline + 1, newline + 1 + length));
        at = newline + 1 + length;
      }
      expect(entries.map((e) => e.split('\r\n')[0])).toEqual(['GET /n?5 HTTP/1.1', 'GET /n?6 HTTP/1.1', 'GET /n?7 HTTP/1.1']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('removes a prepared run\'s files when it is discarded unstarted, and lets it start only once', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'bench-wrk-test-'));
    try {
      const run = prepareWrk({ base: 'http://127.0.0.1:1', requests: numbered(1), connections: 1, duration: 0.3, scratch });
      expect(readdirSync(scratch)).toHaveLength(1);
      run.discard();
      run.discard();
      expect(readdirSync(scratch)).toEqual([]);
      if (installed) {
        const again = prepareWrk({ base: 'http://127.0.0.1:1', requests: numbered(1), connections: 1, duration: 0.3, scratch });
        await expect(again.start()).rejects.toThrow(/unable to connect/);
        await expect(again.start()).rejects.toThrow('a prepared wrk run is started once');
        expect(readdirSync(scratch)).toEqual([]);
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('notes a window whose differing requests ran out and were sent again, and only such a window', () => {
    const load = { count: 10, seconds: 1, rps: 10, p50: 1, p99: 1, statuses: { 200: 10 }, errors: 0, inFlight: 0 };
    expect(wrapped(numbered(1), { ...load, wraps: 2 })).toBe('the requests drawn for the window ran out 2 times and were sent again');
    expect(wrapped(numbered(1), { ...load, wraps: 1 })).toBe('the requests drawn for the window ran out 1 time and were sent again');
    expect(wrapped(numbered(1), { ...load, wraps: 0 })).toBeUndefined();
    // autocannon's runs have no wraps; a fixed request (health) repeats by design.
    expect(wrapped(numbered(1), load)).toBeUndefined();
    expect(wrapped([{ method: 'GET', path: '/proxy/health' }], { ...load, wraps: 5 })).toBeUndefined();
  });
});

describe.skipIf(!installed)('a wrk run against a real server', () => {
  let server: http.Server;
  let base: string;
  const seen: string[] = [];
  const bodies: string[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push(req.url ?? '');
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => (body += d));
      req.on('end', () => {
        if (body) bodies.push(body);
        // Every third request is answered 304, to see statuses counted apart.
        const n = Number((req.url ?? '').split('?')[1]);
        res.writeHead(n % 3 === 0 ? 304 : 200, { 'content-type': 'text/plain' });
        res.end(n % 3 === 0 ? undefined : 'ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('sends the drawn requests in order, each once, for the window asked (a fraction of a second), and counts what came back', async () => {
    seen.length = 0;
    const started = performance.now();
    const result = await prepareWrk({ base, requests: numbered(1000), connections: 4, duration: 0.6 }).start();
    const elapsed = (performance.now() - started) / 1000;
    expect(result.count).toBeGreaterThan(100);
    expect(result.wraps).toBe(0);
    expect(result.errors).toBe(0);
    expect(result.seconds).toBeGreaterThanOrEqual(0.6);
    expect(result.seconds).toBeLessThan(0.6 + 0.25);
    expect(elapsed).toBeLessThan(5);
    // What the server answered: all of it, and at most `connections` more sent but not answered.
    expect(seen.length).toBeGreaterThanOrEqual(result.count);
    expect(seen.length).toBeLessThanOrEqual(result.count + result.inFlight);
    expect(new Set(seen).size).toBe(seen.length);
    const numbers = seen.map((url) => Number(url.split('?')[1])).sort((a, b) => a - b);
    // wrk takes the first drawn request to check the script's requests before it connects.
    expect(numbers[0]).toBe(1001);
    expect(numbers.at(-1)).toBeLessThan(1000 + seen.length + 4);
    const answered304 = seen.filter((url) => Number(url.split('?')[1]) % 3 === 0).length;
    expect(result.statuses['304'] ?? 0).toBeGreaterThan(0);
    expect((result.statuses['200'] ?? 0) + (result.statuses['304'] ?? 0)).toBe(result.count);
    expect(Math.abs((result.statuses['304'] ?? 0) - answered304)).toBeLessThanOrEqual(4);
    expect(result.p50).toBeGreaterThan(0);
    expect(result.p99).toBeGreaterThanOrEqual(result.p50);
  });

  it('sends bodies byte for byte, and starts over when the drawn requests run out, counting each time', async () => {
    seen.length = 0;
    bodies.length = 0;
    const result = await prepareWrk({ base, requests: numbered(1, 'POST', (n) => JSON.stringify({ n, name: 'é' })), connections: 2, duration: 0.4, drawn: 5 }).start();
    expect(result.wraps).toBeGreaterThan(0);
    expect(new Set(seen)).toEqual(new Set(['/n?1', '/n?2', '/n?3', '/n?4', '/n?5']));
    expect(new Set(bodies)).toEqual(new Set([1, 2, 3, 4, 5].map((n) => JSON.stringify({ n, name: 'é' }))));
  });

  it('fails with what wrk said when it cannot connect', async () => {
    await expect(prepareWrk({ base: 'http://127.0.0.1:1', requests: numbered(1), connections: 1, duration: 0.3 }).start()).rejects.toThrow(/wrk \(exit 1\) printed no result: unable to connect/);
  });
});
