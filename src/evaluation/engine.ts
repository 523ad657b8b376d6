/**
 * The evaluation engine: the only place that runs unleash-client. One engine per proxy, each with
 * its own `Unleash` instance (never the `initialize()` singleton), so proxies never share state.
 *
 * The compiled evaluator decides every toggle that uses built-in strategies only. The `Unleash`
 * instance, and unleash-client with it, is created when something needs it: custom strategies, or
 * a flag set with a toggle the compiled evaluator leaves to it (see {@link CompiledFlagSet.has}).
 */
import { hostname as osHostname } from 'node:os';
import type { Context, Strategy, Unleash } from 'unleash-client';
import type { Logger } from '../logger.js';
import { loadOnDemand } from '../load-on-demand.js';
import type { FeatureDefinition, FeaturesResponse, StorageProvider } from './types.js';
import { createSnapshotPlanner, type SnapshotPlan } from './plan.js';
import { FlagRepository, REPOSITORY_EVENTS, withSegmentData, type FlagSetViews } from './repository.js';
import { createFlagSetCompiler, type CompiledFlagSet, type ToggleHandle } from './compiled.js';
import { runInSlices, runSteps, type Steps } from './steps.js';
import { contentDigestSteps, sameJson } from './content-digest.js';
import type { WireVariant } from './types.js';

/** A segment as the client API serves it: constraints shared by strategies that name its id. */
export interface Segment {
  id: number;
  constraints: unknown[];
  [key: string]: unknown;
}

export type { WireVariant } from './types.js';

/** Everything the engine needs, already validated. */
export interface EngineSettings {
  url: string;
  token: string;
  appName: string;
  instanceId: string;
  environment: string | undefined;
  refreshInterval: number;
  projectName: string | undefined;
  namePrefix: string | undefined;
  tags: Array<{ name: string; value: string }> | undefined;
  strategies: Strategy[];
  storageProvider: StorageProvider<FeaturesResponse>;
  bootstrap:
    | { url?: string; urlHeaders?: Record<string, string>; filePath?: string; data?: FeatureDefinition[] }
    | undefined;
  rejectUnauthorized: boolean | undefined;
  logger: Logger;
}

/** Hooks the engine calls as the flag set changes. */
export interface EngineHooks {
  onReady(): void;
  /** A fetch answered with a new flag set (`changed`, also bootstrap data at start) or the same one (`unchanged`). */
  onFetch(outcome: 'changed' | 'unchanged'): void;
  /**
   * A fetch failed: no answer, a non-2xx status (including those unleash-client only warns about
   * and retries with backoff), or an answer that could not be used.
   */
  onFetchError?(error: unknown): void;
  onStrategyError(toggle: string, error: unknown): void;
}

/** The flag set as of one moment: evaluation answers are cached against its `revision`. */
export interface Snapshot {
  /** Moves exactly when the content does ({@link Snapshot.digest}): a set fetched again unchanged keeps it. */
  readonly revision: number;
  readonly features: readonly FeatureDefinition[];
  /** The segments the features refer to (by id), for SDKs that read the raw definitions. */
  readonly segments: readonly Segment[];
  /** Precomputed per flag-set change: constant toggles, and what answers depend on. */
  readonly plan: SnapshotPlan;
  /** The toggles built-in strategies decide, compiled for evaluation; the rest go to unleash-client. */
  readonly compiled: CompiledFlagSet;
  /** The digest of the features and segments, the same wherever they are served (content-digest.ts). */
  readonly digest: string;
  /** Each toggle's digest by name, equal exactly when its definition is (content-digest.ts). */
  readonly toggleDigests: ReadonlyMap<string, string>;
  /** Each segment's digest by id (content-digest.ts). */
  readonly segmentDigests: ReadonlyMap<number, string>;
}

/** How often a failure that keeps repeating is logged again. */
const FAILURE_LOG_INTERVAL_MS = 60_000;

const DISABLED_VARIANT: WireVariant = Object.freeze({ name: 'disabled', enabled: false, feature_enabled: false });

/** What the engine asks unleash-client: one call per toggle, no context copy. */
interface UnleashEvaluator {
  variantOf(name: string, context: Context): WireVariant;
  /** On or off, without building a variant: for toggles that define none. */
  isOn(feature: FeatureDefinition, context: Context): boolean;
  destroy(): void;
}

