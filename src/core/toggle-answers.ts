/**
 * The toggles of an answer for one context, from a snapshot's plan: serialized in the Unleash
 * frontend format (`{"toggles":[…]}`, the constant entries written once per flag set), or as the
 * equal objects for in-process calls.
 */
import type { ToggleHandle } from '../evaluation/compiled.js';
import type { Engine, WireVariant } from '../evaluation/engine.js';
import type { SnapshotPlan, TogglePlan } from '../evaluation/plan.js';
import type { UnleashContext } from '../evaluation/types.js';

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

/** The answer builders over one engine. */
export interface ToggleAnswers {
  /** Serializes the answer for all toggles (enabled ones only unless `includeDisabled`). */
  serializeAll(plan: SnapshotPlan, context: UnleashContext, includeDisabled: boolean): string;
  /** The same toggles as {@link serializeAll}, as objects equal to its parsed JSON. */
  resultsAll(plan: SnapshotPlan, context: UnleashContext, includeDisabled: boolean): ToggleResult[];
  /** The named toggles, in order, known or not; `enabled` records each outcome. */
  resultsNamed(context: UnleashContext, names: readonly string[], enabled: boolean[]): ToggleResult[];
}

/** Builds the answer builders of one engine. */
export function createToggleAnswers(engine: Engine): ToggleAnswers {
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
  return {
    serializeAll: (plan: SnapshotPlan, context: UnleashContext, includeDisabled: boolean): string => {
      const entries: string[] = [];
      const handles = handlesOf(plan);
      for (let i = 0; i < plan.toggles.length; i += 1) {
        const toggle = plan.toggles[i] as TogglePlan;
        if (toggle.kind === 'on') {
          entries.push(toggle.entry);
        } else if (toggle.kind === 'off') {
          if (includeDisabled) entries.push(toggle.allEntry);
        } else if (!toggle.variants) {
          if ((handles[i] as ToggleHandle).isOn(context)) entries.push(toggle.onEntry);
          else if (includeDisabled) entries.push(toggle.offEntry);
        } else {
          const variant = (handles[i] as ToggleHandle).sharedVariant(context);
          if (variant.feature_enabled === true) {
            const plain = variant.name === 'disabled' && !variant.enabled && variant.payload === undefined;
            entries.push(plain ? toggle.onEntry : toggle.onPrefix + variantJson(variant) + toggle.suffix);
          } else if (includeDisabled) {
            entries.push(toggle.offEntry);
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
