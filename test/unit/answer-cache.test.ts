import { describe, expect, it } from 'vitest';
import { contextKey, copyContext, createAnswerCache, freezeContext, type AnswerCache, type CachedAnswer } from '../../src/core/answer-cache.js';
import { buildContext } from '../../src/core/context.js';

const answer = (bytes: number, etag = 'W/"1"'): CachedAnswer => ({ body: 'x'.repeat(bytes), etag, enabled: undefined, expiresAt: Infinity });
const remembered = (userId: string) => {
  const context = freezeContext(buildContext({ userId, sessionId: 's', properties: { region: 'eu' } }));
  return { context, answerKey: `e${contextKey(context)}` };
};
/** Offers an answer twice: its ETag is kept from its second sighting on (see the first tests). */
const setTwice = (cache: AnswerCache, key: string, offered: CachedAnswer): void => {
  cache.set(1, key, offered);
  cache.set(1, key, offered);
};
/** Offers an answer three times: its body is kept from its third sighting on. */
const setThrice = (cache: AnswerCache, key: string, offered: CachedAnswer): void => {
  for (let i = 0; i < 3; i += 1) cache.set(1, key, offered);
};
/** Offers a context three times: a context is remembered from its third sighting on. */
const rememberThrice = (cache: AnswerCache, requestKey: string, context: ReturnType<typeof remembered>): void => {
  for (let i = 0; i < 3; i += 1) cache.rememberContext(requestKey, context);
};

