/**
 * The delta format of Unleash's client API (`{"events":[…]}`), as `unleash-client` 6 applies it
 * from `/api/client/streaming` and `/api/client/delta`: what changed between two flag sets, the
 * changes since an earlier revision (kept for a few revisions), and the per-client filters
 * (`namePrefix`, `project`). Pure: no I/O, no timers.
 */
import type { Segment, Snapshot } from '../../evaluation/engine.js';
import { sameJson } from '../../evaluation/content-digest.js';
import { runSteps, type Steps } from '../../evaluation/steps.js';
import type { FeatureDefinition } from '../../evaluation/types.js';

/** One definition before and after a change; `undefined` where it did not exist. */
export interface Change<T> {
  before: T | undefined;
  after: T | undefined;
}

/** What changed from one revision to a later one, by flag name and by segment id. */
export interface FlagSetChanges {
  features: Map<string, Change<FeatureDefinition>>;
  segments: Map<number, Change<Segment>>;
}

/** Which flags a client asked for (`?namePrefix=…&project=…`); empty matches every flag. */
export interface FlagFilter {
  /** A stable key per distinct filter, so one serialization serves every client that sent it. */
  readonly key: string;
  matches(feature: FeatureDefinition): boolean;
}

/** The filters of a query string; `project` may repeat (any one matches). */
export function parseFilter(search: string): FlagFilter {
  const query = new URLSearchParams(search);
  const namePrefix = query.get('namePrefix') ?? '';
  const projects = query.getAll('project').filter((p) => p !== '');
  if (namePrefix === '' && projects.length === 0) return EVERY_FLAG;
  return {
    key: JSON.stringify([namePrefix, projects]),
    matches: (feature) =>
      feature.name.startsWith(namePrefix) && (projects.length === 0 || projects.includes((feature as { project?: string }).project ?? 'default')),
  };
}

/** The filter of a client that sent none. */
export const EVERY_FLAG: FlagFilter = Object.freeze({ key: '', matches: () => true });

/** JSON of one definition, computed once per object: a change is sent to every client streaming. */
const serialized = new WeakMap<object, string>();
export function toJson(value: object): string {
  let text = serialized.get(value);
  if (text === undefined) {
    text = JSON.stringify(value);
    serialized.set(value, text);
  }
  return text;
}

function diffBy<T extends object, K>(before: readonly T[], after: readonly T[], keyOf: (item: T) => K, same: (a: T, b: T) => boolean = sameJson): Map<K, Change<T>> {
  const changes = new Map<K, Change<T>>();
  const old = new Map<K, T>();
  for (const item of before) old.set(keyOf(item), item);
  for (const item of after) {
    const key = keyOf(item);
    const previous = old.get(key);
    old.delete(key);
    // Compared in place, not by their text: every refresh brings new objects for every flag, and
    // kept, the JSON of the whole set would stay for as long as it is current. Only the changes
    // are serialized, once, for the clients (toJson).
    if (previous === undefined || !same(previous, item)) changes.set(key, { before: previous, after: item });
  }
  for (const [key, item] of old) changes.set(key, { before: item, after: undefined });
  return changes;
}

/** Two flag sets as {@link diffSnapshots} compares them: each toggle's digest where the engine made them. */
type Compared = Pick<Snapshot, 'features' | 'segments'> & Partial<Pick<Snapshot, 'toggleDigests'>>;

/**
 * What changed from `before` to `after` (compared by their JSON). Toggles are compared by the
 * digests the engine made of them as it built each set, where both sets have them: comparing every
 * definition in place took 11–23 ms at 5000 flags, on every change, while the event loop waited.
 */
export function diffSnapshots(before: Compared, after: Compared): FlagSetChanges {
  const { toggleDigests: old } = before;
  const { toggleDigests: now } = after;
  const sameToggle =
    old === undefined || now === undefined
      ? sameJson
      : (a: FeatureDefinition, b: FeatureDefinition): boolean => {
          const digest = old.get(a.name);
          return digest !== undefined && digest === now.get(b.name);
        };
  return {
    features: diffBy(before.features, after.features, (f) => f.name, sameToggle),
    segments: diffBy(before.segments, after.segments, (s) => s.id),
  };
}

/** Folds consecutive changes into one: the first `before` and the last `after` of each item. */
export function composeChanges(steps: readonly FlagSetChanges[]): FlagSetChanges {
  const fold = <K, T>(maps: Array<Map<K, Change<T>>>): Map<K, Change<T>> => {
    const out = new Map<K, Change<T>>();
    for (const map of maps) {
      for (const [key, change] of map) {
        const seen = out.get(key);
        out.set(key, { before: seen ? seen.before : change.before, after: change.after });
      }
    }
    return out;
  };
  return { features: fold(steps.map((s) => s.features)), segments: fold(steps.map((s) => s.segments)) };
}

/** True when nothing changed. */
export function isEmpty(changes: FlagSetChanges): boolean {
  return changes.features.size === 0 && changes.segments.size === 0;
}

/**
 * The `events` of a delta body for one filter, each tagged with `eventId`. A flag that leaves the
 * filter (renamed project) is removed for that client; one that never matched is left out.
 */
export function deltaEvents(changes: FlagSetChanges, filter: FlagFilter, eventId: number): string[] {
  const events: string[] = [];
  for (const [name, { before, after }] of changes.features) {
    if (after !== undefined && filter.matches(after)) {
      events.push(`{"type":"feature-updated","eventId":${eventId},"feature":${toJson(after)}}`);
    } else if (before !== undefined && filter.matches(before)) {
      const project = (before as { project?: string }).project ?? 'default';
      events.push(`{"type":"feature-removed","eventId":${eventId},"featureName":${JSON.stringify(name)},"project":${JSON.stringify(project)}}`);
    }
  }
  for (const [id, { after }] of changes.segments) {
    if (after !== undefined) events.push(`{"type":"segment-updated","eventId":${eventId},"segment":${toJson(after)}}`);
    else events.push(`{"type":"segment-removed","eventId":${eventId},"segmentId":${id}}`);
  }
  return events;
}

/** The one `hydration` event of a flag set for one filter: every matching flag and every segment. */
export function hydrationEvent(snapshot: Pick<Snapshot, 'features' | 'segments'>, filter: FlagFilter, eventId: number): string {
  return runSteps(hydrationEventSteps(snapshot, filter, eventId));
}

/**
 * {@link hydrationEvent}, one flag per step (see steps.ts): the same text, serialized a flag at a
 * time, so that a large set (3.3 MB at 5000 flags, about 20 ms at once) can be made in slices.
 * Not from each flag's kept JSON: the event is kept per filter for the revision, and the pieces
 * would have been a second copy of it.
 */
export function* hydrationEventSteps(snapshot: Pick<Snapshot, 'features' | 'segments'>, filter: FlagFilter, eventId: number): Steps<string> {
  const parts: string[] = [];
  for (const feature of snapshot.features) {
    if (!filter.matches(feature)) continue;
    parts.push(JSON.stringify(feature));
    yield;
  }
  return `{"type":"hydration","eventId":${eventId},"features":[${parts.join(',')}],"segments":${JSON.stringify(snapshot.segments)}}`;
}

/** A delta body: `{"events":[…]}`. */
export function deltaBody(events: readonly string[]): string {
  return `{"events":[${events.join(',')}]}`;
}
