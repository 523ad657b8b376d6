/**
 * Per-snapshot precomputation, done once each time the flag set changes: which toggles answer the
 * same for every context (so their JSON is serialized once), and what the answers as a whole may
 * depend on besides the context fields (a random session, randomness, the clock) — which decides
 * whether an answer may be cached.
 */
import type { FeatureDefinition } from './types.js';
import { defaultStrategyNames } from './strategies.js';
import { runSteps, type Steps } from './steps.js';

/** How one toggle is answered. */
export type TogglePlan =
  /** Off for everyone: absent from enabled lists, the disabled entry in `/proxy/all`. */
  | { kind: 'off'; name: string; allEntry: string; notes: ToggleNotes }
  /** On for everyone, with the no-variant variant: the same entry for every context. */
  | { kind: 'on'; name: string; entry: string; notes: ToggleNotes }
  /** Depends on the context: evaluated per request, with its JSON around the variant precomputed. */
  | {
      kind: 'dynamic';
      name: string;
      notes: ToggleNotes;
      /** The definition the evaluation client holds (segment ids, not segments). */
      feature: FeatureDefinition;
      /** Whether any variant is defined (on the toggle or a strategy); without, only on/off is evaluated. */
      variants: boolean;
      impressionData: boolean | undefined;
      /** `{"name":…,"enabled":true,"variant":` */
      onPrefix: string;
      /** `{"name":…,"enabled":false,"variant":` */
      offPrefix: string;
      /** `,"impressionData":…}` or `}`: one of four strings every toggle shares. */
      suffix: string;
    };

/** The variant JSON of a toggle that is on without a variant. */
export const NO_VARIANT_ON = '{"name":"disabled","enabled":false,"feature_enabled":true,"featureEnabled":true}';
/** The variant JSON of a toggle that is off, in `/proxy/all`. */
export const DISABLED_IN_ALL = '{"name":"disabled","enabled":false,"feature_enabled":false}';

/** What answers over a snapshot may depend on, beyond the context fields themselves. */
export interface SnapshotSensitivity {
  /** Some toggle uses randomness that no context field pins down (random stickiness, custom strategies): never cache. */
  random: boolean;
  /** Some toggle reads `sessionId` (or falls back to it): without one, the answer uses a random session. */
  session: boolean;
  /** Some toggle falls back to `sessionId` only when `userId` is missing (default stickiness). */
  sessionUnlessUser: boolean;
  /** Some constraint compares dates: without `currentTime` the answer depends on the clock. */
  time: boolean;
  /** The instants (epoch ms) date constraints compare with, sorted: answers change only there. */
  dateThresholds: number[];
  /** Fields that variant stickiness reads: a variant is picked at random when one is missing. */
  stickyFields: Set<string>;
  /**
   * Some rule reads a context field named `properties` (a constraint or a stickiness): the
   * context's `properties` object is then read as a value, and only a copy reads as one.
   */
  propertiesField: boolean;
}

/** The plan of one snapshot. */
export interface SnapshotPlan {
  toggles: TogglePlan[];
  sensitivity: SnapshotSensitivity;
}

const BUILT_IN: ReadonlySet<string> = new Set(defaultStrategyNames);

interface StrategyLike {
  name: string;
  parameters?: Record<string, unknown>;
  constraints?: Array<{ contextName?: string; operator?: string }>;
  /** Segment ids, or the segments themselves when planned from definitions with full segments. */
  segments?: Array<number | { constraints?: Array<{ contextName?: string; operator?: string }> } | undefined>;
  variants?: Array<{ stickiness?: string }>;
}

/** flexibleRollout: `default` is userId, else sessionId; a missing named field means "off". */
function noteRolloutStickiness(stickiness: string | undefined, s: SnapshotSensitivity): void {
  const value = stickiness || 'default';
  if (value === 'properties') s.propertiesField = true;
  if (value === 'random') s.random = true;
  else if (value === 'sessionId') s.session = true;
  else if (value === 'default') s.sessionUnlessUser = true;
}

/** Variants: `default` is userId, else sessionId; a missing named field means a random pick. */
function noteVariantStickiness(stickiness: string | undefined, s: SnapshotSensitivity): void {
  const value = stickiness || 'default';
  if (value === 'properties') s.propertiesField = true;
  if (value === 'random') s.random = true;
  else if (value === 'sessionId') s.session = true;
  else if (value === 'default') s.sessionUnlessUser = true;
  else s.stickyFields.add(value);
}

