/**
 * A bounded cache of serialized evaluation answers, keyed by (route, names, normalized context) and
 * valid for one snapshot revision: the first lookup under a new revision drops everything.
 *
 * Three tiers share the byte budget: answer bodies (UTF-8, ready to write); the ETag of every
 * answer given recently, so that a poll with a matching `If-None-Match` is answered 304 without
 * evaluating even when its body no longer fits; and the contexts of recent GET requests by their
 * raw query and caller address, so that a repeated poll skips parsing, validating and building its
 * context. Least recently used entries go first. Bodies and ETags hold for one flag-set revision;
 * contexts do not depend on the flags, so they outlive a revision change.
 *
 * No tier keeps a key asked for only once, even with room to spare (nor the bodies and contexts
 * tiers one asked for only twice, see {@link COPY_SIGHTINGS}), and a full tier admits a
 * newcomer only when it has been asked for more often than the entry it would displace (see
 * {@link Sightings}). A flood of contexts seen once each (every new visitor's first request) then
 * neither fills the budget with answers never read again (which, outliving a young-generation
 * collection, made V8 grow both generations: 18 MB more peak RSS under the bench's new contexts)
 * nor flushes the entries in use, nor costs an insertion and an eviction apiece; nor does a
 * population larger than the cache whose contexts each come back once, which would otherwise
 * replace one entry per request, and whose admitted answers, outliving a young-generation
 * collection only to die in the old one, grew the heap by tens of MB.
 */
import type { EvaluationContext } from './context.js';

/** One cached answer. */
export interface CachedAnswer {
  /**
   * The body, as it was built: the bytes a `/proxy` answer of more than a few flags was copied
   * into (see `BYTES_ANSWER_CHARS` in toggle-answers.ts), or a string (a short answer, or one
   * joined from fragments or by `JSON.stringify`; the writer hands a long one to node as bytes,
   * see `endBody` in http.ts). Once kept, a string may be bytes instead
   * ({@link OfferOptions.asBytes}): encoded once, written by every hit.
   */
  body: string | Buffer;
  etag: string;
  /** For lookups by name: whether each named toggle was on (usage is counted on every hit). */
  enabled: boolean[] | undefined;
  /** Compressed body, made on first need. */
  gzipped?: Buffer;
  /** Epoch ms from which the answer may differ (a date constraint's instant); `Infinity` if never. */
  expiresAt: number;
}

/** The cache of one proxy. */
export interface AnswerCache {
  get(revision: number, key: string): CachedAnswer | undefined;
  /** The ETag of an answer given under this revision, even one whose body was evicted. */
  etag(revision: number, key: string): { etag: string; enabled: boolean[] | undefined; expiresAt: number } | undefined;
  /** Offers an answer; says whether its body was kept (so that it may be read again later). */
  set(revision: number, key: string, answer: CachedAnswer, options?: OfferOptions): boolean;
  /** The context a request identified by `requestKey` was parsed to (see `requestKey` in routes/evaluate.ts). */
  context(requestKey: string): RememberedContext | undefined;
  /** Remembers (a frozen copy of) a request's parsed context; `remembered` itself is left as it is. */
  rememberContext(requestKey: string, remembered: RememberedContext): void;
  /** Bytes held (approximate). */
  size(): number;
}

/** How an answer offered to the cache is kept. */
export interface OfferOptions {
  /**
   * Whether to keep its ETag apart from its body (default true). False for an answer whose ETag
   * carries a tag that answers its polls by itself (a request or context tag): the ETag part
   * then holds only what a poll can need it for.
   */
  withEtag?: boolean;
  /**
   * Keep a string body as its UTF-8 bytes (default false): for answers written as they are, which
   * node then sends from the Buffer, rather than encoding (or, if short, joining to the header
   * block on V8's heap) the same string again on every hit; a reader that edits the body (OFREP
   * adds its event streams) keeps the string.
   */
  asBytes?: boolean;
}

