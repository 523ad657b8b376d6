/**
 * The client API's kept answers (src/surfaces/client-api/features.ts): one build per (flag-set
 * revision, filter), so a poll that revalidates serializes nothing; a new revision builds again.
 */
import { describe, expect, it } from 'vitest';
import { createDefinitionsCache, parseFilter } from '../../src/surfaces/client-api/features.js';
import type { Snapshot } from '../../src/evaluation/engine.js';

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
  it('builds each (revision, filter) once and answers the same body and ETag after that', () => {
    const cache = createDefinitionsCache();
    const first = snapshot(1, ['a.x', 'b.y']);
    const one = cache.answer(first.snapshot, parseFilter(''));
    const two = cache.answer(first.snapshot, parseFilter(''));
    expect(first.reads()).toBe(1);
    expect(two.body).toBe(one.body);
    expect(two.etag).toBe(one.etag);
    // The same filter written another way is the same entry.
    cache.answer(first.snapshot, parseFilter('project=b&project=a'));
    cache.answer(first.snapshot, parseFilter('project=a,b'));
    expect(first.reads()).toBe(2);
    const next = snapshot(2, ['a.x']);
    const three = cache.answer(next.snapshot, parseFilter(''));
    expect(next.reads()).toBe(1);
    expect(three.etag).not.toBe(one.etag);
    expect(JSON.parse(String(three.body))).toEqual({ version: 2, features: [{ name: 'a.x', enabled: true, project: 'a', strategies: [] }], query: {}, segments: [] });
  });

  it('keeps at most 32 filters per revision, building the rest per request', () => {
    const cache = createDefinitionsCache();
    const s = snapshot(1, ['a.x']);
    for (let i = 0; i < 40; i += 1) cache.answer(s.snapshot, parseFilter(`namePrefix=p${i}`));
    expect(s.reads()).toBe(40);
    cache.answer(s.snapshot, parseFilter('namePrefix=p0'));
    cache.answer(s.snapshot, parseFilter('namePrefix=p39'));
    expect(s.reads()).toBe(41);
  });
});
