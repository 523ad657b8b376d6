/**
 * The client API's kept answers (src/surfaces/client-api/features.ts): one build per (flag-set
 * revision, filter), so a poll that revalidates serializes nothing; a new revision builds again.
 * A build runs in slices between which the event loop turns, and gzips off the main thread: at
 * 5000 flags, serializing and gzipping the 3.3 MB answer at once blocked the first poll after each
 * change, and every request behind it, for about 45 ms.
 */
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createDefinitionsCache, parseFilter } from '../../src/surfaces/client-api/features.js';
import type { Snapshot } from '../../src/evaluation/engine.js';
import { turnsWhile } from '../support/turns.js';

/** A snapshot whose definitions count how often they are read (each build reads them once). */
function snapshot(revision: number, names: string[]): { snapshot: Snapshot; reads: () => number } {
  let reads = 0;
  const features = names.map((name) => ({ name, enabled: true, project: name.split('.')[0], strategies: [] }));
  const value = {
    revision,
    get features() {
      reads += 1;
      return features;
    },
    segments: [],
  } as unknown as Snapshot;
  return { snapshot: value, reads: () => reads };
}

describe('client API definitions cache', () => {
  it('builds each (revision, filter) once and answers the same body and ETag after that', async () => {
    const cache = createDefinitionsCache();
    const first = snapshot(1, ['a.x', 'b.y']);
    const [one, two] = await Promise.all([cache.answer(first.snapshot, parseFilter('')), cache.answer(first.snapshot, parseFilter(''))]);
    expect(first.reads()).toBe(1);
    expect(two.body).toBe(one.body);
    expect(two.etag).toBe(one.etag);
    // The same filter written another way is the same entry.
    await cache.answer(first.snapshot, parseFilter('project=b&project=a'));
    await cache.answer(first.snapshot, parseFilter('project=a,b'));
    expect(first.reads()).toBe(2);
    const next = snapshot(2, ['a.x']);
    const three = await cache.answer(next.snapshot, parseFilter(''));
    expect(next.reads()).toBe(1);
    expect(three.etag).not.toBe(one.etag);
    expect(JSON.parse(String(three.body))).toEqual({ version: 2, features: [{ name: 'a.x', enabled: true, project: 'a', strategies: [] }], query: {}, segments: [] });
  });

  it('keeps at most 32 filters per revision, building the rest per request', async () => {
    const cache = createDefinitionsCache();
    const s = snapshot(1, ['a.x']);
    for (let i = 0; i < 40; i += 1) await cache.answer(s.snapshot, parseFilter(`namePrefix=p${i}`));
    expect(s.reads()).toBe(40);
    await cache.answer(s.snapshot, parseFilter('namePrefix=p0'));
    await cache.answer(s.snapshot, parseFilter('namePrefix=p39'));
    expect(s.reads()).toBe(41);
  });

  it('builds in slices, turning the event loop, into the bytes of the whole answer serialized at once', async () => {
    const cache = createDefinitionsCache();
    const names = Array.from({ length: 3000 }, (_, i) => `p${i % 7}.flag-${i}`);
    const s = snapshot(1, names);
    const { result: answer, turns } = await turnsWhile(() => cache.answer(s.snapshot, parseFilter('project=p1,p3&namePrefix=p')));
    expect(turns).toBeGreaterThan(0);
    const features = names.filter((n) => n.startsWith('p1.') || n.startsWith('p3.')).map((name) => ({ name, enabled: true, project: name.split('.')[0], strategies: [] }));
    expect(String(answer.body)).toBe(JSON.stringify({ version: 2, features, query: { project: ['p1', 'p3'], namePrefix: 'p' }, segments: [] }));
  });

  it('gzips a client that accepts it off the main thread, once per build', async () => {
    const cache = createDefinitionsCache();
    const s = snapshot(1, Array.from({ length: 200 }, (_, i) => `a.flag-${i}`));
    const plain = await cache.answer(s.snapshot, parseFilter(''));
    const gzipped = await cache.answer(s.snapshot, parseFilter(''), undefined, true);
    const again = await cache.answer(s.snapshot, parseFilter(''), undefined, true);
    const bytes = gzipped.compress!();
    expect(again.compress!()).toBe(bytes);
    expect(gunzipSync(bytes).equals(plain.body as Buffer)).toBe(true);
  });
});
