/**
 * The one module that reaches into unleash-client's internals (`unleash-client/lib/...`): paths
 * its package does not promise, which any minor release may move or change. What is used here is
 * checked, shape and behaviour, by test/unit/unleash-internals.test.ts, and package.json pins
 * unleash-client to the minor release those tests passed on.
 */
import { loadOnDemand } from '../load-on-demand.js';
import type { BootstrapOptions, BootstrapProvider } from 'unleash-client/lib/repository/bootstrap-provider.js';

export type { BootstrapOptions, BootstrapProvider } from 'unleash-client/lib/repository/bootstrap-provider.js';
export type { RepositoryInterface } from 'unleash-client/lib/repository/index.js';
export type { FeatureInterface, EnhancedFeatureInterface } from 'unleash-client/lib/feature.js';
export type { Segment } from 'unleash-client/lib/strategy/strategy.js';

/**
 * unleash-client's bootstrap provider for `options`: the caller's own `bootstrapProvider`, else
 * one that reads `data`, then `url`, then `filePath`, whichever is set first.
 */
export function resolveBootstrapProvider(options: BootstrapOptions, appName: string, instanceId: string): BootstrapProvider {
  // Loaded on demand: it brings unleash-client's HTTP stack (make-fetch-happen), for `url` alone.
  const bootstrap = loadOnDemand('unleash-client/lib/repository/bootstrap-provider.js') as typeof import('unleash-client/lib/repository/bootstrap-provider.js');
  return bootstrap.resolveBootstrapProvider(options, appName, instanceId);
}
