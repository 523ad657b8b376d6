/**
 * Our own flag repository, given to unleash-client in place of its built-in one. It fetches the
 * client API with unleash-client's own request helper (same headers, proxy agents and TLS options),
 * but decides for itself what to adopt and when to look again:
 *
 * - a flag set is validated whole before it is adopted; one malformed entry rejects the answer and
 *   the last good set stays (unleash-client adopts what it cannot validate);
 * - it polls every refresh interval whatever happened last (unleash-client backs off up to 11
 *   intervals, and stops for good after a 401/403), so a recovered upstream shows within one
 *   interval; only an upstream's own `Retry-After` stretches the wait.
 */
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type http from 'node:http';
import type { ClientFeaturesResponse } from 'unleash-client';
import {
  resolveBootstrapProvider,
  type BootstrapOptions,
  type BootstrapProvider,
  type EnhancedFeatureInterface,
  type FeatureInterface,
  type RepositoryInterface,
  type Segment,
} from './unleash-internals.js';
import { isWatchable, type FeaturesResponse, type StorageProvider } from './types.js';
import { agentFor, identityHeaders, upstreamGet } from './upstream-http.js';
import { redactUrl } from '../logger.js';
import { zod } from '../load-on-demand.js';
import { isJsonObject as isObject, isPlainObject } from '../plain-objects.js';

/**
 * What a {@link FlagRepository} emits: unleash-client's `ready`, `changed` and `unchanged` (the
 * values of its `UnleashEvents`, which an `Unleash` instance over the repository listens to;
 * written out so that this module loads nothing of unleash-client), and our `failure` and `warning`.
 */
export const REPOSITORY_EVENTS = {
  ready: 'ready',
  changed: 'changed',
  unchanged: 'unchanged',
  failure: 'failure',
  warning: 'warning',
} as const;

/** The bootstrap provider when no bootstrap is configured: it reads nothing, as unleash-client's would. */
const NO_BOOTSTRAP: BootstrapProvider = { readBootstrap: async () => undefined };

/** Whether `bootstrap` gives anything to read (unleash-client tests each source for truthiness). */
function hasBootstrap(bootstrap: BootstrapOptions | undefined): bootstrap is BootstrapOptions {
  return Boolean(bootstrap?.bootstrapProvider || bootstrap?.data || bootstrap?.url || bootstrap?.filePath);
}

/** How long one fetch may take in all, as unleash-client allows. */
const DEFAULT_TIMEOUT_MS = 10_000;

/** The longest an upstream's `Retry-After` may hold polling back. */
const MAX_RETRY_AFTER_MS = 5 * 60_000;

/** The feature-set version unleash-client announces it understands. */
const SUPPORTED_SPEC_VERSION = '5.2.0';

const isNumber = (value: unknown): boolean => typeof value === 'number' && Number.isFinite(value);
const isNullish = (value: unknown): value is null | undefined => value === undefined || value === null;

/** Whether `value` is an array (holes included) whose every item passes `check`. */
function isArrayOf(value: unknown, check: (item: unknown) => boolean): boolean {
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (!check(value[i])) return false;
  return true;
}

const isVariant = (v: unknown): boolean => isObject(v) && typeof v.name === 'string' && (v.weight === undefined || isNumber(v.weight));
const isConstraint = (c: unknown): boolean => isObject(c) && typeof c.contextName === 'string' && typeof c.operator === 'string';
const isStrategy = (s: unknown): boolean =>
  isObject(s) &&
  typeof s.name === 'string' &&
  (isNullish(s.parameters) || isPlainObject(s.parameters)) &&
  (isNullish(s.constraints) || isArrayOf(s.constraints, isConstraint)) &&
  (isNullish(s.segments) || isArrayOf(s.segments, isNumber)) &&
  (isNullish(s.variants) || isArrayOf(s.variants, isVariant));
const isDependency = (d: unknown): boolean => isObject(d) && typeof d.feature === 'string';
const isFeature = (f: unknown): boolean =>
  isObject(f) &&
  typeof f.name === 'string' &&
  f.name.length > 0 &&
  typeof f.enabled === 'boolean' &&
  isArrayOf(f.strategies, isStrategy) &&
  (isNullish(f.variants) || isArrayOf(f.variants, isVariant)) &&
  (isNullish(f.dependencies) || isArrayOf(f.dependencies, isDependency)) &&
  (isNullish(f.impressionData) || typeof f.impressionData === 'boolean');
const isSegment = (s: unknown): boolean => isObject(s) && isNumber(s.id) && isArrayOf(s.constraints, isConstraint);