/** A parsed request context, remembered by what identified the request before parsing. */
export interface RememberedContext {
  /** Frozen, and shared by every request that maps to it: copy it ({@link copyContext}) before handing it on. */
  readonly context: EvaluationContext;
  /**
   * The answer cache key of the request (route and {@link contextKey}). Kept as one string so that
   * its hash, computed on the first lookup, serves every later one.
   */
  readonly answerKey: string;
}

/**
 * Shares of the budget. An ETag (about 0.6 kB with its key) saves a whole evaluation when a poll
 * repeats; a remembered context (about 2.3 kB) saves parsing, validating and building it (most of
 * what a 304 cost before); a body (as large as the answer: 11 kB for 60 toggles, 55 kB for 300)
 * saves the evaluation of a repeat without `If-None-Match`. At the default 8 MiB that is about
 * 4,000 ETags, 700 contexts and 4 MiB of bodies. Polls that send back a request or context tag
 * need none of them, and an answer carrying one keeps no ETag of its own ({@link OfferOptions}),
 * answers that hold only until a date included: the ETags serve OFREP polls across a change of
 * its token window, and ETags sent back without a tag (the predecessor's form).
 */
const ETAG_SHARE = 0.3;
const CONTEXT_SHARE = 0.2;
const ENTRY_OVERHEAD = 96;
/**
 * Sightings before a context is remembered or an answer's body is kept (its ETag: two).
 * Each is a copy that outlives young-generation collections: a remembered context about 2.3 kB,
 * a kept body its key and a few objects (the bytes are off V8's heap). Polls that send their tag
 * back never reach the cache, so a polling client's context comes back untagged only on a page
 * load or after a flag change: kept on the second sighting, a population larger than the cache
 * copied a context and an answer into the old generation per such request (3.5 MB survived young
 * collections in the bench's 20,000-client window at 200 flags, enough for V8 to double its young
 * generation: 16 MB more peak RSS; docs/performance.md). A key asked for a third time (a busy
 * server-side caller, a hot user) is worth the copies; an ETag, a few hundred bytes that save a
 * poll its whole evaluation, is kept from the second.
 */
const COPY_SIGHTINGS = 3;
/**
 * Bytes of a remembered context besides its strings: the frozen context and its properties, two
 * dictionary-mode objects (measured: 2.25 kB of heap in all for an SDK context of ten fields,
 * 1.6 kB of which its strings and keys).
 */
const CONTEXT_OVERHEAD = 560;

/**
 * How often each key was offered recently. Whether a key was offered before at all is told by a
 * table of 32-bit hashes (a key offered twice within about {@link SEEN_SLOTS} other keys is
 * recognised; a collision only forgets one); how often, by a count-min sketch (four rows of small
 * counters, a key's estimate the least of its four) halved every {@link SKETCH_PERIOD} offers so
 * that old sightings fade. A collision can only raise an estimate past the second sighting: a key
 * is then let in a little early or kept a little longer, never answered wrongly, since the cache
 * itself compares whole keys.
 */
class Sightings {
  /** Both allocated on the first offer: a cache never written needs neither. */
  private seen: Int32Array | undefined;
  private counts: Uint8Array | undefined;
  private offers = 0;
  /** Counts one more sighting of the key with this {@link keyHash}; returns the key's estimate. */
  add(hash: number): number {
    const seen = (this.seen ??= new Int32Array(SEEN_SLOTS));
    const counts = (this.counts ??= new Uint8Array(SKETCH_ROWS * SKETCH_WIDTH));
    // The low bit is forced to 1 so that an empty slot (0) never matches.
    const tag = hash | 1;
    const slot = (tag >>> 1) & (SEEN_SLOTS - 1);
    const before = seen[slot] === tag;
    seen[slot] = tag;
    // Conservative update: only the counters at the key's least go up, so that keys sharing a
    // counter raise each other's estimates as little as they can.
    let least = leastCount(counts, hash);
    if (least < SKETCH_MAX) {
      for (let row = 0; row < SKETCH_ROWS; row += 1) {
        const i = sketchIndex(hash, row);
        if (counts[i] === least) counts[i] = least + 1;
      }
      least += 1;
    }
    this.offers += 1;
    if (this.offers === SKETCH_PERIOD) {
      this.offers = 0;
      for (let i = 0; i < counts.length; i += 1) counts[i] = (counts[i] as number) >>> 1;
    }
    // A first sighting is one, whatever other keys left in the counters.
    return before ? Math.max(2, least) : 1;
  }
  /** The key's estimate, without counting a sighting. */
  estimate(hash: number): number {
    return this.counts === undefined ? 0 : leastCount(this.counts, hash);
  }
}

