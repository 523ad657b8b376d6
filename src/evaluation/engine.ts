/**
 * The evaluation engine: the only place that runs unleash-client. One engine per proxy, each with
 * its own `Unleash` instance (never the `initialize()` singleton), so proxies never share state.
 */
import { Unleash, UnleashEvents, type Context, type Variant } from 'unleash-client';
import type { Logger } from '../logger.js';
import type { FeatureDefinition, FeaturesResponse, StorageProvider } from './types.js';
import { planSnapshot, type SnapshotPlan } from './plan.js';
import type { Strategy } from 'unleash-client';

/** A segment as the client API serves it: constraints shared by strategies that name its id. */
export interface Segment {
  id: number;
  constraints: unknown[];
  [key: string]: unknown;
}

/** A variant as answered on the wire (unleash-client 6 shape). */
export interface WireVariant {
  name: string;
  enabled: boolean;
  payload?: { type: string; value: string };
  feature_enabled?: boolean;
  featureEnabled?: boolean;
}

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
  storageProvider: StorageProvider<FeaturesResponse> | undefined;
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
  readonly revision: number;
  readonly features: readonly FeatureDefinition[];
  /** The segments the features refer to (by id), for SDKs that read the raw definitions. */
  readonly segments: readonly Segment[];
  /** Precomputed per flag-set change: constant toggles, and what answers depend on. */
  readonly plan: SnapshotPlan;
}

const DISABLED_VARIANT: WireVariant = Object.freeze({ name: 'disabled', enabled: false, feature_enabled: false });

/** Subclass for access to the protected evaluation client: one call per toggle, no context copy. */
class EngineUnleash extends Unleash {
  variantOf(name: string, context: Context): WireVariant {
    return this.client.getVariant(name, context) as WireVariant;
  }
  /** On or off, without building a variant: for toggles that define none. */
  isOn(feature: FeatureDefinition, context: Context): boolean {
    return this.client.isFeatureEnabled(feature, context, () => false).enabled;
  }
  baseContext(): Context {
    return { ...this.staticContext };
  }
  /**
   * Stops polling for good. unleash-client's repository drops its listeners when stopped, yet a
   * request already in flight may still retry and fail afterwards, emitting 'error' with nobody
   * listening (an unhandled rejection): keep one listener on it.
   */
  stop(onLateError: (error: unknown) => void): void {
    this.destroy();
    const repository = (this as unknown as { repository?: { on?: (event: string, listener: (e: unknown) => void) => void } }).repository;
    repository?.on?.(UnleashEvents.Error, onLateError);
  }
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
   * Whether a toggle that defines no variants is on (its variant is then always the no-variant
   * one). `feature` is the definition from the current snapshot's plan. Never throws.
   */
  isOn(feature: FeatureDefinition, context: Context): boolean;
  /** The variant given to a disabled toggle in `/proxy/all`. */
  readonly disabledVariant: WireVariant;
  /** Stops polling and frees the client. */
  close(): void;
}

/** The distinct segments that definitions with full segments (`getFeatureToggleDefinitions(true)`) use. */
function segmentsOf(features: readonly FeatureDefinition[]): Segment[] {
  const byId = new Map<number, Segment>();
  for (const feature of features) {
    for (const strategy of (feature.strategies ?? []) as Array<{ segments?: unknown[] }>) {
      for (const segment of strategy.segments ?? []) {
        const s = segment as Segment | undefined;
        if (s && typeof s.id === 'number' && !byId.has(s.id)) byId.set(s.id, s);
      }
    }
  }
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

/** Starts an engine; it begins fetching at once. */
export function createEngine(settings: EngineSettings, hooks: EngineHooks): Engine {
  const { logger } = settings;
  const unleash = new EngineUnleash({
    url: settings.url,
    appName: settings.appName,
    instanceId: settings.instanceId,
    environment: settings.environment,
    refreshInterval: settings.refreshInterval,
    projectName: settings.projectName,
    namePrefix: settings.namePrefix,
    tags: settings.tags,
    strategies: settings.strategies,
    storageProvider: settings.storageProvider,
    bootstrap: settings.bootstrap,
    // Usage is reported by our own reporter, which can add counts in bulk and flush on close.
    disableMetrics: true,
    skipInstanceCountWarning: true,
    customHeadersFunction: async () => ({ Authorization: settings.token }),
    httpOptions: settings.rejectUnauthorized === undefined ? undefined : { rejectUnauthorized: settings.rejectUnauthorized },
  });

  const customNames = new Set(settings.strategies.map((s) => s.name));
  let revision = 0;
  let current: Snapshot = { revision, features: [], segments: [], plan: planSnapshot([], [], customNames) };
  let ready = false;
  let closed = false;
  const refresh = (): void => {
    revision += 1;
    const features = unleash.getFeatureToggleDefinitions();
    const withSegments = unleash.getFeatureToggleDefinitions(true) as FeatureDefinition[];
    current = { revision, features, segments: segmentsOf(withSegments), plan: planSnapshot(features, withSegments, customNames) };
  };

  unleash.on(UnleashEvents.Error, (err: unknown) => {
    logger.error('Upstream flag API error', err);
    hooks.onFetchError?.(err);
  });
  unleash.on(UnleashEvents.Warn, (msg: unknown) => {
    logger.warn('Upstream flag API warning', msg);
    // unleash-client warns, rather than errs, on the statuses it retries with backoff (404, 429,
    // 5xx) and on a dropped keep-alive socket; both are failed fetches.
    if (typeof msg === 'string' && (/ responded \w*\s*\(?\d{3}\)?/.test(msg) || msg.startsWith('Socket keep alive error'))) {
      hooks.onFetchError?.(msg);
    }
  });
  unleash.on(UnleashEvents.Changed, () => {
    refresh();
    hooks.onFetch('changed');
  });
  unleash.on(UnleashEvents.Unchanged, () => hooks.onFetch('unchanged'));
  unleash.on(UnleashEvents.Ready, () => {
    // Ready may come from a backup or bootstrap, which emit no Changed event.
    refresh();
    ready = true;
    hooks.onReady();
  });

  return {
    isReady: () => ready && !closed,
    isClosed: () => closed,
    snapshot: () => current,
    definition: (name) => unleash.getFeatureToggleDefinition(name),
    withStaticContext(context) {
      const merged = unleash.baseContext();
      for (const key of Object.keys(context)) {
        const value = context[key];
        if (value !== undefined) merged[key] = value;
      }
      return merged;
    },
    evaluate(name, context) {
      try {
        return unleash.variantOf(name, context);
      } catch (error) {
        hooks.onStrategyError(name, error);
        return { ...DISABLED_VARIANT, featureEnabled: false };
      }
    },
    isOn(feature, context) {
      try {
        return unleash.isOn(feature, context);
      } catch (error) {
        hooks.onStrategyError(feature.name, error);
        return false;
      }
    },
    disabledVariant: DISABLED_VARIANT,
    close() {
      closed = true;
      // Our listeners stay: an 'error' emitted with none would throw from a late in-flight fetch.
      unleash.stop((error) => logger.debug('Upstream request failed after close', error));
    },
  };
}