function noteConstraints(constraints: StrategyLike['constraints'], s: SnapshotSensitivity): void {
  for (const c of constraints ?? []) {
    if (c.contextName === 'sessionId') s.session = true;
    if (c.contextName === 'properties') s.propertiesField = true;
    if (c.operator === 'DATE_AFTER' || c.operator === 'DATE_BEFORE') {
      s.time = true;
      // An unparseable date compares false at every instant: no threshold.
      const at = new Date(String((c as { value?: unknown }).value)).getTime();
      if (!Number.isNaN(at)) s.dateThresholds.push(at);
    }
  }
}

function isPlainDefault(strategy: StrategyLike): boolean {
  return (
    strategy.name === 'default' &&
    (strategy.constraints ?? []).length === 0 &&
    (strategy.segments ?? []).length === 0 &&
    (strategy.variants ?? []).length === 0
  );
}

/**
 * Plans a snapshot. `withSegments` are the same definitions, in the same order, with each
 * strategy's segments filled in (to see every constraint). `customStrategyNames` are the names of
 * custom strategies: they may shadow a built-in one and may read anything, so toggles using them
 * are always evaluated and answers never cached.
 */
export function planSnapshot(
  features: readonly FeatureDefinition[],
  withSegments: readonly FeatureDefinition[],
  customStrategyNames: ReadonlySet<string>,
): SnapshotPlan {
  return runSteps(createSnapshotPlanner(customStrategyNames).planSteps(features, withSegments));
}

/**
 * Plans the flag sets of one engine as they change, each toggle once for as long as its
 * definition stays the same (as the compiler in compiled.ts compiles them): a toggle's entry and
 * what it makes answers depend on are a function of its definition with its segments.
 */
export interface SnapshotPlanner {
  /**
   * {@link planSnapshot} for the next set, yielding after each toggle planned (see steps.ts).
   * With `reuse`, a toggle that `unchanged(name)` says has the same definition with full segments
   * as in `previous`, held as the same definition, takes the entry it had there.
   */
  planSteps(features: readonly FeatureDefinition[], withSegments: readonly FeatureDefinition[], reuse?: PlanReuse): Steps<SnapshotPlan>;
}

/** What a plan may take from the last: see {@link SnapshotPlanner.planSteps}. */
export interface PlanReuse {
  previous: SnapshotPlan;
  unchanged(name: string): boolean;
}

/**
 * What one toggle makes answers depend on (kept on its entry, so that a set's sensitivity is
 * merged from its entries): its flags as bits (see {@link NOTE_BITS}), with the date thresholds
 * and sticky fields it adds when it adds any.
 */
export type ToggleNotes = number | Readonly<{ bits: number; dateThresholds: readonly number[]; stickyFields: readonly string[] }>;

const NOTE_BITS = { random: 1, session: 2, sessionUnlessUser: 4, time: 8, propertiesField: 16 } as const;

/** Reused toggles between two yields. */
const REUSED_PER_STEP = 64;

/** A {@link SnapshotPlanner}. It keeps nothing between plans: what it reuses is in the last plan. */
export function createSnapshotPlanner(customStrategyNames: ReadonlySet<string>): SnapshotPlanner {
  // One toggle's notes while it is planned, emptied before each.
  const scratch: SnapshotSensitivity = emptySensitivity();
  const notesOf = notesMaker();
  return {
    *planSteps(features, withSegments, reuse) {
      const before = new Map<string, TogglePlan>();
      for (const toggle of reuse?.previous.toggles ?? []) before.set(toggle.name, toggle);
      const sensitivity = emptySensitivity();
      const toggles: TogglePlan[] = [];
      let reused = 0;
      for (let index = 0; index < withSegments.length; index += 1) {
        const feature = withSegments[index] as FeatureDefinition;
        // An entry without a name cannot be answered (it would not even serialize as JSON).
        if (typeof feature.name !== 'string' || feature.name === '') continue;
        const held = features[index] as FeatureDefinition;
        let toggle = reuse?.unchanged(feature.name) ? before.get(feature.name) : undefined;
        // A dynamic entry names the definition it evaluates: only the one held now will do.
        if (toggle !== undefined && toggle.kind === 'dynamic' && toggle.feature !== held) toggle = undefined;
        const fresh = toggle === undefined;
        if (toggle === undefined) {
          resetSensitivity(scratch);
          toggle = planToggle(feature, held, customStrategyNames, scratch, notesOf);
        }
        toggles.push(toggle);
        addNotes(sensitivity, toggle.notes);
        // A reused entry costs a lookup: yield now and then only.
        if (!fresh && (reused += 1) % REUSED_PER_STEP !== 0) continue;
        yield;
      }
      sensitivity.dateThresholds = [...new Set(sensitivity.dateThresholds)].sort((a, b) => a - b);
      return { toggles, sensitivity };
    },
  };
}