/**
 * Whether the flag-set schema accepts `data`: what evaluation relies on is checked, everything
 * else an upstream sends passes through as is. Every flag set an upstream serves passes this check,
 * and is adopted as given (callers hand over fresh data: a parsed answer, a storage read); the
 * schema (zod, loaded then) is consulted only for one that does not, for its verdict and message.
 */
export function isPlainFlagSet(data: unknown): data is { features: unknown[]; segments?: unknown[] | null } {
  return isObject(data) && isArrayOf(data.features, isFeature) && (isNullish(data.segments) || isArrayOf(data.segments, isSegment));
}

/** The flag-set schema, with the same rules as {@link isPlainFlagSet}: built (and zod loaded) on first use. */
export function flagSetSchema() {
  const z = zod();
  const variantSchema = z.looseObject({ name: z.string(), weight: z.number().optional() });
  const constraintSchema = z.looseObject({ contextName: z.string(), operator: z.string() });
  const strategySchema = z.looseObject({
    name: z.string(),
    parameters: z.record(z.string(), z.unknown()).nullish(),
    constraints: z.array(constraintSchema).nullish(),
    segments: z.array(z.number()).nullish(),
    variants: z.array(variantSchema).nullish(),
  });
  const featureSchema = z.looseObject({
    name: z.string().min(1),
    enabled: z.boolean(),
    strategies: z.array(strategySchema),
    variants: z.array(variantSchema).nullish(),
    dependencies: z.array(z.looseObject({ feature: z.string() })).nullish(),
    impressionData: z.boolean().nullish(),
  });
  const segmentSchema = z.looseObject({ id: z.number(), constraints: z.array(constraintSchema) });
  return z.looseObject({
    features: z.array(featureSchema),
    segments: z.array(segmentSchema).nullish(),
  });
}

/** A flag set that passed validation. */
interface FlagSet {
  version: number;
  features: FeatureInterface[];
  segments: Segment[];
}

/** The first problem of an invalid flag set, as `features[3].strategies: expected array, received string`. */
function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  const where = issue.path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('');
  return `${where || 'the answer'}: ${issue.message}`;
}

/** Validates a flag set whole: either every entry is usable, or it throws and nothing is adopted. */
export function parseFlagSet(data: unknown): FlagSet {
  let valid: { features: unknown[]; segments?: unknown[] | null };
  if (isPlainFlagSet(data)) valid = data;
  else {
    const parsed = flagSetSchema().safeParse(data);
    if (!parsed.success) throw new Error(`Flag set rejected, the last good one stays: ${describeIssue(parsed.error)}`);
    valid = parsed.data;
  }
  const version = (data as { version?: unknown }).version;
  return {
    version: typeof version === 'number' ? version : 2,
    features: valid.features as unknown as FeatureInterface[],
    segments: (valid.segments ?? []) as unknown as Segment[],
  };
}

/** A flag set as the repository holds it: its toggles by name (the last of a name winning), its segments by id. */
export interface FlagSetViews {
  features: Map<string, FeatureInterface>;
  segments: Map<number, Segment>;
}

/** The {@link FlagSetViews} of a flag set. */
function flagSetViews(flagSet: FlagSet): FlagSetViews {
  return {
    features: new Map(flagSet.features.map((feature) => [feature.name, feature])),
    segments: new Map(flagSet.segments.map((segment) => [segment.id, segment])),
  };
}

type StrategyDefinition = NonNullable<FeatureInterface['strategies']>[number];

/** Whether a strategy's copy differs from it: it names segments (or has `null` for them, which becomes `undefined`). */
const changesWithSegments = (strategy: StrategyDefinition | undefined): boolean =>
  strategy?.segments !== undefined && !(Array.isArray(strategy.segments) && strategy.segments.length === 0);

/**
 * Toggles with each strategy's segment ids replaced by the segments (a missing one by `undefined`),
 * as unleash-client evaluates them. Only what changes is copied: a toggle none of whose strategies
 * names a segment is the very definition (read-only to everyone), and so is each strategy without
 * segments of a copied toggle. Copying them all was 2.4 MB at 5000 flags (one in ten using a
 * segment), alive while the set was compiled and planned.
 */
export function withSegmentData(features: readonly FeatureInterface[], segments: ReadonlyMap<number, Segment>): EnhancedFeatureInterface[] {
  return features.map((feature) => {
    const strategies: ReadonlyArray<StrategyDefinition | undefined> | undefined = feature.strategies;
    if (!Array.isArray(strategies) || !strategies.some(changesWithSegments)) return feature;
    return {
      ...feature,
      strategies: strategies.map((strategy) =>
        strategy !== undefined && changesWithSegments(strategy) ? { ...strategy, segments: strategy.segments?.map((id: number) => segments.get(id)) } : strategy,
      ),
    };
  }) as EnhancedFeatureInterface[];
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Milliseconds an upstream asked us to wait (`Retry-After` in seconds or as a date), if any. */
function retryAfterMs(header: string | undefined, now: number): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - now;
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, MAX_RETRY_AFTER_MS) : undefined;
}

