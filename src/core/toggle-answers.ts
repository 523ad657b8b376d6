/**
 * The toggles of an answer for one context, from a snapshot's plan: serialized in the Unleash
 * frontend format (`{"toggles":[…]}`, the constant entries written once per flag set), or as the
 * equal objects for in-process calls.
 */
import type { ToggleHandle } from '../evaluation/compiled.js';
import type { Engine, Snapshot, WireVariant } from '../evaluation/engine.js';
import { DISABLED_IN_ALL, NO_VARIANT_ON, type SnapshotPlan, type TogglePlan } from '../evaluation/plan.js';
import type { UnleashContext } from '../evaluation/types.js';
import { createAnswerBuffers, type AnswerBuffers } from './answer-buffers.js';

/** One toggle in an answer. Key order is the wire order. */
export interface ToggleResult {
  name: string;
  enabled: boolean;
  variant: WireVariant;
  impressionData?: boolean;
}

/** Frozen objects for the toggles every context answers the same, parsed once per plan entry. */
const constantResults = new WeakMap<TogglePlan, ToggleResult>();
function constantResult(toggle: TogglePlan, entry: string): ToggleResult {
  let found = constantResults.get(toggle);
  if (found === undefined) {
    const parsed = JSON.parse(entry) as ToggleResult;
    Object.freeze(parsed.variant);
    found = Object.freeze(parsed);
    constantResults.set(toggle, found);
  }
  return found;
}

/**
 * A wire format made of one fragment per toggle result (see {@link ToggleAnswers.formatAll}). A
 * fragment must depend on the result alone (and on the flag set): it is kept and used again for
 * every context that gives the same result.
 */
export interface FragmentFormat {
  readonly open: string;
  readonly close: string;
  /** The fragment of one toggle's result, or `undefined` to leave the toggle out. */
  fragment(result: ToggleResult): string | undefined;
}

/** The results of a dynamic toggle that carry no variant of their own, made once per plan entry. */
interface PlainResults {
  on: ToggleResult;
  off: ToggleResult;
}

/** The answer builders over one engine. */
export interface ToggleAnswers {
  /**
   * Serializes the answer for all toggles (enabled ones only unless `includeDisabled`): a string,
   * or the UTF-8 bytes of that same string when the flag set's answers may be longer than a few
   * kB (see {@link AnswerSizes}). The bytes of a large answer are taken from the engine's answer
   * buffers (`buffers.owns` says so): the caller may give them back once nothing reads them any more.
   */
  serializeAll(plan: SnapshotPlan, context: UnleashContext, includeDisabled: boolean): string | Buffer;
  /**
   * Every toggle's result (the disabled ones too, as `/proxy/all` has them) in a format of
   * fragments: `open`, the fragments joined by commas, `close`. Each fragment is made once per
   * toggle definition and state, and reused while that definition is served: a change of the flag
   * set keeps the fragments of every toggle it left as it was (by the toggles' digests).
   */
  formatAll(snapshot: Pick<Snapshot, 'plan' | 'toggleDigests'>, context: UnleashContext, format: FragmentFormat): string;
  /** The same toggles as {@link serializeAll}, as objects equal to its parsed JSON. */
  resultsAll(plan: SnapshotPlan, context: UnleashContext, includeDisabled: boolean): ToggleResult[];
  /** The named toggles, in order, known or not; `enabled` records each outcome. */
  resultsNamed(context: UnleashContext, names: readonly string[], enabled: boolean[]): ToggleResult[];
}

/**
 * A flag set whose answer for `/proxy/all` would be at least this long (in UTF-16 units) has its
 * answers built in memory taken from the engine's answer buffers (answer-buffers.ts), given back
 * once written. V8 puts a string this large in its large-object space, on fresh pages for each
 * one: joining a 290 kB answer took about 0.6 ms per request at 5000 flags, most of it page
 * faults, where copying precomputed bytes into one malloc'd Buffer takes a tenth of that.
 */
export const LARGE_ANSWER_BYTES = 96 * 1024;

/**
 * A flag set whose answer for `/proxy/all` would be at least this long has its answers built as
 * bytes (copied into a Buffer of their own, outside V8's heap) rather than joined into a string:
 * an 11 kB answer at 200 flags was 11 kB of V8's heap per request, a third of all a new context
 * allocated, and the young collections that came while one was being written found it alive.
 * Below it (a few flags) a string costs no more.
 */