/**
 * The host name unleash-client's applicationHostname strategy compares with, worked out as it does
 * (when the module loads, which is when a proxy is created now).
 */
function applicationHostname(): string {
  return (process.env.HOSTNAME || osHostname() || 'undefined').toLowerCase();
}

/** unleash-client's warning for a flag URL ending in `/features`, and the URL it then uses. */
function featuresSuffix(url: string): { warning: string | undefined; url: string } {
  if (!url.endsWith('/features')) return { warning: undefined, url };
  return { warning: `Unleash server URL "${url}" should no longer link directly to /features`, url: url.replace(/\/features$/, '') };
}

/**
 * An `Unleash` instance over our repository (which the engine starts and stops itself), with its
 * warnings and errors logged. Loads unleash-client.
 */
function createUnleash(settings: EngineSettings, repository: FlagRepository): UnleashEvaluator {
  const { Unleash: UnleashClass, UnleashEvents } = loadOnDemand('unleash-client') as typeof import('unleash-client');
  /** Subclass for access to the protected evaluation client. */
  class EngineUnleash extends UnleashClass {
    variantOf(name: string, context: Context): WireVariant {
      return this.client.getVariant(name, context) as WireVariant;
    }
    isOn(feature: FeatureDefinition, context: Context): boolean {
      return this.client.isFeatureEnabled(feature, context, () => false).enabled;
    }
  }
  const unleash: Unleash & UnleashEvaluator = new EngineUnleash({
    // Its /features warning was logged when the engine started.
    url: featuresSuffix(settings.url).url,
    appName: settings.appName,
    instanceId: settings.instanceId,
    environment: settings.environment,
    strategies: settings.strategies,
    repository,
    // The engine starts the repository; the instance may come after it is running.
    disableAutoStart: true,
    // Usage is reported by our own reporter, which can add counts in bulk and flush on close.
    disableMetrics: true,
    skipInstanceCountWarning: true,
  });
  // What unleash-client itself reports while evaluating (a strategy or parent toggle it does not know).
  unleash.on(UnleashEvents.Warn, (msg: unknown) => settings.logger.warn('Flag evaluation warning', msg));
  unleash.on(UnleashEvents.Error, (err: unknown) => settings.logger.error('Flag evaluation error', err));
  return unleash;
}

/** The evaluation engine of one proxy. */
export interface Engine {
  /** True once a flag set is loaded (from upstream, backup or bootstrap), until {@link Engine.close}. */
  isReady(): boolean;
  /** True once {@link Engine.close} was called. */
  isClosed(): boolean;
  /** The current flag set. */
  snapshot(): Snapshot;
  /** The raw definition of one toggle, if known. */
  definition(name: string): FeatureDefinition | undefined;
  /** Merges the static context (appName, environment) under `context` once per request. */
  withStaticContext(context: Context): Context;
  /**
   * The variant of one toggle for a context already passed through {@link Engine.withStaticContext}.
   * A throwing custom strategy yields the disabled variant and is reported, never thrown.
   */
  evaluate(name: string, context: Context): WireVariant;
  /**
   * {@link Engine.evaluate}, where a compiled toggle answers with a frozen variant shared by every
   * call that gets the same one (see `CompiledFlagSet.sharedVariant`): for answer builders only.
   */
  evaluateShared(name: string, context: Context): Readonly<WireVariant>;
  /**
   * The questions {@link Engine.evaluate}, {@link Engine.evaluateShared} and {@link Engine.isOn}
   * ask, bound to one toggle of the current snapshot: the compiled toggle itself when there is
   * one, else those calls. Valid for the snapshot current when asked (answer builders ask it once
   * per plan, synchronously with the snapshot they read).
   */
  handle(feature: FeatureDefinition): ToggleHandle;
  /** The compiled toggle named `name` in the current snapshot, bound; `undefined` when it is not compiled (or unknown). */
  compiledHandle(name: string): ToggleHandle | undefined;
  /**
   * Whether a toggle that defines no variants is on (its variant is then always the no-variant
   * one). `feature` is the definition from the current snapshot's plan. Never throws.
   */
  isOn(feature: FeatureDefinition, context: Context): boolean;
  /** The variant given to a disabled toggle in `/proxy/all`. */
  readonly disabledVariant: WireVariant;
  /** What the last failed fetch said, until a fetch succeeds again. */
  lastFailure(): string | undefined;
  /**
   * Fetches the flag set now; resolves once it is adopted (the snapshot is then current) or found
   * unchanged; rejects with what failed, and once closed.
   */
  refresh(): Promise<void>;
  /** Stops polling and frees the client; resolves once nothing it started still runs. */
  close(): Promise<void>;
}

