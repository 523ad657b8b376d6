/**
 * The identity of the flag set a proxy serves, as OFREP's event streams name it: a hash of the
 * definitions (the same on every proxy that serves the same flags, unlike a revision number), and
 * when this proxy first served it.
 */
import type { EvaluationService } from '../../core/service.js';

export interface FlagConfig {
  /** Hash of the definitions; the event id and `etag` of OFREP's `refetchEvaluation`. */
  id: string;
  /** Epoch seconds at which this proxy first served this flag set. */
  lastModified: number;
}

/** The current flag config of a service, computed once per revision. */
export function createFlagConfigTracker(): (service: EvaluationService) => FlagConfig {
  let revision = -1;
  let current: FlagConfig = { id: '', lastModified: 0 };
  return (service) => {
    const snapshot = service.snapshot();
    if (snapshot.revision !== revision) {
      // Made as the snapshot was built (content-digest.ts): reading it costs nothing.
      const id = snapshot.digest.slice(0, 16);
      if (id !== current.id) current = { id, lastModified: Math.floor(Date.now() / 1000) };
      revision = snapshot.revision;
    }
    return current;
  };
}