export const BYTES_ANSWER_CHARS = 2048;

/** Where {@link ToggleAnswers.serializeAll} switches from strings to bytes, and to recycled bytes. */
export interface AnswerSizes {
  /** @default {@link BYTES_ANSWER_CHARS} */
  bytesFrom?: number;
  /** @default {@link LARGE_ANSWER_BYTES} */
  recycledFrom?: number;
}

/** The bytes of the strings a plan entry is made of, made once per plan entry. */
interface EntryBytes {
  entry?: Buffer;
  allEntry?: Buffer;
  onEntry?: Buffer;
  offEntry?: Buffer;
  onPrefix?: Buffer;
  suffix?: Buffer;
}

type DynamicPlan = Extract<TogglePlan, { kind: 'dynamic' }>;

/** A toggle that is on without a variant picked: its entry is {@link onEntryOf}'s, `NO_VARIANT_ON` inside. */
const isNoVariant = (variant: Readonly<WireVariant>): boolean => variant.name === 'disabled' && !variant.enabled && variant.payload === undefined;

/**
 * A dynamic toggle's whole entry when on without a variant, and when off (in `/proxy/all`): made
 * where they are written (once per plan entry as bytes, per answer as strings for the few flags
 * a string answer has), not kept in the plan, where they were 0.6 MB at 5000 flags.
 */
const onEntryOf = (toggle: DynamicPlan): string => toggle.onPrefix + NO_VARIANT_ON + toggle.suffix;
const offEntryOf = (toggle: DynamicPlan): string => toggle.offPrefix + DISABLED_IN_ALL + toggle.suffix;

/** Distinct entry ends whose bytes one answer builder shares (plan.ts makes four). */
const MAX_SHARED_SUFFIXES = 16;

const OPEN = Buffer.from('{"toggles":[');
const CLOSE = Buffer.from(']}');
const COMMA = Buffer.from(',');

/**
 * Builds the answer builders of one engine (`sizes`: see {@link AnswerSizes}; tests move them).
 * Large answers are built in memory from `buffers`, which their writer may give back.
 */