/** Segment ids as a held toggle's strategies name them. */
type HeldStrategies = Array<{ segments?: unknown[] }> | undefined;

/** The distinct segments of `byId` that `features` (as held: segment ids) name, by id. */
function segmentsOf(features: readonly FeatureDefinition[], byId: ReadonlyMap<number, Segment>): Segment[] {
  const used = new Map<number, Segment>();
  for (const feature of features) {
    for (const strategy of (feature.strategies ?? []) as NonNullable<HeldStrategies>) {
      for (const id of strategy.segments ?? []) {
        const segment = byId.get(id as number);
        if (segment && typeof segment.id === 'number' && !used.has(segment.id)) used.set(segment.id, segment);
      }
    }
  }
  return [...used.values()].sort((a, b) => a.id - b.id);
}

/**
 * Whether each segment a held toggle names is the same in two sets (by digest; a segment neither
 * holds is the same too). A toggle held as the same definition in both, whose segments are the
 * same, has the same definition with full segments: what was compiled and planned for it holds.
 */
function sameSegments(feature: FeatureDefinition, before: ReadonlyMap<number, string>, now: ReadonlyMap<number, string>): boolean {
  for (const strategy of (feature.strategies ?? []) as NonNullable<HeldStrategies>) {
    for (const id of strategy.segments ?? []) if (before.get(id as number) !== now.get(id as number)) return false;
  }
  return true;
}

/** Toggles between two yields while the unchanged ones are swapped for the held ones. */
const SWAPS_PER_STEP = 256;

/**
 * Swaps each toggle of a new set whose digest is the one it had in `previous` for the definition
 * `previous` holds, in `byName` (what the repository will hold) and in the list it returns: what
 * was built from that definition (its compiled form, its OFREP fragments) then serves the new set
 * as it is, and the copy just parsed is let go instead of being held beside it.
 */
function* keepUnchanged(
  byName: Map<string, FeatureDefinition>,
  features: FeatureDefinition[],
  digests: ReadonlyMap<string, string>,
  previous: Snapshot,
  held: ReadonlyMap<string, FeatureDefinition>,
): Steps<FeatureDefinition[]> {
  const kept = features.slice();
  for (let i = 0; i < kept.length; i += 1) {
    const name = (kept[i] as FeatureDefinition).name;
    const before = held.get(name);
    if (before !== undefined && previous.toggleDigests.get(name) === digests.get(name)) {
      kept[i] = before;
      byName.set(name, before);
    }
    if (i % SWAPS_PER_STEP === SWAPS_PER_STEP - 1) yield;
  }
  return kept;
}

/** The flag repository, built from the engine's settings; `prepare` builds a set before it is adopted. */
function createRepository(settings: EngineSettings, prepare: (held: () => FlagSetViews) => Promise<() => void>): FlagRepository {
  // Our own repository validates each flag set before adopting it and never stops polling.
  return new FlagRepository({
    url: settings.url,
    token: settings.token,
    appName: settings.appName,
    instanceId: settings.instanceId,
    refreshInterval: settings.refreshInterval,
    projectName: settings.projectName,
    namePrefix: settings.namePrefix,
    tags: settings.tags,
    storageProvider: settings.storageProvider,
    bootstrap: settings.bootstrap,
    rejectUnauthorized: settings.rejectUnauthorized,
    prepare,
  });
}

/**
 * Logs what the repository reports. `recovered` is called when a fetch succeeds
 * (it logs the recovery after a failure); `lastFailure` says what the last failed fetch said until then.
 */
