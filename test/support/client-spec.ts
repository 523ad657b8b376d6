/**
 * The public client specification (@unleash/client-specification), loaded once for every test
 * that drives it, each file as a full state: the delta-API files (19, 20) describe their state as
 * events, which are applied in order here (the proxy fetches the full client API). Also the
 * server-side SDK those tests point at the proxy or the flag server.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { InMemStorageProvider, Unleash } from 'unleash-client';
import type { FeatureDefinition } from 'flag-proxy';
import type { TestSegment } from 'flag-proxy/testing';

/** One test or variant test of the specification. */
export interface SpecCase {
  description: string;
  context: Record<string, any>;
  toggleName: string;
  expectedResult: unknown;
}

/** One specification file, as a full state and its cases. */
export interface ClientSpec {
  file: string;
  name: string;
  /** Whether the file gave its state as delta events. */
  delta: boolean;
  features: FeatureDefinition[];
  segments: TestSegment[];
  tests: SpecCase[];
  variantTests: SpecCase[];
}

const specDir = path.join(path.dirname(createRequire(import.meta.url).resolve('@unleash/client-specification/package.json')), 'specifications');

/** Applies delta events (hydration, feature/segment updates and removals) to an empty state. */
function stateFromDelta(file: string, events: Array<Record<string, any>>): { features: FeatureDefinition[]; segments: TestSegment[] } {
  const features = new Map<string, FeatureDefinition>();
  const segments = new Map<number, TestSegment>();
  const apply: Record<string, (event: Record<string, any>) => void> = {
    hydration(event) {
      features.clear();
      segments.clear();
      for (const f of event.features ?? []) features.set(f.name, f);
      for (const s of event.segments ?? []) segments.set(s.id, s);
    },
    'feature-updated': (event) => features.set(event.feature.name, event.feature),
    'feature-removed': (event) => features.delete(event.featureName),
    'segment-updated': (event) => segments.set(event.segment.id, event.segment),
    'segment-removed': (event) => segments.delete(event.segmentId),
  };
  for (const event of events) {
    const step = Object.hasOwn(apply, event.type) ? apply[event.type] : undefined;
    if (step === undefined) throw new Error(`${file}: unknown delta event ${event.type}`);
    step(event);
  }
  return { features: [...features.values()], segments: [...segments.values()] };
}

/** The contexts of a file's tests and variant tests, in that order. */
export function specContexts(spec: ClientSpec): Array<Record<string, any>> {
  return [...spec.tests, ...spec.variantTests].map((t) => t.context);
}

/** Every file of the specification, in its index order. */
export function loadClientSpecs(): ClientSpec[] {
  const index: string[] = JSON.parse(readFileSync(path.join(specDir, 'index.json'), 'utf8'));
  return index.map((file) => {
    const spec = JSON.parse(readFileSync(path.join(specDir, file), 'utf8'));
    const delta = Array.isArray(spec.state.events);
    const state = delta ? stateFromDelta(file, spec.state.events) : { features: spec.state.features ?? [], segments: spec.state.segments ?? [] };
    return { file, name: spec.name, delta, ...state, tests: spec.tests ?? [], variantTests: spec.variantTests ?? [] };
  });
}

/** A server-side SDK instance of its own (no singleton, no backup file; usage reports only when asked). */
export function serverSdk(url: string, token: string, appName: string, metricsInterval?: number): Unleash {
  return new Unleash({
    url,
    appName,
    instanceId: `${appName}-1`,
    customHeaders: { Authorization: token },
    refreshInterval: 60_000,
    ...(metricsInterval === undefined ? { disableMetrics: true } : { metricsInterval }),
    storageProvider: new InMemStorageProvider(),
    skipInstanceCountWarning: true,
  });
}

/** Resolves once the SDK has its first flag set; rejects on its first error. */
export function synchronized(sdk: Unleash): Promise<void> {
  return new Promise((resolve, reject) => {
    if (sdk.isSynchronized()) return resolve();
    sdk.once('synchronized', () => resolve());
    sdk.once('error', reject);
  });
}