describe('createAnswerCache', () => {
  it('keeps nothing seen once, even with room to spare: a flood of new contexts costs it no memory', () => {
    // Every new visitor's first request: keeping its answer would fill the budget with answers
    // never read again, each outliving a young-generation collection into the old one, and make
    // V8 grow both (peak RSS 80 against 98 MB in the bench's first scenario at 200 flags).
    const cache = createAnswerCache(1024 * 1024);
    const said: boolean[] = [];
    for (let i = 0; i < 1000; i += 1) {
      said.push(cache.set(1, `once-${i}`, answer(500)));
      cache.rememberContext(`e127.0.0.1 userId=${i}`, remembered(String(i)));
    }
    expect(said.every((kept) => !kept)).toBe(true);
    expect(cache.size()).toBe(0);
    expect(cache.get(1, 'once-999')).toBeUndefined();
    expect(cache.etag(1, 'once-999')).toBeUndefined();
    expect(cache.context('e127.0.0.1 userId=999')).toBeUndefined();
    // Asked for again, its ETag is kept; a third time, its body and its context too (see the next test).
    expect(cache.set(1, 'once-999', answer(500, 'W/"again"'))).toBe(false);
    expect(cache.etag(1, 'once-999')?.etag).toBe('W/"again"');
    expect(cache.set(1, 'once-999', answer(500, 'W/"again"'))).toBe(true);
    cache.rememberContext('e127.0.0.1 userId=999', remembered('999'));
    cache.rememberContext('e127.0.0.1 userId=999', remembered('999'));
    expect(cache.get(1, 'once-999')?.etag).toBe('W/"again"');
    expect(cache.etag(1, 'once-999')?.etag).toBe('W/"again"');
    expect(cache.context('e127.0.0.1 userId=999')?.context.userId).toBe('999');
    expect(cache.size()).toBeGreaterThan(500);
  });

  it('remembers a context and keeps a body from their third sighting on, an ETag from its second', () => {
    // A remembered context (about 2.3 kB) and a kept body outlive young-generation collections. A
    // browser polls with its ETag, answered from the request alone, so its context comes back
    // untagged only on a page load or after a flag change: keeping both on the second sighting,
    // in a population larger than the cache, copied one context and one answer per such request
    // into the old generation (3.5 MB survived young collections in the bench's 20,000-client
    // window at 200 flags, enough to make V8 double its young generation: 16 MB more peak RSS).
    const cache = createAnswerCache(1024 * 1024);
    for (let i = 0; i < 2; i += 1) {
      cache.rememberContext('e127.0.0.1 userId=1', remembered('1'));
      expect(cache.set(1, 'key-1', answer(500, 'W/"1"'))).toBe(false);
    }
    expect(cache.context('e127.0.0.1 userId=1')).toBeUndefined();
    expect(cache.get(1, 'key-1')).toBeUndefined();
    // The ETag (a few hundred bytes) already saves a poll its evaluation.
    expect(cache.etag(1, 'key-1')?.etag).toBe('W/"1"');
    cache.rememberContext('e127.0.0.1 userId=1', remembered('1'));
    expect(cache.set(1, 'key-1', answer(500, 'W/"1"'))).toBe(true);
    expect(cache.context('e127.0.0.1 userId=1')?.context.userId).toBe('1');
    expect(cache.get(1, 'key-1')?.etag).toBe('W/"1"');
  });

  it('keeps every tier within its share of the budget, however many entries arrive', () => {
    const cache = createAnswerCache(64 * 1024);
    for (let i = 0; i < 5000; i += 1) {
      // Each key as often as it takes to be kept (see above).
      setThrice(cache, `key-${i}`, answer(500));
      rememberThrice(cache, `e127.0.0.1 userId=${i}`, remembered(String(i)));
    }
    expect(cache.size()).toBeGreaterThan(32 * 1024);
    expect(cache.size()).toBeLessThanOrEqual(64 * 1024);
    // Every key was seen as often as those already in: they stayed (but for the odd newcomer whose
    // estimate a collision raised), and the newcomers were turned away.
    const bodiesLeft = Array.from({ length: 100 }, (_, i) => cache.get(1, `key-${i}`)).filter(Boolean).length;
    expect(bodiesLeft).toBeGreaterThanOrEqual(45);
    expect(cache.get(1, 'key-4999')).toBeUndefined();
    const contextsLeft = Array.from({ length: 100 }, (_, i) => cache.context(`e127.0.0.1 userId=${i}`)).filter(Boolean).length;
    expect(contextsLeft).toBeGreaterThanOrEqual(10);
    expect(cache.context('e127.0.0.1 userId=4999')).toBeUndefined();
    // A key asked for more often than the entries in place gets in, in every tier.
    for (let i = 0; i < 4; i += 1) {
      cache.set(1, 'key-4999', answer(500));
      cache.rememberContext('e127.0.0.1 userId=4999', remembered('4999'));
    }
    expect(cache.get(1, 'key-4999')).toBeDefined();
    expect(cache.context('e127.0.0.1 userId=4999')?.context.userId).toBe('4999');
  });

  it('does not churn when every newcomer is seen as often as the residents: the entries in place stay until they are seen less', () => {
    // A population larger than the cache whose contexts each come back without an ETag (page
    // reloads): admitting each as soon as it qualifies would replace one entry per request, and
    // each admitted answer would outlive a young-generation collection only to die in the old one.
    const residents = (cache: AnswerCache): number => Array.from({ length: 200 }, (_, i) => cache.get(1, `resident-${i}`)).filter(Boolean).length;
    const fill = (): AnswerCache => {
      const cache = createAnswerCache(64 * 1024);
      for (let thrice = 0; thrice < 3; thrice += 1) for (let i = 0; i < 200; i += 1) cache.set(1, `resident-${i}`, answer(500));
      return cache;
    };
    // The same cache without the visitors: how many residents fit.
    const fitting = residents(fill());
    expect(fitting).toBeGreaterThan(30);
    expect(fitting).toBeLessThan(200);
    const cache = fill();
    for (let i = 0; i < 2000; i += 1) setThrice(cache, `visitor-${i}`, answer(500));
    expect(cache.get(1, 'visitor-1999')).toBeUndefined();
    expect(cache.etag(1, 'visitor-1999')).toBeUndefined();
    // Seen a fourth time, a visitor outweighs a resident seen three times, and takes one resident's place.
    cache.set(1, 'visitor-1999', answer(500));
    expect(cache.get(1, 'visitor-1999')).toBeDefined();
    expect(residents(cache)).toBe(fitting - 1);
  });

  it('spares an entry read since it was stored when evicting, and drops the oldest unread one', () => {
    // Room for three 1000-byte bodies (and their keys) in the bodies tier: half of 7000.
    const cache = createAnswerCache(7000);
    for (const key of ['a', 'b', 'c']) setThrice(cache, key, answer(1000));
    expect(cache.get(1, 'a')).toBeDefined();
    // Full: 'd' gets in once seen more often than the entry next in line, here on its fourth sighting.
    setThrice(cache, 'd', answer(1000));
    expect(cache.get(1, 'd')).toBeUndefined();
    cache.set(1, 'd', answer(1000));
    expect(cache.get(1, 'a')).toBeDefined();
    expect(cache.get(1, 'b')).toBeUndefined();
    expect(cache.get(1, 'd')).toBeDefined();
  });

  it('turns away keys seen once while full, so a flood of new contexts leaves the ones in use', () => {
    const cache = createAnswerCache(7000);
    for (const key of ['a', 'b', 'c']) setThrice(cache, key, answer(1000));
    rememberThrice(cache, 'e127.0.0.1 userId=hot', remembered('hot'));
    const held = cache.size();
    for (let i = 0; i < 20_000; i += 1) {
      cache.set(1, `once-${i}`, answer(1000));
      cache.rememberContext(`e127.0.0.1 userId=${i}`, remembered(String(i)));
    }
    for (const key of ['a', 'b', 'c']) expect(cache.get(1, key)).toBeDefined();
    expect(cache.get(1, 'once-19999')).toBeUndefined();
    expect(cache.etag(1, 'once-19999')).toBeUndefined();
    expect(cache.context('e127.0.0.1 userId=hot')?.context.userId).toBe('hot');
    expect(cache.context('e127.0.0.1 userId=19999')).toBeUndefined();
    expect(cache.size()).toBe(held);
    // A key that comes back more often than the entries in place (each asked for three times) is let in, its ETag with it.
    setThrice(cache, 'once-19999', answer(1000, 'W/"again"'));
    expect(cache.get(1, 'once-19999')?.etag).toBe('W/"again"');
    expect(cache.etag(1, 'once-19999')?.etag).toBe('W/"again"');
  });

  it('keeps a frozen copy of a remembered context, and leaves the request\'s own as it was', () => {
    const cache = createAnswerCache(8000);
    const kept = { context: buildContext({ userId: 'kept', properties: { plan: 'pro' } }), answerKey: 'e1' };
    rememberThrice(cache, 'e127.0.0.1 userId=kept', kept);
    const remembered = cache.context('e127.0.0.1 userId=kept');
    expect(remembered?.answerKey).toBe('e1');
    expect(remembered?.context).not.toBe(kept.context);
    expect({ ...remembered?.context, properties: { ...remembered?.context.properties } }).toEqual({ userId: 'kept', properties: { plan: 'pro' } });
    expect(Object.isFrozen(remembered?.context)).toBe(true);
    expect(Object.isFrozen(remembered?.context.properties)).toBe(true);
    expect(Object.isFrozen(kept.context)).toBe(false);
    const tooBig = { context: buildContext({ userId: 'x'.repeat(8000) }), answerKey: 'e2' };
    rememberThrice(cache, 'e127.0.0.1 userId=big', tooBig);
    expect(Object.isFrozen(tooBig.context)).toBe(false);
    expect(Object.isFrozen(tooBig.context.properties)).toBe(false);
  });

  it('drops answers and ETags on a new revision, and keeps remembered contexts (they do not depend on the flags)', () => {
    const cache = createAnswerCache(1024 * 1024);
    setTwice(cache, 'k', answer(10, 'W/"a"'));
    rememberThrice(cache, 'e127.0.0.1 userId=1', remembered('1'));
    expect(cache.etag(1, 'k')?.etag).toBe('W/"a"');
    expect(cache.get(2, 'k')).toBeUndefined();
    expect(cache.etag(2, 'k')).toBeUndefined();
    expect(cache.context('e127.0.0.1 userId=1')?.answerKey).toBe(remembered('1').answerKey);
  });

  it('keeps no ETag apart from the body when told its polls never need one (a tagged answer)', () => {
    const cache = createAnswerCache(1024 * 1024);
    for (let thrice = 0; thrice < 3; thrice += 1) cache.set(1, 'tagged', answer(100, 'W/"t"'), { withEtag: false });
    expect(cache.get(1, 'tagged')?.etag).toBe('W/"t"');
    expect(cache.etag(1, 'tagged')).toBeUndefined();
    // An answer too large for the body tier then leaves nothing at all.
    const small = createAnswerCache(1000);
    for (let twice = 0; twice < 2; twice += 1) small.set(1, 'big', answer(5000, 'W/"big"'), { withEtag: false });
    expect(small.etag(1, 'big')).toBeUndefined();
    expect(small.size()).toBe(0);
  });

  it('keeps a string body as its bytes when asked, and leaves the offered answer as it was', () => {
    const cache = createAnswerCache(1024 * 1024);
    const offered = answer(100, 'W/"b"');
    offered.body = '{"toggles":[{"name":"café"}]}';
    for (let thrice = 0; thrice < 3; thrice += 1) cache.set(1, 'bytes', offered, { asBytes: true });
    const kept = cache.get(1, 'bytes')?.body;
    expect(Buffer.isBuffer(kept)).toBe(true);
    expect((kept as Buffer).equals(Buffer.from('{"toggles":[{"name":"café"}]}'))).toBe(true);
    expect(offered.body).toBe('{"toggles":[{"name":"café"}]}');
    // Without it, the string itself.
    for (let thrice = 0; thrice < 3; thrice += 1) cache.set(1, 'text', offered);
    expect(cache.get(1, 'text')?.body).toBe('{"toggles":[{"name":"café"}]}');
  });

  it('refuses an entry larger than its tier (an answer too big to keep still leaves its ETag)', () => {
    const cache = createAnswerCache(1000);
    setTwice(cache, 'big', answer(5000, 'W/"big"'));
    rememberThrice(cache, `e127.0.0.1 ${'x'.repeat(5000)}`, remembered('1'));
    expect(cache.get(1, 'big')).toBeUndefined();
    expect(cache.etag(1, 'big')?.etag).toBe('W/"big"');
    expect(cache.context(`e127.0.0.1 ${'x'.repeat(5000)}`)).toBeUndefined();
    expect(cache.size()).toBeLessThanOrEqual(200);
  });
});