function logUpstreamEvents({
  repository,
  logger,
  hooks,
}: {
  repository: FlagRepository;
  logger: EngineSettings['logger'];
  hooks: EngineHooks;
}): { recovered(): void; lastFailure(): string | undefined } {
  // A failure that repeats (an upstream down for an hour) is logged when it starts, when it
  // changes, and once a minute; every one counts in the metrics.
  let lastFailure: { message: string; loggedAt: number; repeats: number } | undefined;
  repository.on(REPOSITORY_EVENTS.failure, (err: unknown) => {
    hooks.onFetchError?.(err);
    const message = err instanceof Error ? err.message : String(err);
    const now = Date.now();
    if (lastFailure?.message === message && now - lastFailure.loggedAt < FAILURE_LOG_INTERVAL_MS) {
      lastFailure.repeats += 1;
      return;
    }
    const repeats = lastFailure?.message === message ? ` (${lastFailure.repeats + 1} times in a row)` : '';
    lastFailure = { message, loggedAt: now, repeats: 0 };
    logger.error(`Upstream flag API error${repeats}:`, message);
  });
  repository.on(REPOSITORY_EVENTS.warning, (msg: unknown) => logger.warn('Upstream flag API warning', msg));
  return {
    recovered() {
      if (lastFailure) logger.info('Upstream flag API answers again');
      lastFailure = undefined;
    },
    lastFailure: () => lastFailure?.message,
  };
}

/** `base` with every field of `context` that is not `undefined` set over it (`base` is a fresh copy). */
function mergeDefined(base: Context, context: Context): Context {
  for (const key of Object.keys(context)) {
    const value = context[key];
    if (value !== undefined) base[key] = value;
  }
  return base;
}

