/**
 * The state of a test flag server, apart from its routes: the flags and segments (every change
 * recorded in the admin event log), the fault switched on, and what it received.
 */
import { createHash } from 'node:crypto';
import type { FeatureDefinition } from '../evaluation/types.js';
import type { AdminEventLog } from './admin-event-log.js';
import type { ReceivedMetrics, ReceivedRequest, TestFault } from './flag-server-types.js';
import { fullFlag, fullSegment, type TestFlag, type TestSegment } from './flags.js';

const clone = <T>(value: T): T => structuredClone(value);

/** How a test changes the flags and segments: the test flag server offers these as they are. */
export interface FlagEditing {
  /** Current flags (copies), in full as served. */
  features(): FeatureDefinition[];
  /** Replaces all flags. */
  setFeatures(features: TestFlag[]): void;
  /** Adds or replaces one flag. */
  upsertFeature(feature: TestFlag): void;
  /** Removes (archives) one flag. */
  removeFeature(name: string): void;
  /** Turns one flag on or off. */
  setEnabled(name: string, enabled: boolean): void;
  /** Replaces all segments. */
  setSegments(segments: TestSegment[]): void;
}

/** The flags and segments, and the features answer built from them. */
export interface FlagState extends FlagEditing {
  /** The body of `GET /api/client/features` for `query`, and its ETag. */
  answer(query: URLSearchParams): { body: string; etag: string };
}

/** Records flag changes in the admin event log as the flag server would. */
function createChangeRecorder(events: AdminEventLog, environment: string) {
  const record = (type: string, feature: FeatureDefinition, preData: FeatureDefinition | null, withEnvironment = false): void => {
    events.record({
      type,
      featureName: feature.name,
      project: feature.project ?? 'default',
      environment: withEnvironment ? environment : null,
      data: type === 'feature-archived' ? null : clone(feature),
      preData: preData ? clone(preData) : null,
      createdBy: 'test-flag-server',
    });
  };
  /** Records what changed between two versions of one flag. */
  const recordChange = (before: FeatureDefinition | undefined, after: FeatureDefinition): void => {
    if (!before) {
      record('feature-created', after, null);
      return;
    }
    if (before.enabled !== after.enabled) {
      record(after.enabled ? 'feature-environment-enabled' : 'feature-environment-disabled', after, null, true);
      if (JSON.stringify({ ...before, enabled: after.enabled }) === JSON.stringify(after)) return;
    }
    record('feature-updated', after, before);
  };
  return { record, recordChange };
}

/** Holds the flags; each change is recorded in `events` as the flag server would. */
export function createFlagState(
  initial: { features?: TestFlag[]; segments?: TestSegment[]; environment: string },
  events: AdminEventLog,
): FlagState {
  const { record, recordChange } = createChangeRecorder(events, initial.environment);
  let features = new Map<string, FeatureDefinition>((initial.features ?? []).map((f) => [f.name, clone(fullFlag(f))]));
  for (const feature of features.values()) record('feature-created', feature, null);
  let segments = clone((initial.segments ?? []).map(fullSegment));
  let revision = 0;
  const changed = (): void => {
    revision += 1;
  };

  return {
    features: () => [...features.values()].map(clone),
    setFeatures(list) {
      const next = new Map(list.map((f) => [f.name, clone(fullFlag(f))]));
      for (const [name, before] of features) if (!next.has(name)) record('feature-archived', before, before);
      for (const [name, after] of next) recordChange(features.get(name), after);
      features = next;
      changed();
    },
    upsertFeature(definition) {
      const feature = clone(fullFlag(definition));
      recordChange(features.get(feature.name), feature);
      features.set(feature.name, feature);
      changed();
    },
    removeFeature(name) {
      const before = features.get(name);
      if (!before) return;
      record('feature-archived', before, before);
      features.delete(name);
      changed();
    },
    setEnabled(name, enabled) {
      const feature = features.get(name);
      if (!feature) throw new Error(`No flag named ${name}`);
      recordChange(feature, { ...feature, enabled });
      features.set(name, { ...feature, enabled });
      changed();
    },
    setSegments(list) {
      segments = clone(list.map(fullSegment));
      changed();
    },
    answer(query) {
      const project = query.get('project');
      const prefix = query.get('namePrefix');
      const tags = query.getAll('tag').map((t) => t.split(':'));
      const list = [...features.values()].filter(
        (f) =>
          (!project || f.project === project) &&
          (!prefix || f.name.startsWith(prefix)) &&
          (tags.length === 0 ||
            tags.some(([n, v]) => ((f as { tags?: Array<{ type: string; value: string }> }).tags ?? []).some((t) => t.type === n && t.value === v))),
      );
      const body = JSON.stringify({ version: 2, features: list, segments, query: Object.fromEntries(query) });
      return { body, etag: `"${createHash('sha1').update(body).digest('hex').slice(0, 16)}:${revision}"` };
    },
  };
}