/** Slots of a {@link Sightings}' table of hashes (256 KiB), and its sketch's rows and counters per row (128 KiB), whatever the cache's budget. */
const SEEN_SLOTS = 1 << 16;
const SKETCH_ROWS = 4;
const SKETCH_BITS = 15;
const SKETCH_WIDTH = 1 << SKETCH_BITS;
/** Offers between two halvings: about one per counter of a row, so collisions stay rare. */
const SKETCH_PERIOD = SKETCH_WIDTH;
/** A count stops here: being asked for fifteen times is as good as being asked for more. */
const SKETCH_MAX = 15;
/** Odd multipliers, one per row, that spread a hash over a row's counters. */
const SKETCH_MIX = [0x9e3779b1, 0x85ebca77, 0xc2b2ae3d, 0x27d4eb2f];

function sketchIndex(hash: number, row: number): number {
  return row * SKETCH_WIDTH + (Math.imul(hash, SKETCH_MIX[row] as number) >>> (32 - SKETCH_BITS));
}

/** A key's estimate in a sketch: the least of its counters, one per row. */
function leastCount(counts: Uint8Array, hash: number): number {
  let least = SKETCH_MAX;
  for (let row = 0; row < SKETCH_ROWS; row += 1) least = Math.min(least, counts[sketchIndex(hash, row)] as number);
  return least;
}

/** FNV-1a over a key's UTF-16 code units. */
function keyHash(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i += 1) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return hash;
}

/** Entries an admission looks at, from the oldest, for one not read since it last moved. */
const VICTIM_SCAN = 8;

/** One entry of an {@link Lru}, with its cost and whether it was read since it last moved. */
interface Slot<V> {
  value: V;
  cost: number;
  used: boolean;
  /** The key's {@link keyHash}, for its count in the tier's {@link Sightings}. */
  hash: number;
}

/**
 * A Map with a byte budget that evicts in least-recently-used order, approximated by "second
 * chance" (CLOCK): a read only marks its entry, and eviction moves a marked entry to the newest
 * end once instead of dropping it. A hit then costs one Map lookup, not the delete and re-insert
 * an exact LRU needs, while entries read between two evictions still survive them.
 */
class Lru<V> {
  private readonly entries = new Map<string, Slot<V>>();
  bytes = 0;
  constructor(
    private readonly budget: number,
    private readonly cost: (key: string, value: V) => number,
    private readonly sightings: Sightings,
    /** Sightings a key needs before it is kept at all. */
    private readonly minSightings = 2,
  ) {}
  get(key: string): V | undefined {
    const slot = this.entries.get(key);
    if (slot === undefined) return undefined;
    slot.used = true;
    return slot.value;
  }
  /**
   * Stores `keep(value)` unless `value` is larger than the budget, or the key (with `hash`, offered
   * `count` times by its {@link Sightings}) was offered fewer than `minSightings` times, or, while
   * full, is not worth what it would displace; says which. What is kept is made here, on admission
   * only (see {@link createAnswerCache}).
   */
  set<T extends V>(key: string, value: T, keep: (value: T) => V, hash: number, count: number): boolean {
    const cost = this.cost(key, value);
    if (cost > this.budget) return false;
    const previous = this.entries.get(key);
    if (previous !== undefined) {
      this.bytes -= previous.cost;
      this.entries.delete(key);
    } else if (count < this.minSightings || (this.bytes + cost > this.budget && !this.admits(count))) {
      // A key offered fewer times than the tier asks is most likely never asked for again: a new
      // visitor's first request, a polling client's page reload.
      return false;
    }
    // Room is made before the newcomer goes in, so that it is never the one evicted.
    this.bytes += cost;
    if (this.bytes > this.budget) this.evict();
    this.entries.set(key, { value: keep(value), cost, used: false, hash });
    return true;
  }
  /**
   * Whether a newcomer asked for `count` (at least two) times is worth evicting for: not when it
   * was seen no more often than the entry next in line for eviction (the oldest not read since it
   * last moved).
   */
  private admits(count: number): boolean {
    let victim: Slot<V> | undefined;
    let scanned = 0;
    for (const slot of this.entries.values()) {
      victim ??= slot;
      if (!slot.used) {
        victim = slot;
        break;
      }
      if ((scanned += 1) === VICTIM_SCAN) break;
    }
    return victim === undefined || count > this.sightings.estimate(victim.hash);
  }
  /** Drops the oldest unmarked entries until within budget; each marked one is spared once. */
  private evict(): void {
    let spared = 0;
    const limit = this.entries.size;
    for (const [key, slot] of this.entries) {
      if (this.bytes <= this.budget) return;
      this.entries.delete(key);
      if (slot.used && spared < limit) {
        // Moved to the newest end, unmarked: iteration reaches it again only after every older entry.
        slot.used = false;
        spared += 1;
        this.entries.set(key, slot);
      } else {
        this.bytes -= slot.cost;
      }
    }
  }
  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}