/** Starts an engine; it begins fetching at once. */
export function createEngine(settings: EngineSettings, hooks: EngineHooks): Engine {
  const { logger } = settings;
  const repository = createRepository(settings, (held) => prepare(held));
  const staticContext = { appName: settings.appName, environment: settings.environment ?? 'default' };
  let closed = false;
  let unleash: UnleashEvaluator | undefined;
  const unleashClient = (): UnleashEvaluator => (unleash ??= createUnleash(settings, repository));
  // Custom strategies are unleash-client's own class and run in it; the instance also checks them now.
  if (settings.strategies.length > 0) unleashClient();

  const customNames = new Set(settings.strategies.map((s) => s.name));
  const hostname = applicationHostname();
  const compiler = createFlagSetCompiler({ customStrategyNames: customNames, hostname, onError: hooks.onStrategyError });
  const planner = createSnapshotPlanner(customNames);
  /**
   * A snapshot's content, built from a flag set as the repository will hold it. With `previous`,
   * the toggles it holds unchanged are taken from it (see {@link keepUnchanged}), and the compiler
   * and the planner reuse what they made for a toggle whose definition with segments is the same.
   */
  function* build(held: FlagSetViews, previous: Snapshot | undefined): Steps<Omit<Snapshot, 'revision'>> {
    const byName = held.features as Map<string, FeatureDefinition>;
    const segmentsById = held.segments as unknown as ReadonlyMap<number, Segment>;
    let features = [...byName.values()];
    const segments = segmentsOf(features, segmentsById);
    const before = new Map<string, FeatureDefinition>();
    for (const feature of previous?.features ?? []) before.set(feature.name, feature);
    yield;
    // A toggle as it was in the last set keeps the digest it had: it is compared, not serialized.
    const known = (feature: FeatureDefinition): string | undefined => {
      const was = before.get(feature.name);
      return was !== undefined && sameJson(was, feature) ? previous?.toggleDigests.get(feature.name) : undefined;
    };
    const { digest, toggleDigests, segmentDigests } = yield* contentDigestSteps(features, segments, known);
    if (previous !== undefined) features = yield* keepUnchanged(byName, features, toggleDigests, previous, before);
    const withSegments = withSegmentData(features, held.segments) as FeatureDefinition[];
    yield;
    // Held as the very definition the last set held (see keepUnchanged), over the same segments.
    const unchanged = (name: string): boolean => {
      const feature = byName.get(name);
      return previous !== undefined && feature !== undefined && feature === before.get(name) && sameSegments(feature, previous.segmentDigests, segmentDigests);
    };
    const compiled = yield* compiler.compileSteps(withSegments, previous && { previous: previous.compiled, unchanged });
    const plan = yield* planner.planSteps(features, withSegments, previous && { previous: previous.plan, unchanged });
    return { features, segments, plan, compiled, digest, toggleDigests, segmentDigests };
  }
  let revision = 0;
  let current: Snapshot = { revision, ...runSteps(build({ features: new Map(), segments: new Map() }, undefined)) };
  let ready = false;
  /**
   * Builds a flag set the repository is about to adopt (every one it adopts comes here, once), in
   * slices between which the host's requests are served with the snapshot still current; resolves
   * to what makes it current, which the repository calls as it applies the set.
   */
  async function prepare(held: () => FlagSetViews): Promise<() => void> {
    const content = await runInSlices(buildHeld(held, current), () => closed);
    return () => {
      // The same content (a new upstream ETag for the same flags) keeps its revision, so what was
      // made for it (cached answers, client API bodies) still holds.
      if (content.digest !== current.digest) revision += 1;
      current = { revision, ...content };
      // Loaded with the flag set that needs it, rather than by the first request that does.
      if (content.features.some((feature) => !content.compiled.has(feature.name))) unleashClient();
    };
  }
  /** {@link build} for a flag set as the repository will hold it (made here, in the first slice). */
  function* buildHeld(held: () => FlagSetViews, previous: Snapshot): Steps<Omit<Snapshot, 'revision'>> {
    const views = held();
    yield;
    return yield* build(views, previous);
  }

  const { recovered, lastFailure } = logUpstreamEvents({ repository, logger, hooks });
  repository.on(REPOSITORY_EVENTS.changed, () => {
    recovered();
    hooks.onFetch('changed');
  });
  repository.on(REPOSITORY_EVENTS.unchanged, () => {
    recovered();
    hooks.onFetch('unchanged');
  });
  repository.on(REPOSITORY_EVENTS.ready, () => {
    // The set that made it ready is current already: the repository installed it as it applied it.
    ready = true;
    hooks.onReady();
  });
  // As an `Unleash` instance would: warn of a URL ending in /features, then start on the next tick.
  const { warning } = featuresSuffix(settings.url);
  if (warning !== undefined) process.nextTick(() => logger.warn('Flag evaluation warning', warning));
  process.nextTick(() => {
    if (!closed) void repository.start();
  });

  const engine: Engine = {
    isReady: () => ready && !closed,
    isClosed: () => closed,
    snapshot: () => current,
    definition: (name) => repository.getToggle(name) as FeatureDefinition | undefined,
    // Not `{ ...staticContext }` then extended: V8 keeps such clones alive across young collections.
    withStaticContext: (context) => mergeDefined(Object.assign({}, staticContext), context),
    evaluate(name, context) {
      const { compiled } = current;
      if (compiled.has(name)) return compiled.variant(name, context);
      // A toggle the repository does not hold: unleash-client's answer, without asking it.
      if (repository.getToggle(name) === undefined) return { ...DISABLED_VARIANT, featureEnabled: false };
      try {
        return unleashClient().variantOf(name, context);
      } catch (error) {
        hooks.onStrategyError(name, error);
        return { ...DISABLED_VARIANT, featureEnabled: false };
      }
    },
    evaluateShared(name, context) {
      const { compiled } = current;
      return compiled.has(name) ? compiled.sharedVariant(name, context) : this.evaluate(name, context);
    },
    compiledHandle: (name) => current.compiled.handle(name),
    handle(feature) {
      const compiled = current.compiled.handle(feature.name);
      if (compiled !== undefined) return compiled;
      return {
        variant: (context) => engine.evaluate(feature.name, context),
        sharedVariant: (context) => engine.evaluate(feature.name, context),
        isOn: (context) => engine.isOn(feature, context),
      };
    },
    isOn(feature, context) {
      const { compiled } = current;
      if (compiled.has(feature.name)) return compiled.isOn(feature.name, context);
      try {
        return unleashClient().isOn(feature, context);
      } catch (error) {
        hooks.onStrategyError(feature.name, error);
        return false;
      }
    },
    disabledVariant: DISABLED_VARIANT,
    lastFailure,
    refresh: () => repository.refresh(),
    close() {
      closed = true;
      // Stops the repository (`destroy()` does so too); a fetch still in flight then adopts and reports nothing.
      if (unleash) unleash.destroy();
      else repository.stop();
      return repository.settled();
    },
  };
  return engine;
}
