/**
 * Which environment a presented key belongs to, answered in time that does not depend on which
 * keys are configured or where the presented one matches.
 */
import * as crypto from 'node:crypto';

/** Maps a presented client key (or server-side token) to the index of its environment. */
export interface KeyTable {
  /** The index of the environment owning `presented`, or -1 for none. */
  lookup(presented: string | undefined): number;
}

/** One environment's keys: client keys and server-side tokens both select it. */
export interface KeyOwner {
  name: string;
  keys: readonly string[];
}

/**
 * A key's SHA-256, as src/digests.ts makes it (this module imports only node and the public
 * surface): the one-shot's latin1 ('binary') text read into a pooled Buffer, 0.9 µs where a Hash
 * object took 2.9, on every request a multi-environment proxy routes. `crypto.hash` is in every
 * Node that `engines` admits (20.17 on).
 */
const digest = (value: string): Buffer => Buffer.from(crypto.hash('sha256', value, 'binary'), 'binary');

/**
 * Builds the table. A key configured for two environments would make the answer depend on order,
 * so it is refused here (the caller turns the message into an `INVALID_OPTION`).
 */
export function createKeyTable(owners: readonly KeyOwner[]): KeyTable {
  const seen = new Map<string, string>();
  const entries: Array<{ digest: Buffer; index: number }> = [];
  owners.forEach((owner, index) => {
    for (const key of owner.keys) {
      const other = seen.get(key);
      if (other !== undefined && other !== owner.name) {
        throw new Error(`a client key or server-side token is configured for both "${other}" and "${owner.name}"`);
      }
      seen.set(key, owner.name);
      entries.push({ digest: digest(key), index });
    }
  });
  return {
    lookup(presented) {
      if (presented === undefined || entries.length === 0) return -1;
      const candidate = digest(presented);
      let found = -1;
      // Every entry is compared, over fixed-length digests, whatever matched before.
      for (const entry of entries) {
        const equal = crypto.timingSafeEqual(candidate, entry.digest);
        found = equal ? entry.index : found;
      }
      return found;
    },
  };
}