function emptySensitivity(): SnapshotSensitivity {
  return { random: false, session: false, sessionUnlessUser: false, time: false, dateThresholds: [], stickyFields: new Set(), propertiesField: false };
}

function resetSensitivity(s: SnapshotSensitivity): void {
  s.random = false;
  s.session = false;
  s.sessionUnlessUser = false;
  s.time = false;
  s.dateThresholds.length = 0;
  s.stickyFields.clear();
  s.propertiesField = false;
}

/**
 * Makes one toggle's notes, as kept on its entry. Notes with thresholds or fields are shared by
 * every toggle that has the same (one object for all the toggles whose variants stick to userId):
 * made per toggle, they were a quarter of a megabyte at 5000 flags.
 */
function notesMaker(): (s: SnapshotSensitivity) => ToggleNotes {
  const shared = new Map<string, ToggleNotes>();
  return (s) => {
    const bits =
      (s.random ? NOTE_BITS.random : 0) | (s.session ? NOTE_BITS.session : 0) | (s.sessionUnlessUser ? NOTE_BITS.sessionUnlessUser : 0) | (s.time ? NOTE_BITS.time : 0) |
      (s.propertiesField ? NOTE_BITS.propertiesField : 0);
    if (s.dateThresholds.length === 0 && s.stickyFields.size === 0) return bits;
    const dateThresholds = [...s.dateThresholds];
    const stickyFields = [...s.stickyFields];
    const key = JSON.stringify([bits, dateThresholds, stickyFields]);
    let notes = shared.get(key);
    if (notes === undefined) {
      notes = Object.freeze({ bits, dateThresholds, stickyFields });
      if (shared.size < MAX_SHARED_NOTES) shared.set(key, notes);
    }
    return notes;
  };
}

/** Distinct notes a planner shares; past that, further ones are made per toggle. */
const MAX_SHARED_NOTES = 1024;

function addNotes(s: SnapshotSensitivity, notes: ToggleNotes): void {
  const bits = typeof notes === 'number' ? notes : notes.bits;
  if (bits & NOTE_BITS.random) s.random = true;
  if (bits & NOTE_BITS.session) s.session = true;
  if (bits & NOTE_BITS.sessionUnlessUser) s.sessionUnlessUser = true;
  if (bits & NOTE_BITS.time) s.time = true;
  if (bits & NOTE_BITS.propertiesField) s.propertiesField = true;
  if (typeof notes === 'number') return;
  for (const at of notes.dateThresholds) s.dateThresholds.push(at);
  for (const field of notes.stickyFields) s.stickyFields.add(field);
}

/**
 * The end of a toggle's entry by its `impressionData`: one string for every toggle with the same
 * (a string of its own per toggle took 0.3 MB at 5000 flags).
 */
const SUFFIXES = new Map<unknown, string>([
  [undefined, '}'],
  [true, ',"impressionData":true}'],
  [false, ',"impressionData":false}'],
  [null, ',"impressionData":null}'],
]);
const suffixOf = (impressionData: unknown): string => SUFFIXES.get(impressionData) ?? `,"impressionData":${String(impressionData)}}`;