/** The client API's features URL with the project, name-prefix and tag filters. */
function featuresUrl(settings: RepositorySettings): URL {
  const url = new URL('./client/features', settings.url.endsWith('/') ? settings.url : `${settings.url}/`);
  if (settings.projectName) url.searchParams.append('project', settings.projectName);
  if (settings.namePrefix) url.searchParams.append('namePrefix', settings.namePrefix);
  for (const tag of settings.tags ?? []) url.searchParams.append('tag', `${tag.name}:${tag.value}`);
  return url;
}

/**
 * For a 404 under a flag URL without the client API's `/api/` (the commonest slip): the URL that
 * was probably meant, without credentials; `''` when the URL already ends in `/api/`.
 */
function apiPathHint(flagUrl: string): string {
  const meant = new URL(flagUrl.endsWith('/') ? flagUrl : `${flagUrl}/`);
  if (meant.pathname.endsWith('/api/')) return '';
  return `: did you mean ${meant.origin}${meant.pathname}api/?`;
}

/** A failed fetch: what the engine logs, and whether it is the same failure as the one before. */
export class FetchFailure extends Error {
  constructor(
    message: string,
    /** The HTTP status, when the upstream answered. */
    readonly status?: number,
    /** How long the upstream asked us to wait before the next fetch (`Retry-After`), in ms. */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'FetchFailure';
  }
}

export interface RepositorySettings {
  url: string;
  token: string;
  appName: string;
  instanceId: string;
  refreshInterval: number;
  projectName: string | undefined;
  namePrefix: string | undefined;
  tags: Array<{ name: string; value: string }> | undefined;
  storageProvider: StorageProvider<FeaturesResponse>;
  bootstrap: BootstrapOptions | undefined;
  rejectUnauthorized: boolean | undefined;
  /** How long one fetch may take before it counts as failed (unleash-client's default: 10 s). */
  timeout?: number;
  /**
   * Prepares what a validated flag set (from the upstream, a bootstrap, the backup or another
   * instance through the storage), as the repository will hold it (`held`, made on its first call
   * and then shared with the repository), needs before it is made current (the engine builds its
   * snapshot, in slices), and resolves to what makes that current: called
   * right after the set is applied, before anything is announced, so that readers of the
   * repository and of the prepared work see the new set from the same moment. A set whose
   * preparation fails is not adopted.
   */
  prepare?: (held: () => FlagSetViews) => Promise<() => void>;
}

/**
 * The repository of one engine. Events: `ready` once a flag set is loaded (upstream, backup or
 * bootstrap), `changed` on each adopted set, `unchanged` on a 304, `failure` with an Error on each
 * failed fetch (a {@link FetchFailure}, or the reason the answer was rejected), `warning` for a
 * backup or bootstrap that could not be read or written. Failures and warnings are not named
 * `error`/`warn`, so unleash-client, which listens to its repository, does not pass them on too.
 */
export class FlagRepository extends EventEmitter implements RepositoryInterface {
  private features = new Map<string, FeatureInterface>();
  private segments = new Map<number, Segment>();
  /** Tickets of {@link adopt}: the last one handed out, and the last one made current. */
  private adoptions = 0;
  private adopted = 0;
  private ready = false;
  /** Whether a flag set came from the upstream: bootstrap data never replaces one. */
  private connected = false;
  private stopped = false;
  private etag: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Aborts the fetch in flight when the repository stops. */
  private aborter = new AbortController();
  /** Work in flight (fetch, backup read and write, bootstrap read): what {@link settled} waits for. */
  private readonly pending = new Set<Promise<unknown>>();
  /** Ends the storage watch, when the storage can be watched. */
  private unwatch: (() => void) | undefined;
  /** The fetch in flight, settled (never rejecting): a refresh fetches after it. */
  private inFlight: Promise<void> | undefined;
  private readonly bootstrapProvider: BootstrapProvider;
  private readonly url: URL;
  private readonly agent: http.Agent;
  private readonly headers: Record<string, string>;

