/**
 * A bounded cache of serialized evaluation answers, keyed by (route, names, normalized context) and
 * valid for one snapshot revision: the first lookup under a new revision drops everything.
 *
 * Two tiers share the byte budget: answer bodies (UTF-8, ready to write) and, much smaller, the
 * ETag of every answer given recently, so that a poll with a matching `If-None-Match` is answered
 * 304 without evaluating even when its body no longer fits. Least recently used entries go first.
 */
import type { EvaluationContext } from './context.js';

/** One cached answer. */
export interface CachedAnswer {
  body: Buffer;
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
  set(revision: number, key: string, answer: CachedAnswer): void;
  /** Bytes held (approximate). */
  size(): number;
}

/** Share of the budget for the ETag tier. */
const ETAG_SHARE = 0.25;
const ENTRY_OVERHEAD = 96;

/** A Map used as an LRU with a byte budget. */
class Lru<V> {
  private readonly entries = new Map<string, V>();
  bytes = 0;
  constructor(
    private readonly budget: number,
    private readonly cost: (key: string, value: V) => number,
  ) {}
  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      // Re-insert to mark as most recently used (a Map keeps insertion order).
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }
  set(key: string, value: V): void {
    const cost = this.cost(key, value);
    if (cost > this.budget) return;
    const previous = this.entries.get(key);
    if (previous !== undefined) {
      this.bytes -= this.cost(key, previous);
      this.entries.delete(key);
    }
    this.entries.set(key, value);
    this.bytes += cost;
    for (const [oldKey, old] of this.entries) {
      if (this.bytes <= this.budget) break;
      this.entries.delete(oldKey);
      this.bytes -= this.cost(oldKey, old);
    }
  }
  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}

/** Creates a cache holding at most about `maxBytes`. */
export function createAnswerCache(maxBytes: number): AnswerCache {
  type Tag = { etag: string; enabled: boolean[] | undefined; expiresAt: number };
  const etagBudget = Math.floor(maxBytes * ETAG_SHARE);
  const bodies = new Lru<CachedAnswer>(maxBytes - etagBudget, (k, a) => 2 * k.length + a.body.length + (a.gzipped?.length ?? 0) + ENTRY_OVERHEAD);
  const tags = new Lru<Tag>(etagBudget, (k, t) => 2 * k.length + 2 * t.etag.length + (t.enabled?.length ?? 0) * 8 + ENTRY_OVERHEAD);
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
    set(revision, key, answer) {
      sync(revision);
      bodies.set(key, answer);
      tags.set(key, { etag: answer.etag, enabled: answer.enabled, expiresAt: answer.expiresAt });
    },
    size: () => bodies.bytes + tags.bytes,
  };
}

function encode(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * A canonical key for a context: every field and property, in sorted order, so two contexts that
 * evaluate the same (and only those) share a key.
 */
export function contextKey(context: EvaluationContext): string {
  const parts: string[] = [];
  for (const field of Object.keys(context).sort()) {
    if (field === 'properties') continue;
    const value = context[field];
    if (value === undefined) continue;
    parts.push(`${field}=${value instanceof Date ? value.toISOString() : encode(value)}`);
  }
  const properties = context.properties;
  for (const name of Object.keys(properties).sort()) parts.push(`p.${name}=${encode(properties[name])}`);
  // JSON-encode the list so no separator inside a value can make two contexts collide.
  return JSON.stringify(parts);
}
