/**
 * The identity of what a proxy's answers are made from, as OFREP's event streams name it: a hash
 * of the definitions (the same on every proxy that serves the same flags, unlike a revision
 * number) and how many of their date-constraint instants have passed, since answers may change at
 * each with the definitions unchanged; and when this proxy first served it.
 */
import type { EvaluationService } from '../../core/service.js';
import { instantsPassed } from '../../evaluation/plan.js';

export interface FlagConfig {
  /** Hash of the definitions (then `.<n>` once n of their instants have passed); the event id and `etag` of OFREP's `refetchEvaluation`. */
  id: string;
  /**
   * Epoch seconds at which this proxy first served these definitions, or the second after their
   * last passed instant when that is later: the same on every proxy that served them before that
   * instant, whenever each notices it.
   */
  lastModified: number;
}

/** The current flag config of a service, computed again only when the revision or the instants passed change. */
export function createFlagConfigTracker(): (service: EvaluationService) => FlagConfig {
  let revision = -1;
  let passed = -1;
  let digest = '';
  let firstServed = 0;
  let current: FlagConfig = { id: '', lastModified: 0 };
  return (service) => {
    const snapshot = service.snapshot();
    const dates = snapshot.plan.sensitivity;
    const now = Date.now();
    const passedNow = instantsPassed(dates, now);
    if (snapshot.revision === revision && passedNow === passed) return current;
    // Made as the snapshot was built (content-digest.ts): reading it costs nothing.
    const hash = snapshot.digest.slice(0, 16);
    if (hash !== digest) {
      digest = hash;
      firstServed = Math.floor(now / 1000);
    }
    const id = passedNow === 0 ? hash : `${hash}.${passedNow}`;
    if (id !== current.id) {
      const last = passedNow === 0 ? Number.NEGATIVE_INFINITY : (dates.dateThresholds[passedNow - 1] as number);
      current = { id, lastModified: Math.max(firstServed, Math.floor(last / 1000) + 1) };
    }
    revision = snapshot.revision;
    passed = passedNow;
    return current;
  };
}
