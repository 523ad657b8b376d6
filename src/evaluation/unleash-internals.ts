/**
 * The one module that reaches into unleash-client's internals (`unleash-client/lib/...`): paths
 * its package does not promise, which any minor release may move or change. What is used here is
 * checked, shape and behaviour, by test/unit/unleash-internals.test.ts, and package.json pins
 * unleash-client to the minor release those tests passed on.
 */
export {
  resolveBootstrapProvider,
  type BootstrapOptions,
  type BootstrapProvider,
} from 'unleash-client/lib/repository/bootstrap-provider.js';
export type { RepositoryInterface } from 'unleash-client/lib/repository/index.js';
export type { FeatureInterface, EnhancedFeatureInterface } from 'unleash-client/lib/feature.js';
export type { Segment } from 'unleash-client/lib/strategy/strategy.js';
