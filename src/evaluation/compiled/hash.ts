/**
 * MurmurHash3 (x86, 32 bit) exactly as unleash-client computes it through the `murmurhash3js`
 * package: over the low byte of each UTF-16 code unit (`charCodeAt(i) & 0xff`), not over UTF-8.
 * Stickiness hashes are always of `${groupId}:${id}`, so the part of the state that depends only on
 * the constant prefix is computed once per strategy or variant table.
 */

/** The seed unleash-client hashes rollout stickiness with. */
export const STRATEGY_SEED = 0;
/** The seed unleash-client hashes variant stickiness with. */
export const VARIANT_SEED = 86028157;

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** Mixes one 4-byte block `k` into `h`. */
function mixBlock(h: number, k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, C2);
  h ^= k;
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** Mixes the whole 4-byte blocks of `key` from `start` to `end` into `h`. */
function mixBlocks(h: number, key: string, start: number, end: number): number {
  for (let i = start; i < end; i += 4) {
    h = mixBlock(
      h,
      (key.charCodeAt(i) & 0xff) |
        ((key.charCodeAt(i + 1) & 0xff) << 8) |
        ((key.charCodeAt(i + 2) & 0xff) << 16) |
        ((key.charCodeAt(i + 3) & 0xff) << 24),
    );
  }
  return h;
}

/** Mixes the last 0–3 bytes of `key` (from `at`) and the total length, then finalizes. */
function finish(h: number, key: string, at: number, total: number): number {
  const rest = key.length - at;
  if (rest > 0) {
    let k = 0;
    if (rest === 3) k ^= (key.charCodeAt(at + 2) & 0xff) << 16;
    if (rest >= 2) k ^= (key.charCodeAt(at + 1) & 0xff) << 8;
    k ^= key.charCodeAt(at) & 0xff;
    h ^= mixTail(k);
  }
  return finalMix(h, total);
}

/** The last 1–3 bytes of a key (`k`, little-endian), mixed to be XORed into the state. */
function mixTail(k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  return Math.imul(k, C2);
}

/** The final avalanche of a key `total` bytes long. */
function finalMix(h: number, total: number): number {
  h ^= total;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** murmurhash3js's `x86.hash32(key, seed)`. */
export function murmur32(key: string, seed: number): number {
  const blocks = key.length - (key.length & 3);
  return finish(mixBlocks(seed | 0, key, 0, blocks), key, blocks, key.length);
}

/**
 * The hash state after a fixed prefix ({@link hashPrefix}), for {@link hashAfter}: four numbers,
 * where a closure over the prefix (and its context, and the prefix string it kept) took about
 * three times the memory, and was one more object to reach on every evaluation.
 */
export interface HashPrefix {
  /** The state after the prefix's whole 4-byte blocks. */
  readonly state: number;
  /** The low bytes of the 0–3 characters past them, little-endian. */
  readonly packed: number;
  /** How many characters those are. */
  readonly tailLength: number;
  /** The prefix's length. */
  readonly length: number;
}

/** The state after `prefix` (with `seed`), for hashing `prefix + suffix` without building that string. */
export function hashPrefix(prefix: string, seed: number): HashPrefix {
  const consumed = prefix.length - (prefix.length & 3);
  let packed = 0;
  for (let i = consumed; i < prefix.length; i += 1) packed |= (prefix.charCodeAt(i) & 0xff) << (8 * (i - consumed));
  return { state: mixBlocks(seed | 0, prefix, 0, consumed), packed, tailLength: prefix.length - consumed, length: prefix.length };
}

/**
 * `murmur32(prefix + suffix, seed)` for the {@link HashPrefix} of `prefix` and `seed`: the prefix's
 * 1–3 bytes past its last whole block are completed with the suffix's first bytes into a block.
 */
export function hashAfter(prefix: HashPrefix, suffix: string): number {
  const total = prefix.length + suffix.length;
  const { tailLength } = prefix;
  if (tailLength === 0) {
    const blocks = suffix.length - (suffix.length & 3);
    return finish(mixBlocks(prefix.state, suffix, 0, blocks), suffix, blocks, total);
  }
  let k = prefix.packed;
  // Bytes of the suffix that complete the first block.
  const need = 4 - tailLength;
  if (suffix.length < need) {
    // Under a block in all: the packed bytes and the suffix's are the key's last, unmixed ones.
    for (let j = 0; j < suffix.length; j += 1) k |= (suffix.charCodeAt(j) & 0xff) << (8 * (tailLength + j));
    return finalMix(prefix.state ^ mixTail(k), total);
  }
  for (let j = 0; j < need; j += 1) k |= (suffix.charCodeAt(j) & 0xff) << (8 * (tailLength + j));
  const blocks = suffix.length - ((suffix.length - need) & 3);
  return finish(mixBlocks(mixBlock(prefix.state, k), suffix, need, blocks), suffix, blocks, total);
}