export function createToggleAnswers(engine: Engine, sizes: AnswerSizes = {}, buffers: AnswerBuffers = createAnswerBuffers()): ToggleAnswers {
  const bytesFrom = sizes.bytesFrom ?? BYTES_ANSWER_CHARS;
  const recycledFrom = sizes.recycledFrom ?? LARGE_ANSWER_BYTES;
  // Each plan's dynamic toggles, bound once per flag set (a plan is its snapshot's, and answers
  // read the snapshot and build synchronously): no lookup by name per toggle and request.
  const handles = new WeakMap<SnapshotPlan, ReadonlyArray<ToggleHandle | undefined>>();
  const handlesOf = (plan: SnapshotPlan): ReadonlyArray<ToggleHandle | undefined> => {
    let bound = handles.get(plan);
    if (bound === undefined) {
      bound = plan.toggles.map((toggle) => (toggle.kind === 'dynamic' ? engine.handle(toggle.feature) : undefined));
      handles.set(plan, bound);
    }
    return bound;
  };
  // The JSON of each shared (frozen) variant, written once: it is the same whichever toggle picks it.
  const json = new WeakMap<object, string>();
  const variantJson = (variant: Readonly<WireVariant>): string => {
    if (!Object.isFrozen(variant)) return JSON.stringify(variant);
    let text = json.get(variant);
    if (text === undefined) {
      text = JSON.stringify(variant);
      json.set(variant, text);
    }
    return text;
  };
  // How long a plan's answers may be (UTF-16 units): decided once per plan, from its longest possible answer.
  const longest = new WeakMap<SnapshotPlan, number>();
  const longestOf = (plan: SnapshotPlan): number => {
    let most = longest.get(plan);
    if (most === undefined) {
      most = 0;
      for (const toggle of plan.toggles) {
        most += toggle.kind === 'on' ? toggle.entry.length : toggle.kind === 'off' ? toggle.allEntry.length : toggle.onPrefix.length + toggle.suffix.length + 200;
      }
      longest.set(plan, most);
    }
    return most;
  };
  // Each plan entry's bytes (by index), made on first need: one lookup per answer, not per entry.
  // They belong to the entry, which a changed set's plan takes over for every toggle the change
  // left as it was (plan.ts): the next plan's list starts from them.
  const bytes = new WeakMap<SnapshotPlan, EntryBytes[]>();
  const entryBytes = new WeakMap<TogglePlan, EntryBytes>();
  const bytesOf = (plan: SnapshotPlan): EntryBytes[] => {
    let found = bytes.get(plan);
    if (found === undefined) {
      found = plan.toggles.map((toggle) => {
        let kept = entryBytes.get(toggle);
        if (kept === undefined) {
          kept = {};
          entryBytes.set(toggle, kept);
        }
        return kept;
      });
      bytes.set(plan, found);
    }
    return found;
  };
  // The ends of entries are a few strings every toggle shares (plan.ts): one Buffer each, not one per toggle.
  const suffixBytes = new Map<string, Buffer>();
  const suffixBytesOf = (suffix: string): Buffer => {
    let found = suffixBytes.get(suffix);
    if (found === undefined) {
      found = Buffer.from(suffix);
      if (suffixBytes.size < MAX_SHARED_SUFFIXES) suffixBytes.set(suffix, found);
    }
    return found;
  };
  const variantBytes = new WeakMap<object, Buffer>();
  const variantBytesOf = (variant: Readonly<WireVariant>): Buffer => {
    if (!Object.isFrozen(variant)) return Buffer.from(JSON.stringify(variant));
    let found = variantBytes.get(variant);
    if (found === undefined) {
      found = Buffer.from(variantJson(variant));
      variantBytes.set(variant, found);
    }
    return found;
  };

  // The pieces of the large answer being built, in order: kept between answers (building is
  // synchronous), so that an answer of thousands of pieces allocates no list of its own.
  const pieces: Buffer[] = [];
  /**
   * {@link ToggleAnswers.serializeAll} as bytes: the same entries, copied into one Buffer, taken
   * from `buffers` when `recycled`.
   */
  const serializeBytes = (plan: SnapshotPlan, context: UnleashContext, includeDisabled: boolean, recycled: boolean): Buffer => {
    let count = 0;
    let total = 0;
    const add = (piece: Buffer): void => {
      pieces[count++] = piece;
      total += piece.length;
    };
    add(OPEN);
    // An entry's first piece, after a comma unless it is the first entry.
    const entry = (piece: Buffer): void => {
      if (count > 1) add(COMMA);
      add(piece);
    };
    const handles = handlesOf(plan);
    const entryBytes = bytesOf(plan);
    for (let i = 0; i < plan.toggles.length; i += 1) {
      const toggle = plan.toggles[i] as TogglePlan;
      const b = entryBytes[i] as EntryBytes;
      if (toggle.kind === 'on') {
        entry((b.entry ??= Buffer.from(toggle.entry)));
      } else if (toggle.kind === 'off') {
        if (includeDisabled) entry((b.allEntry ??= Buffer.from(toggle.allEntry)));
      } else if (!toggle.variants) {
        if ((handles[i] as ToggleHandle).isOn(context)) entry((b.onEntry ??= Buffer.from(onEntryOf(toggle))));
        else if (includeDisabled) entry((b.offEntry ??= Buffer.from(offEntryOf(toggle))));
      } else {
        const variant = (handles[i] as ToggleHandle).sharedVariant(context);
        if (variant.feature_enabled === true) {
          if (isNoVariant(variant)) {
            entry((b.onEntry ??= Buffer.from(onEntryOf(toggle))));
          } else {
            entry((b.onPrefix ??= Buffer.from(toggle.onPrefix)));
            add(variantBytesOf(variant));
            add((b.suffix ??= suffixBytesOf(toggle.suffix)));
          }
        } else if (includeDisabled) {
          entry((b.offEntry ??= Buffer.from(offEntryOf(toggle))));
        }
      }
    }
    add(CLOSE);
    // Outside V8's heap (for a large answer, in memory an answer already written gave back,
    // answer-buffers.ts), one copy of each piece. Otherwise in memory of its own, never a slice of
    // node's shared pool (under 4 kB): an answer kept in the answer cache would pin the whole slab.
    const out = recycled ? buffers.take(total) : Buffer.allocUnsafeSlow(total);
    let at = 0;
    for (let i = 0; i < count; i += 1) {
      const piece = pieces[i] as Buffer;
      out.set(piece, at);
      at += piece.length;
    }
    return out;
  };

  const dynamicResult = (toggle: Extract<TogglePlan, { kind: 'dynamic' }>, enabled: boolean, variant: WireVariant): ToggleResult =>
    toggle.impressionData === undefined
      ? { name: toggle.name, enabled, variant }
      : { name: toggle.name, enabled, variant, impressionData: toggle.impressionData };
  const plainResults = new WeakMap<TogglePlan, PlainResults>();
  const plainResultsOf = (toggle: Extract<TogglePlan, { kind: 'dynamic' }>): PlainResults => {
    let found = plainResults.get(toggle);
    if (found === undefined) {
      found = {
        on: dynamicResult(toggle, true, { name: 'disabled', enabled: false, feature_enabled: true, featureEnabled: true }),
        off: dynamicResult(toggle, false, { name: 'disabled', enabled: false, feature_enabled: false }),
      };
      plainResults.set(toggle, found);
    }
    return found;
  };
  /** A toggle's state in an answer: on or off without a variant of its own, or the shared variant picked. */
  type State = 'on' | 'off' | Readonly<WireVariant>;
  /** The result a state stands for: made only when its fragment is first needed. */
  const resultOf = (toggle: TogglePlan, state: State): ToggleResult => {
    if (toggle.kind === 'on') return constantResult(toggle, toggle.entry);
    if (toggle.kind === 'off') return constantResult(toggle, toggle.allEntry);
    if (state === 'on') return plainResultsOf(toggle).on;
    if (state === 'off') return plainResultsOf(toggle).off;
    return dynamicResult(toggle, true, { ...state });
  };
  /**
   * One format's fragments: per toggle definition (its digest), the fragment of each state seen
   * (`null`: left out), keyed by the state's name (`on`, `off`, or a variant's JSON, the same in
   * every flag set, where the variant objects are not), for the definitions of the plan laid out
   * last; and per plan, each entry's states by index. Weak on the plan, so that a flag set no
   * longer served is not kept alive by a format nobody asks for any more.
   */
  interface Fragments {
    byDefinition: Map<string, Map<string, string | null>>;
    laidOut: WeakMap<SnapshotPlan, Array<Map<string, string | null>>>;
  }
  // Weak on the format: they go with the surface that made it.
  const fragments = new WeakMap<FragmentFormat, Fragments>();
  /** Each entry of `snapshot`'s plan with the states of its definition kept so far, new ones empty. */
  const layOut = (kept: Fragments, snapshot: Pick<Snapshot, 'plan' | 'toggleDigests'>): Array<Map<string, string | null>> => {
    const byDefinition = new Map<string, Map<string, string | null>>();
    const entries = snapshot.plan.toggles.map((toggle) => {
      const digest = snapshot.toggleDigests.get(toggle.name);
      // A toggle without a digest (none is made for a nameless one) keeps nothing across changes.
      if (digest === undefined) return new Map<string, string | null>();
      const states = byDefinition.get(digest) ?? kept.byDefinition.get(digest) ?? new Map<string, string | null>();
      byDefinition.set(digest, states);
      return states;
    });
    kept.byDefinition = byDefinition;
    kept.laidOut.set(snapshot.plan, entries);
    return entries;
  };

  return {
    formatAll: (snapshot: Pick<Snapshot, 'plan' | 'toggleDigests'>, context: UnleashContext, format: FragmentFormat): string => {
      const { plan } = snapshot;
      let kept = fragments.get(format);
      if (kept === undefined) {
        kept = { byDefinition: new Map(), laidOut: new WeakMap() };
        fragments.set(format, kept);
      }
      const entries = kept.laidOut.get(plan) ?? layOut(kept, snapshot);
      const parts: string[] = [];
      const handles = handlesOf(plan);
      for (let i = 0; i < plan.toggles.length; i += 1) {
        const toggle = plan.toggles[i] as TogglePlan;
        let state: State;
        if (toggle.kind !== 'dynamic') state = toggle.kind;
        else if (!toggle.variants) state = (handles[i] as ToggleHandle).isOn(context) ? 'on' : 'off';
        else {
          const variant = (handles[i] as ToggleHandle).sharedVariant(context);
          state = variant.feature_enabled !== true ? 'off' : isNoVariant(variant) ? 'on' : variant;
        }
        const states = entries[i] as Map<string, string | null>;
        // A variant by its JSON (kept per shared variant), which cannot read as `on` or `off`.
        const key = typeof state === 'string' ? state : variantJson(state);
        let part = states.get(key);
        if (part === undefined) {
          part = format.fragment(resultOf(toggle, state)) ?? null;
          states.set(key, part);
        }
        if (part !== null) parts.push(part);
      }
      if (parts.length === 0) return format.open + format.close;
      // The ends joined onto the first and last fragment, so `join` gives the answer as one flat
      // string: `open + join + close` was a rope, which node copied flat again to measure it (the
      // whole answer once more on V8's heap per request).
      parts[0] = format.open + (parts[0] as string);
      parts[parts.length - 1] += format.close;
      return parts.join(',');
    },

    serializeAll: (plan: SnapshotPlan, context: UnleashContext, includeDisabled: boolean): string | Buffer => {
      const most = longestOf(plan);
      if (most >= bytesFrom) return serializeBytes(plan, context, includeDisabled, most >= recycledFrom);
      const entries: string[] = [];
      const handles = handlesOf(plan);
      for (let i = 0; i < plan.toggles.length; i += 1) {
        const toggle = plan.toggles[i] as TogglePlan;
        if (toggle.kind === 'on') {
          entries.push(toggle.entry);
        } else if (toggle.kind === 'off') {
          if (includeDisabled) entries.push(toggle.allEntry);
        } else if (!toggle.variants) {
          if ((handles[i] as ToggleHandle).isOn(context)) entries.push(onEntryOf(toggle));
          else if (includeDisabled) entries.push(offEntryOf(toggle));
        } else {
          const variant = (handles[i] as ToggleHandle).sharedVariant(context);
          if (variant.feature_enabled === true) {
            entries.push(isNoVariant(variant) ? onEntryOf(toggle) : toggle.onPrefix + variantJson(variant) + toggle.suffix);
          } else if (includeDisabled) {
            entries.push(offEntryOf(toggle));
          }
        }
      }
      // The wrapper goes into the first and last entries, so that join makes the one flat string:
      // around the joined list, it would be a rope that Buffer.from copies flat once more.
      if (entries.length === 0) return '{"toggles":[]}';
      entries[0] = `{"toggles":[${entries[0] as string}`;
      entries[entries.length - 1] = `${entries[entries.length - 1] as string}]}`;
      return entries.join(',');
    },

    resultsAll: (plan: SnapshotPlan, context: UnleashContext, includeDisabled: boolean): ToggleResult[] => {
      const results: ToggleResult[] = [];
      const dynamic = (toggle: Extract<TogglePlan, { kind: 'dynamic' }>, enabled: boolean, variant: WireVariant): ToggleResult =>
        toggle.impressionData === undefined
          ? { name: toggle.name, enabled, variant }
          : { name: toggle.name, enabled, variant, impressionData: toggle.impressionData };
      const handles = handlesOf(plan);
      for (let i = 0; i < plan.toggles.length; i += 1) {
        const toggle = plan.toggles[i] as TogglePlan;
        if (toggle.kind === 'on') {
          results.push(constantResult(toggle, toggle.entry));
        } else if (toggle.kind === 'off') {
          if (includeDisabled) results.push(constantResult(toggle, toggle.allEntry));
        } else {
          const handle = handles[i] as ToggleHandle;
          const on = toggle.variants ? handle.variant(context) : undefined;
          const enabled = on ? on.feature_enabled === true : handle.isOn(context);
          if (enabled) {
            const plain = on === undefined || (on.name === 'disabled' && !on.enabled && on.payload === undefined);
            results.push(dynamic(toggle, true, plain ? { name: 'disabled', enabled: false, feature_enabled: true, featureEnabled: true } : on));
          } else if (includeDisabled) {
            results.push(dynamic(toggle, false, { name: 'disabled', enabled: false, feature_enabled: false }));
          }
        }
      }
      return results;
    },

    resultsNamed: (context: UnleashContext, names: readonly string[], enabled: boolean[]): ToggleResult[] =>
      names.map((name): ToggleResult => {
        const variant = engine.evaluate(name, context);
        const on = variant.feature_enabled === true;
        enabled.push(on);
        return { name, enabled: on, variant, impressionData: engine.definition(name)?.impressionData ?? false };
      }),
  };
}
