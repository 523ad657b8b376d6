/**
 * What the proxy allocates on V8's heap per request with a context never seen before, garbage
 * included: the figure `npm run bench` reports as heap kB/req, and issue 16 asks to go down. The
 * fixture (test/unit/fixtures/young-garbage.ts) serves 200 flags in a process of its own, the
 * requests sent from another, and counts what its heap took in between (bench/heap.ts's way).
 *
 * Measured (tsx, Node 20, 2026-11-28): `GET /proxy` 23.4 kB before and 20.7 kB after sorting a
 * context's keys in place, keying it without a string per entry and matching header names without
 * lower-cased copies; an OFREP bulk evaluation 111.3 kB before, 85.9 kB once its answer was joined
 * flat and 57.5 kB once its event streams were added to it as bytes (no rope for node to flatten).
 * About 9 kB of each is node's own HTTP server (the bare server of the benchmark).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);
const FIXTURE_TIMEOUT = 60_000;

/** Heap bytes allocated per request over `requests` new contexts of one kind, sent apart. */
async function allocatedPerRequest(requests: number, kind: 'get' | 'ofrep'): Promise<number> {
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', 'test/unit/fixtures/young-garbage.ts', String(requests), '0', '200', 'apart', ...(kind === 'ofrep' ? ['ofrep'] : [])],
    { cwd: root, timeout: FIXTURE_TIMEOUT, maxBuffer: 16 * 1024 * 1024 },
  );
  const line = stdout.split('\n').find((l) => l.startsWith('ALLOCATED '));
  expect(line, stdout.slice(-2000)).toBeDefined();
  const bytes = Number(line!.slice('ALLOCATED '.length));
  // Nothing measured would prove nothing.
  expect(bytes).toBeGreaterThan(requests * 1000);
  return bytes / requests;
}

describe('heap allocated per new context (200 flags)', () => {
  it('GET /proxy stays under 22 kB (23.4 kB before)', async () => {
    expect(await allocatedPerRequest(3000, 'get')).toBeLessThan(22_000);
  }, FIXTURE_TIMEOUT);

  it('an OFREP bulk evaluation stays under 65 kB (111 kB before)', async () => {
    expect(await allocatedPerRequest(3000, 'ofrep')).toBeLessThan(65_000);
  }, FIXTURE_TIMEOUT);
});
