/**
 * flag-proxy: an embeddable feature-flag evaluation proxy, wire-compatible with @unleash/proxy.
 */
export { createFlagProxy, type FlagProxy } from './core/create-flag-proxy.js';
export type { FlagProxyHandler, NextFunction } from './core/handler.js';
export type { EvaluationContext } from './core/context.js';
export type {
  FlagProxyOptions,
  FlagProxyCorsOptions,
  FlagProxyBootstrapOptions,
  ContextEnricher,
} from './config/options.js';
export { resolveConfig, type FlagProxyConfig } from './config/resolve.js';
export { optionsFromEnv, portFromEnv, type OptionsFromEnvSettings } from './config/env.js';
export { ENV_NAMES } from './config/names.js';
export { FlagProxyError, isFlagProxyError, type FlagProxyErrorCode, type FlagProxyErrorOptions } from './errors.js';
export { createDefaultLogger, LOG_LEVELS, type Logger, type LogLevel, type DefaultLoggerOptions } from './logger.js';
export { Strategy, InMemStorageProvider, type FeatureDefinition, type FeaturesResponse, type StorageProvider } from './evaluation/types.js';
export { VERSION } from './version.js';