const keepAnswer = (a: CachedAnswer): CachedAnswer => ({ body: a.body, etag: a.etag, enabled: a.enabled?.slice(), expiresAt: a.expiresAt });
const keepAnswerBytes = (a: CachedAnswer): CachedAnswer => ({ ...keepAnswer(a), body: typeof a.body === 'string' ? Buffer.from(a.body) : a.body });
const keepTag = (a: CachedAnswer): Tag => ({ etag: a.etag, enabled: a.enabled?.slice(), expiresAt: a.expiresAt });
const keepContext = (r: RememberedContext): RememberedContext => ({ context: freezeContext(copyContext(r.context)), answerKey: r.answerKey });

/** An answer's ETag, kept longer than its body. */
type Tag = { etag: string; enabled: boolean[] | undefined; expiresAt: number };

/** Creates a cache holding at most about `maxBytes`. */
export function createAnswerCache(maxBytes: number): AnswerCache {
  const etagBudget = Math.floor(maxBytes * ETAG_SHARE);
  const contextBudget = Math.floor(maxBytes * CONTEXT_SHARE);
  // How often keys were offered: one count for answers (bodies and ETags share their keys), one for contexts.
  const answersSeen = new Sightings();
  const contextsSeen = new Sightings();
  const bodies = new Lru<CachedAnswer>(
    maxBytes - etagBudget - contextBudget,
    (k, a) => 2 * k.length + a.body.length + (a.gzipped?.length ?? 0) + ENTRY_OVERHEAD,
    answersSeen,
    COPY_SIGHTINGS,
  );
  const tags = new Lru<Tag>(
    etagBudget,
    (k, t: Tag | CachedAnswer) => 2 * k.length + 2 * t.etag.length + (t.enabled?.length ?? 0) * 8 + ENTRY_OVERHEAD,
    answersSeen,
  );
  const contexts = new Lru<RememberedContext>(
    contextBudget,
    (k, r) => 2 * k.length + 2 * r.answerKey.length + contextBytes(r.context) + CONTEXT_OVERHEAD + ENTRY_OVERHEAD,
    contextsSeen,
    COPY_SIGHTINGS,
  );
  let current = -1;
  const sync = (revision: number): void => {
    if (revision === current) return;
    bodies.clear();
    tags.clear();
    current = revision;
  };
  return {
    get(revision, key) {
      sync(revision);
      const answer = bodies.get(key);
      return answer && Date.now() < answer.expiresAt ? answer : undefined;
    },
    etag(revision, key) {
      sync(revision);
      const tag = tags.get(key);
      return tag && Date.now() < tag.expiresAt ? tag : undefined;
    },
    // Every entry is a copy made on admission, never the object a request built: V8 places
    // objects in the old generation from birth once their allocation site's objects tend to live
    // long, and the objects every request builds (its context, its answer) must stay short-lived
    // for the young generation to collect them.
    set(revision, key, answer, options) {
      sync(revision);
      // Bodies and ETags share their keys: one sighting, hashed once, counts for both tiers.
      const hash = keyHash(key);
      const count = answersSeen.add(hash);
      const kept = bodies.set(key, answer, options?.asBytes ? keepAnswerBytes : keepAnswer, hash, count);
      if (options?.withEtag !== false) tags.set(key, answer, keepTag, hash, count);
      return kept;
    },
    context: (requestKey) => contexts.get(requestKey),
    rememberContext(requestKey, remembered) {
      const hash = keyHash(requestKey);
      contexts.set(requestKey, remembered, keepContext, hash, contextsSeen.add(hash));
    },
    size: () => bodies.bytes + tags.bytes + contexts.bytes,
  };
}