describe('freezeContext and copyContext', () => {
  it('freezes a context in place, and copies it into one its receiver may change', () => {
    const context = buildContext({ userId: '1', currentTime: '2030-01-02T03:04:05Z', properties: { region: 'eu' } });
    const key = contextKey(context);
    const frozen = freezeContext(context);
    expect(frozen).toBe(context);
    expect(Object.isFrozen(frozen)).toBe(true);
    expect(Object.isFrozen(frozen.properties)).toBe(true);
    expect(() => {
      (frozen.properties as Record<string, string>).region = 'us';
    }).toThrow(TypeError);
    const copy = copyContext(frozen);
    copy.userId = '2';
    copy.properties.region = 'us';
    copy.currentTime?.setTime(0);
    expect(frozen.userId).toBe('1');
    expect(frozen.properties.region).toBe('eu');
    expect(frozen.currentTime?.toISOString()).toBe('2030-01-02T03:04:05.000Z');
    expect(contextKey(copyContext(frozen))).toBe(key);
  });

  it('keeps __proto__ a plain key in both', () => {
    const frozen = freezeContext(buildContext(JSON.parse('{"__proto__":{"polluted":"yes"},"properties":{"__proto__":"x"}}')));
    const copy = copyContext(frozen);
    expect(Object.getPrototypeOf(copy)).toBeNull();
    expect(Object.getPrototypeOf(copy.properties)).toBeNull();
    expect(copy.properties.__proto__).toBe('x');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('contextKey', () => {
  const shuffled = <T>(list: T[], seed: number): T[] => {
    const out = list.slice();
    for (let i = out.length - 1; i > 0; i -= 1) {
      const j = (seed * (i + 7)) % (i + 1);
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  };

  // Names whose order differs between code units and locale or case-blind orders.
  const names = ['b', 'B', 'a', 'A', '_x', 'Z1', 'z1', 'é', 'e', 'E', '10', '9', 'ab', 'a b'];

  it('is the same key whatever order the fields and properties came in, for few and for many', () => {
    for (const count of [1, 3, names.length, 40]) {
      const list = Array.from({ length: count }, (_, i) => names[i % names.length] + (i >= names.length ? String(i) : ''));
      const keys = [0, 1, 2, 3].map((seed) => {
        const properties = Object.fromEntries(shuffled(list, seed + 1).map((name) => [name, `v-${name}`]));
        const fields = shuffled(['userId', 'sessionId', 'environment'], seed).map((field) => [field, `${field}-1`]);
        return contextKey(buildContext({ ...Object.fromEntries(fields), properties }));
      });
      expect(new Set(keys).size).toBe(1);
      // In code unit order, as Array.prototype.sort puts them.
      // The key is JSON: the properties' names, in the order the key lists them.
      const parts = JSON.parse(keys[0] as string) as unknown[];
      const listed = parts.slice(parts.indexOf(0) + 1).filter((_, i) => i % 2 === 0);
      expect(listed).toEqual(list.slice().sort());
    }
  });

  it('tells contexts apart that differ in one property or one field, whatever their names and values hold', () => {
    const base = { userId: 'u', properties: { a: '1', b: '2' } };
    const key = contextKey(buildContext(base));
    expect(contextKey(buildContext({ ...base, properties: { a: '1', b: '3' } }))).not.toBe(key);
    expect(contextKey(buildContext({ ...base, properties: { a: '1', c: '2' } }))).not.toBe(key);
    expect(contextKey(buildContext({ ...base, userId: 'v' }))).not.toBe(key);
    // A property named as a field is not that field; separators inside names and values split nothing.
    expect(contextKey(buildContext({ properties: { userId: 'u' } }))).not.toBe(contextKey(buildContext({ userId: 'u' })));
    expect(contextKey(buildContext({ properties: { 'a=1,b': '2' } }))).not.toBe(contextKey(buildContext({ properties: { a: '1,b=2' } })));
    expect(contextKey(buildContext({ properties: { a: '1","b', c: '2' } }))).not.toBe(contextKey(buildContext({ properties: { a: '1', b: '", "c' } })));
    // The same context in a fresh copy: the same key.
    expect(contextKey(buildContext(JSON.parse(JSON.stringify(base))))).toBe(key);
  });
});
