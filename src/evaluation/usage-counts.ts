/**
 * The counts of one reporting period, with a budget of distinct names: the aggregation half of the
 * usage reporter (its transport is in usage-reporter.ts).
 */

/** Counts of one toggle in one reporting period. */
export interface ToggleCounts {
  yes: number;
  no: number;
  variants: Record<string, number>;
}

/** One period's counts, taken out of the collector to be sent. */
export interface UsagePeriod {
  start: Date;
  toggles: Record<string, ToggleCounts>;
}

/** Collects counts within a budget of distinct names. */
export interface UsageCounts {
  /** Counts one evaluation; `known` says whether the toggle is in the flag set. */
  count(name: string, enabled: boolean, known: boolean): void;
  /**
   * {@link count} bound to one name: the same counting, with the name's counts looked up once per
   * reporting period instead of on every call (for callers that count one toggle many times).
   */
  counter(name: string, known: boolean): (enabled: boolean) => void;
  /** Adds counts in bulk (a frontend SDK report). */
  add(name: string, yes: number, no: number, variants: Record<string, number> | undefined, known: boolean): void;
  /** How many distinct names hold counts now. */
  size(): number;
  /** How many names' counts were dropped since the last call (the budget was spent), and resets it. */
  takeDropped(): number;
  /** Takes the period's counts out and starts a new period. */
  take(): UsagePeriod;
  /** Puts a period that could not be sent back, under its older start, ahead of anything counted meanwhile. */
  restore(period: UsagePeriod): void;
  /** The counts not yet taken. */
  pending(): Readonly<Record<string, ToggleCounts>>;
}

/** Creates an empty collector; `maxToggles` and `maxUnknownToggles` are the two budgets of names. */
export function createUsageCounts(limits: { maxToggles: number; maxUnknownToggles: number }): UsageCounts {
  let toggles: Record<string, ToggleCounts> = Object.create(null);
  let size = 0;
  // Unknown names (anyone with a client key can invent them) get their own budget, so they can
  // never crowd out the usage of real toggles.
  let unknownSize = 0;
  let dropped = 0;
  let start = new Date();
  // Which period `toggles` belongs to: a bound counter looks its counts up again when it changes.
  let generation = 0;

  /** The counts of a name, made on first use; `undefined` when the name's budget is spent. */
  const entry = (name: string, known: boolean | 'restore'): ToggleCounts | undefined => {
    let counts = toggles[name];
    if (counts) return counts;
    if (known === 'restore' || known) {
      if (known !== 'restore' && size >= limits.maxToggles) {
        dropped += 1;
        return undefined;
      }
      size += 1;
    } else {
      if (unknownSize >= limits.maxUnknownToggles) {
        dropped += 1;
        return undefined;
      }
      unknownSize += 1;
    }
    counts = { yes: 0, no: 0, variants: Object.create(null) };
    toggles[name] = counts;
    return counts;
  };

  const merge = (
    name: string,
    yes: number,
    no: number,
    variants: Record<string, number> | undefined,
    known: boolean | 'restore',
  ): void => {
    const counts = entry(name, known);
    if (!counts) return;
    counts.yes += yes;
    counts.no += no;
    if (variants) for (const v of Object.keys(variants)) counts.variants[v] = (counts.variants[v] ?? 0) + (variants[v] ?? 0);
  };

  return {
    count(name, enabled, known) {
      const counts = entry(name, known);
      if (counts) counts[enabled ? 'yes' : 'no'] += 1;
    },
    counter(name, known) {
      let counts: ToggleCounts | undefined;
      let of = -1;
      return (enabled) => {
        // Looked up again when the period changed, and while the budget drops it (each drop is counted).
        if (of !== generation || counts === undefined) {
          counts = entry(name, known);
          of = generation;
        }
        if (counts === undefined) return;
        if (enabled) counts.yes += 1;
        else counts.no += 1;
      };
    },
    add: merge,
    size: () => size + unknownSize,
    takeDropped() {
      const n = dropped;
      dropped = 0;
      return n;
    },
    take() {
      const taken = { start, toggles };
      toggles = Object.create(null);
      generation += 1;
      size = 0;
      unknownSize = 0;
      start = new Date();
      return taken;
    },
    restore(period) {
      start = period.start;
      for (const name of Object.keys(period.toggles)) {
        const c = period.toggles[name] as ToggleCounts;
        merge(name, c.yes, c.no, c.variants, 'restore');
      }
    },
    pending: () => toggles,
  };
}
