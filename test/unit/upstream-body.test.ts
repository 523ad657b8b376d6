/**
 * The upstream's answer as the repository reads it. At 5000 flags the client API answers 3.3 MB of
 * JSON; read as one string in V8's heap, that string alone was 3.3 MB the young collections found
 * alive while it was parsed (they moved it to the old generation, where it stayed until a full
 * collection), which helped grow the young generation to its largest while loading. An answer of
 * ASCII bytes only (names, rules, payloads and descriptions all in plain English) is read as
 * latin1, which node keeps outside V8's heap when it is long; any other answer is decoded as
 * UTF-8, as before.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { upstreamGet } from '../../src/evaluation/upstream-http.js';
import { collect } from '../support/heap.js';

let server: http.Server | undefined;
const agent = new http.Agent({ keepAlive: false });

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** Serves `body` (in 64 kB chunks) and reads it with upstreamGet. */
async function read(body: Buffer): Promise<string> {
  server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    for (let at = 0; at < body.length; at += 65_536) res.write(body.subarray(at, at + 65_536));
    res.end();
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const answer = await upstreamGet(new URL(`http://127.0.0.1:${port}/api/client/features`), {}, { agent, timeoutMs: 10_000, rejectUnauthorized: undefined });
  expect(answer.status).toBe(200);
  return answer.body;
}

/** A flag set of about `bytes` bytes whose one variant payload is `payload`. */
function flagSet(bytes: number, payload: string): string {
  const features = [];
  for (let i = 0, length = 0; length < bytes; i += 1) {
    const feature = { name: `flag-${i}`, enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [] }] };
    features.push(feature);
    length += JSON.stringify(feature).length + 1;
  }
  features.push({ name: 'with-payload', enabled: true, strategies: [], variants: [{ name: 'v', weight: 1000, payload: { type: 'string', value: payload } }] });
  return JSON.stringify({ version: 2, features });
}

/** Bytes of V8's heap kept while `hold` holds what `make` resolves to. */
async function heapKept<T>(make: () => Promise<T>): Promise<{ value: T; bytes: number }> {
  collect();
  const before = process.memoryUsage().heapUsed;
  const value = await make();
  collect();
  return { value, bytes: process.memoryUsage().heapUsed - before };
}

describe('the upstream answer as read', () => {
  it('is the same text for ASCII and for UTF-8 answers', async () => {
    for (const payload of ['plain', 'café ☕ 🚀 ü', '\u{10FFFF}']) {
      const text = flagSet(10_000, payload);
      const body = await read(Buffer.from(text, 'utf8'));
      expect(body).toBe(text);
      expect((JSON.parse(body) as { features: Array<{ variants?: Array<{ payload: { value: string } }> }> }).features.at(-1)?.variants?.[0]?.payload.value).toBe(payload);
    }
  });

  it('keeps a long ASCII answer outside V8’s heap, and a long UTF-8 one in it', async () => {
    const ascii = flagSet(4_000_000, 'plain');
    const kept = await heapKept(() => read(Buffer.from(ascii)));
    expect(kept.value).toBe(ascii);
    // Measured: under 0.2 MB; 3.9 MB when it was read as UTF-8, as the answer below still is.
    expect(kept.bytes).toBeLessThan(1_000_000);

    const accented = flagSet(4_000_000, 'café');
    const keptAccented = await heapKept(() => read(Buffer.from(accented, 'utf8')));
    expect(keptAccented.value).toBe(accented);
    expect(keptAccented.bytes).toBeGreaterThan(3_500_000);
  });
});