/** The client API routes a fault can apply to. */
export type ClientRoute = 'features' | 'metrics' | 'register';

/** The fault switched on, and the requests it holds. */
export interface FaultState {
  set(fault: TestFault | undefined): void;
  /** The fault that applies to this request of `route`; `count` counts it for `every` and `times`. */
  faultFor(route: ClientRoute, count: boolean): TestFault | undefined;
  /** Waits while a `hang` fault holds the request: true once released, false when the server closes. */
  hold(): Promise<boolean>;
  /** Drops every held request (at close). */
  dropHeld(): void;
}

export function createFaultState(): FaultState {
  let fault: TestFault | undefined;
  /** Matching requests seen since the fault was set (for `every` and `times`). */
  let faultHits = 0;
  /** Requests held by a `hang` fault: released (true) on the next set, dropped (false) on close. */
  const held = new Set<(release: boolean) => void>();
  const releaseAll = (release: boolean): void => {
    for (const resolve of [...held]) {
      held.delete(resolve);
      resolve(release);
    }
  };
  return {
    set(next) {
      fault = next;
      faultHits = 0;
      releaseAll(true);
    },
    faultFor(route, count) {
      const current = fault;
      if (!current) return undefined;
      const scope = current.routes ?? 'all';
      if (scope !== 'all' && scope !== (route === 'features' ? 'features' : 'metrics')) return undefined;
      if (count) {
        faultHits += 1;
        if (current.times !== undefined && faultHits > current.times) return undefined;
        if (current.every !== undefined && current.every > 1 && faultHits % current.every !== 0) return undefined;
      }
      return current;
    },
    hold: () => new Promise<boolean>((resolve) => held.add(resolve)),
    dropHeld: () => releaseAll(false),
  };
}

/** What the server received: every request, the usage reports and registrations, fetches in flight. */
export interface ReceivedLog {
  readonly requests: ReceivedRequest[];
  readonly metrics: ReceivedMetrics[];
  readonly registrations: Array<Record<string, unknown>>;
  /** Keeps a usage report and wakes the waiters it matches. */
  addMetrics(report: ReceivedMetrics): void;
  /** Counts a flag fetch until `done` is called. */
  fetchStarted(): () => void;
  fetchConcurrency(): { current: number; max: number };
  countsFor(name: string): { yes: number; no: number; variants: Record<string, number> };
  waitForMetrics(predicate?: (m: ReceivedMetrics) => boolean, timeoutMs?: number): Promise<ReceivedMetrics>;
}

export function createReceivedLog(): ReceivedLog {
  const metrics: ReceivedMetrics[] = [];
  const waiters = new Set<{ predicate: (m: ReceivedMetrics) => boolean; resolve: (m: ReceivedMetrics) => void }>();
  let fetchesNow = 0;
  let fetchesMax = 0;
  return {
    requests: [],
    metrics,
    registrations: [],
    addMetrics(report) {
      metrics.push(report);
      for (const w of [...waiters]) {
        if (w.predicate(report)) {
          waiters.delete(w);
          w.resolve(report);
        }
      }
    },
    fetchStarted() {
      fetchesNow += 1;
      fetchesMax = Math.max(fetchesMax, fetchesNow);
      return () => {
        fetchesNow -= 1;
      };
    },
    fetchConcurrency: () => ({ current: fetchesNow, max: fetchesMax }),
    countsFor(name) {
      const total = { yes: 0, no: 0, variants: {} as Record<string, number> };
      for (const report of metrics) {
        const counts = report.bucket?.toggles?.[name];
        if (!counts) continue;
        total.yes += counts.yes;
        total.no += counts.no;
        for (const [v, n] of Object.entries(counts.variants ?? {})) total.variants[v] = (total.variants[v] ?? 0) + n;
      }
      return total;
    },
    waitForMetrics(predicate = () => true, timeoutMs = 10_000) {
      const already = metrics.find(predicate);
      if (already) return Promise.resolve(already);
      return new Promise((resolve, reject) => {
        const waiter = { predicate, resolve };
        waiters.add(waiter);
        setTimeout(() => {
          if (waiters.delete(waiter)) reject(new Error(`No matching usage report within ${timeoutMs} ms`));
        }, timeoutMs).unref();
      });
    },
  };
}