/**
 * Freezes a context and its properties in place (and returns it): once remembered, a context is
 * shared by every request that maps to it. Freezing costs about a microsecond; a copy would cost
 * several, on every request with a new context.
 */
export function freezeContext(context: EvaluationContext): EvaluationContext {
  Object.freeze(context.properties);
  return Object.freeze(context);
}

/** A copy of a (possibly frozen) context that its receiver may change freely. */
export function copyContext(context: EvaluationContext): EvaluationContext {
  const copy = Object.assign(Object.create(null) as EvaluationContext, context);
  copy.properties = Object.assign(Object.create(null) as Record<string, EvaluationContext['properties'][string]>, context.properties);
  if (context.currentTime instanceof Date) copy.currentTime = new Date(context.currentTime.getTime());
  return copy;
}

/** Approximate bytes of a context's field names and values. */
function contextBytes(context: EvaluationContext): number {
  let bytes = 0;
  for (const field of Object.keys(context)) {
    const value = context[field];
    bytes += 2 * field.length + (typeof value === 'string' ? 2 * value.length : 16) + 16;
  }
  for (const name of Object.keys(context.properties)) {
    const value = context.properties[name];
    bytes += 2 * name.length + (typeof value === 'string' ? 2 * value.length : 16) + 16;
  }
  return bytes;
}

function encode(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Past this many keys, {@link sortedKeys} leaves the sorting to `Array.prototype.sort`. */
const SORTED_IN_PLACE = 24;

/**
 * The own keys of `object` in `Array.prototype.sort`'s order (UTF-16 code units). A context has a
 * handful of fields and properties: an insertion sort in place allocates nothing, where `sort`
 * copied each list into work arrays of its own (1.8 kB of a new context's 22 kB at 200 flags).
 */
function sortedKeys(object: object): string[] {
  const keys = Object.keys(object);
  if (keys.length > SORTED_IN_PLACE) return keys.sort();
  for (let i = 1; i < keys.length; i += 1) {
    const key = keys[i] as string;
    let j = i - 1;
    while (j >= 0 && (keys[j] as string) > key) {
      keys[j + 1] = keys[j] as string;
      j -= 1;
    }
    keys[j + 1] = key;
  }
  return keys;
}

/**
 * A canonical key for a context: every field and property, in sorted order, so two contexts that
 * evaluate the same (and only those) share a key. One JSON list of names and values, the fields
 * first, then `0` (never a name), then the properties: no string of its own per entry (each
 * `name=value` made one, about 1 kB a context at 200 flags), and no separator inside a name or a
 * value can make two contexts collide.
 */
export function contextKey(context: EvaluationContext): string {
  const parts: Array<string | number> = [];
  for (const field of sortedKeys(context)) {
    if (field === 'properties') continue;
    const value = context[field];
    if (value === undefined) continue;
    parts.push(field, value instanceof Date ? value.toISOString() : encode(value));
  }
  parts.push(0);
  const properties = context.properties;
  for (const name of sortedKeys(properties)) parts.push(name, encode(properties[name]));
  return JSON.stringify(parts);
}