/** Plans one toggle, noting what it makes answers depend on in `sensitivity` (empty: the toggle's own, see {@link ToggleNotes}). */
function planToggle(
  feature: FeatureDefinition,
  held: FeatureDefinition,
  customStrategyNames: ReadonlySet<string>,
  sensitivity: SnapshotSensitivity,
  notesOf: (s: SnapshotSensitivity) => ToggleNotes,
): TogglePlan {
  const strategies = (feature.strategies ?? []) as StrategyLike[];
  const variants = feature.variants ?? [];
  for (const strategy of strategies) {
    noteConstraints(strategy.constraints, sensitivity);
    for (const segment of strategy.segments ?? []) {
      // A missing segment makes the strategy fail closed: nothing context-dependent there.
      if (typeof segment === 'object' && segment !== null) noteConstraints(segment.constraints, sensitivity);
    }
    if (customStrategyNames.has(strategy.name) || !BUILT_IN.has(strategy.name)) sensitivity.random = true;
    if (strategy.name === 'gradualRolloutRandom') sensitivity.random = true;
    if (strategy.name === 'gradualRolloutSessionId') sensitivity.session = true;
    if (strategy.name === 'flexibleRollout') noteRolloutStickiness(strategy.parameters?.stickiness as string | undefined, sensitivity);
    for (const v of strategy.variants ?? []) noteVariantStickiness(v.stickiness, sensitivity);
  }
  // unleash-client picks toggle-level variants by the first variant's stickiness.
  if (variants.length > 0) noteVariantStickiness(variants[0]?.stickiness, sensitivity);

  const notes = notesOf(sensitivity);
  const name = JSON.stringify(feature.name);
  const shadowed = customStrategyNames.has('default');
  const onPrefix = `{"name":${name},"enabled":true,"variant":`;
  const offPrefix = `{"name":${name},"enabled":false,"variant":`;
  const suffix = suffixOf(feature.impressionData);
  if (feature.enabled === false) {
    return { kind: 'off', name: feature.name, allEntry: offPrefix + DISABLED_IN_ALL + suffix, notes };
  }
  const anyVariants = variants.length > 0 || strategies.some((s) => (s.variants ?? []).length > 0);
  const alwaysOn = strategies.length === 0 || strategies.some(isPlainDefault);
  if (feature.enabled === true && alwaysOn && !anyVariants && !shadowed && !(feature.dependencies ?? []).length) {
    return { kind: 'on', name: feature.name, entry: onPrefix + NO_VARIANT_ON + suffix, notes };
  }
  return {
    kind: 'dynamic',
    name: feature.name,
    notes,
    feature: held,
    variants: anyVariants,
    impressionData: feature.impressionData,
    onPrefix,
    offPrefix,
    suffix,
  };
}

/**
 * Until when an answer for this context stays the same over the planned snapshot: epoch ms
 * (exclusive), `Infinity` for as long as the snapshot lasts, or a time not after `now` when it may
 * not be cached at all. Date constraints make answers without `currentTime` depend on the clock,
 * but only at the instants they compare with: an answer holds until the next one.
 */
export function cacheableUntil(
  sensitivity: SnapshotSensitivity,
  context: { sessionId?: unknown; userId?: unknown; currentTime?: unknown; properties?: Record<string, unknown> },
  now: number = Date.now(),
): number {
  if (sensitivity.random) return 0;
  for (const field of sensitivity.stickyFields) {
    const value = (context as Record<string, unknown>)[field] ?? context.properties?.[field];
    if (value === undefined || value === null || value === '') return 0;
  }
  if (context.sessionId === undefined) {
    if (sensitivity.session) return 0;
    if (sensitivity.sessionUnlessUser && context.userId === undefined) return 0;
  }
  if (context.currentTime !== undefined) return Number.POSITIVE_INFINITY;
  return nextInstant(sensitivity, now);
}

/**
 * The first instant of the flag set's date constraints at or after `now` (at it, and just after
 * it, an answer may change), or `Infinity` when none is ahead: until then, an answer that depends
 * on nothing else holds.
 */
export function nextInstant(sensitivity: SnapshotSensitivity, now: number = Date.now()): number {
  if (!sensitivity.time) return Number.POSITIVE_INFINITY;
  const dates = sensitivity.dateThresholds;
  const passed = instantsPassed(sensitivity, now);
  return passed < dates.length ? (dates[passed] as number) : Number.POSITIVE_INFINITY;
}

/**
 * How many of the flag set's date-constraint instants lie before `now`: it grows by one just after
 * each instant, when answers without `currentTime` may change with the flag set unchanged.
 */
export function instantsPassed(sensitivity: SnapshotSensitivity, now: number = Date.now()): number {
  if (!sensitivity.time) return 0;
  // The dates are sorted (see the planner): a binary search, since every poll of a time-bound
  // answer asks, and a flag set's past launches would otherwise be scanned each time.
  const dates = sensitivity.dateThresholds;
  let low = 0;
  let high = dates.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((dates[middle] as number) < now) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Whether an answer for this context may be cached now (see {@link cacheableUntil}). */
export function isCacheable(
  sensitivity: SnapshotSensitivity,
  context: { sessionId?: unknown; userId?: unknown; currentTime?: unknown; properties?: Record<string, unknown> },
  now: number = Date.now(),
): boolean {
  return cacheableUntil(sensitivity, context, now) > now;
}