  constructor(private readonly settings: RepositorySettings) {
    super();
    this.bootstrapProvider = hasBootstrap(settings.bootstrap)
      ? resolveBootstrapProvider(settings.bootstrap, settings.appName, settings.instanceId)
      : NO_BOOTSTRAP;
    this.url = featuresUrl(settings);
    this.agent = agentFor(this.url, settings.rejectUnauthorized);
    this.headers = {
      ...identityHeaders({ ...settings, connectionId: randomUUID(), interval: settings.refreshInterval }),
      // The feature-set format understood (segments served apart, dependencies, strategy variants).
      'unleash-client-spec': SUPPORTED_SPEC_VERSION,
    };
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.aborter = new AbortController();
    const storage = this.settings.storageProvider;
    // Another proxy sharing the storage saw a change: take it now, not at our next good poll.
    if (isWatchable(storage)) this.unwatch = storage.watch(this.settings.appName, () => void this.track(this.loadShared()));
    await Promise.all([this.track(this.poll()), this.track(this.loadBackup()), this.track(this.loadBootstrap())]);
  }

  /**
   * Resolves once nothing the repository started is still running (after {@link stop}: the fetch
   * is aborted; a backup write and a bootstrap read, bounded by their own timeouts, finish).
   */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.pending.add(work);
    const done = (): void => void this.pending.delete(work);
    work.then(done, done);
    return work;
  }

  stop(): void {
    this.stopped = true;
    this.unwatch?.();
    this.unwatch = undefined;
    this.aborter.abort();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    // Its idle keep-alive connections would otherwise stay open until the upstream drops them.
    this.agent.destroy();
  }

  getToggle(name: string): FeatureInterface | undefined {
    return this.features.get(name);
  }

  getToggles(): FeatureInterface[] {
    return [...this.features.values()];
  }

  getSegment(id: number): Segment | undefined {
    return this.segments.get(id);
  }

  getTogglesWithSegmentData(): EnhancedFeatureInterface[] {
    return withSegmentData(this.getToggles(), this.segments);
  }

  /**
   * Fetches now, after any fetch in flight (it may have been sent before the change the caller
   * wants to see), and polls on from there, also with polling off (`refreshInterval` 0). Resolves
   * once the answer is adopted or found unchanged; rejects with what went wrong (also emitted as
   * a `failure`, as for any poll).
   */
  async refresh(): Promise<void> {
    await this.inFlight;
    if (this.stopped) throw new FetchFailure('the flag repository is stopped');
    await this.fetchAndSchedule();
  }

  /** One fetch, then the next one a refresh interval later (or when the upstream asked). */
  private async poll(): Promise<void> {
    if (this.stopped || !(this.settings.refreshInterval > 0)) return;
    await this.fetchAndSchedule().catch(() => undefined); // emitted as a failure
  }

  private fetchAndSchedule(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const run = (async () => {
      let wait = this.settings.refreshInterval;
      try {
        await this.fetchOnce();
      } catch (error) {
        if (error instanceof FetchFailure && error.retryAfter !== undefined) wait = Math.max(wait, error.retryAfter);
        if (!this.stopped) this.emit(REPOSITORY_EVENTS.failure, error);
        throw error;
      } finally {
        if (!this.stopped && this.settings.refreshInterval > 0) {
          // Two fetches may overlap (a refresh beside a poll); only one timer may follow.
          if (this.timer) clearTimeout(this.timer);
          this.timer = setTimeout(() => void this.track(this.poll()), wait);
          this.timer.unref();
        }
      }
    })();
    this.inFlight = run.catch(() => undefined);
    void this.track(this.inFlight);
    return run;
  }

  /** Fetches the flag set once, adopting it if it changed; throws what went wrong. */
  private async fetchOnce(): Promise<void> {
    const headers = this.etag === undefined ? this.headers : { ...this.headers, 'if-none-match': this.etag };
    const res = await upstreamGet(this.url, headers, {
      agent: this.agent,
      timeoutMs: this.settings.timeout ?? DEFAULT_TIMEOUT_MS,
      rejectUnauthorized: this.settings.rejectUnauthorized,
      signal: this.aborter.signal,
    });
    if (this.stopped) return;
    if (res.status === 304) {
      this.emit(REPOSITORY_EVENTS.unchanged);
      return;
    }
    if (res.status < 200 || res.status > 299) {
      const hint =
        res.status === 401 || res.status === 403
          ? ': the API token is not accepted; polling goes on'
          : res.status === 404
            ? apiPathHint(this.settings.url)
            : '';
      const retryAfter = retryAfterMs(header(res.headers['retry-after']), Date.now());
      throw new FetchFailure(`${redactUrl(this.url)} responded ${res.status}${hint}`, res.status, retryAfter);
    }
    let data: unknown;
    try {
      data = JSON.parse(res.body);
    } catch (error) {
      throw new FetchFailure(`${redactUrl(this.url)} answered a body that is not JSON: ${(error as Error).message}`, res.status);
    }
    const flagSet = parseFlagSet(data);
    if (this.stopped) return;
    this.connected = true;
    // Kept once the set is current: a set that was not adopted (its preparation failed) is fetched whole again.
    const etag = header(res.headers.etag);
    await this.adopt(flagSet, {
      onApplied: () => {
        this.etag = etag;
      },
    });
  }

  private async loadBackup(): Promise<void> {
    try {
      const content = await this.settings.storageProvider.get(this.settings.appName);
      if (this.ready || this.stopped || !content) return;
      const flagSet = parseFlagSet(content);
      if (flagSet.features.length === 0) return;
      // As unleash-client does with its backup: ready, but no change announced, nothing written back.
      await this.adopt(flagSet, { wanted: () => !this.ready, announce: false });
    } catch (error) {
      if (!this.stopped) this.emit(REPOSITORY_EVENTS.warning, error);
    }
  }

  /**
   * Adopts the flag set another process stored, when it differs from ours, prepared as one from the
   * upstream is. Not written back: it is what the storage holds already.
   */
  private async loadShared(): Promise<void> {
    try {
      const content = await this.settings.storageProvider.get(this.settings.appName);
      if (this.stopped || !content) return;
      const flagSet = parseFlagSet(content);
      if (flagSet.features.length === 0) return;
      const same =
        JSON.stringify(flagSet.features) === JSON.stringify(this.getToggles()) &&
        JSON.stringify(flagSet.segments) === JSON.stringify([...this.segments.values()]);
      if (same) return;
      await this.adopt(flagSet, { backUp: false });
    } catch (error) {
      if (!this.stopped) this.emit(REPOSITORY_EVENTS.warning, error);
    }
  }

  private async loadBootstrap(): Promise<void> {
    try {
      const content = await this.bootstrapProvider.readBootstrap();
      if (this.stopped || !content) return;
      // Checked even when the upstream answered first: a broken bootstrap is worth a warning.
      const flagSet = parseFlagSet(content);
      if (this.connected || flagSet.features.length === 0) return;
      await this.adopt(flagSet, { wanted: () => !this.connected });
    } catch (error) {
      if (this.stopped) return;
      this.emit(REPOSITORY_EVENTS.warning, `Unleash SDK was unable to load bootstrap.\nMessage: ${(error as Error).message ?? 'Unknown error'}`);
    }
  }

  /**
   * Prepares a validated flag set (see {@link RepositorySettings.prepare}), makes it current,
   * announces it and backs it up (`announce: false`: neither, for a set read from the backup
   * itself; `backUp: false`: announced, not written back). Sets are made current in the order they
   * arrived: one whose preparation ends after a later one was adopted is dropped, as is one
   * `wanted` no longer wants.
   */
  private async adopt(
    flagSet: FlagSet,
    options: { wanted?: () => boolean; onApplied?: () => void; announce?: boolean; backUp?: boolean } = {},
  ): Promise<void> {
    const ticket = (this.adoptions += 1);
    // Made once, by whichever asks first (the preparation, in its first slice): what is prepared
    // from is what is made current.
    let views: FlagSetViews | undefined;
    const held = (): FlagSetViews => (views ??= flagSetViews(flagSet));
    let commit: (() => void) | undefined;
    try {
      commit = await this.settings.prepare?.(held);
    } catch (error) {
      // Stopped meanwhile (the engine abandons its build when it closes): nothing to adopt or report.
      if (this.stopped) return;
      throw error;
    }
    if (this.stopped || ticket < this.adopted || (options.wanted !== undefined && !options.wanted())) return;
    this.adopted = ticket;
    ({ features: this.features, segments: this.segments } = held());
    commit?.();
    options.onApplied?.();
    this.markReady();
    if (options.announce === false) return;
    const features = this.getToggles();
    this.emit(REPOSITORY_EVENTS.changed, features);
    if (options.backUp === false) return;
    const backup: ClientFeaturesResponse = { version: flagSet.version, features, segments: [...this.segments.values()] };
    try {
      await this.settings.storageProvider.set(this.settings.appName, backup);
    } catch (error) {
      // The flag set is in use all the same; only a restart without upstream would miss it.
      if (!this.stopped) this.emit(REPOSITORY_EVENTS.warning, `Could not back up the flag set: ${(error as Error)?.message ?? String(error)}`);
    }
  }

  private markReady(): void {
    if (this.ready) return;
    this.ready = true;
    process.nextTick(() => this.emit(REPOSITORY_EVENTS.ready));
  }
}
