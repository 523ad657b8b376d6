/**
 * flag-proxy: an embeddable feature-flag evaluation proxy, wire-compatible with @unleash/proxy.
 */
export { createFlagProxy, type FlagProxy } from './create-flag-proxy.js';
export type { FlagProxyHandler, NextFunction } from './core/handler.js';
export type { WaitUntilReadyOptions } from './core/lifecycle.js';
export type { EvaluationContext, HostContextFields, HostContextValue } from './core/context.js';
export type { BootstrapContext, FlagBootstrap, SsrApi } from './ssr.js';
export type { BoundFlags, ContextInput, FlagVariant, InProcessApi, InProcessContext } from './in-process.js';
export type { ToggleResult, ToggleSelection } from './core/service.js';
export { bootstrapScript, serializeForScript, DEFAULT_BOOTSTRAP_GLOBAL, type BootstrapScriptOptions } from './ssr-script.js';
export type {
  FlagProxyOptions,
  FlagProxyCorsOptions,
  FlagProxyBootstrapOptions,
  FlagProxyOfrepOptions,
  ContextEnricher,
  CustomStrategy,
} from './config/options.js';
export { resolveConfig, type FlagProxyConfig } from './config/resolve.js';
export { optionsFromEnv, portFromEnv, type OptionsFromEnvSettings } from './config/env.js';
export { ENV_NAMES } from './config/names.js';
export { FlagProxyError, isFlagProxyError, type FlagProxyErrorCode, type FlagProxyErrorOptions } from './errors.js';
export { createDefaultLogger, LOG_LEVELS, redactUrl, redactUrlCredentials, type Logger, type LogLevel, type DefaultLoggerOptions } from './logger.js';
export { Strategy, InMemStorageProvider, type FeatureDefinition, type FeaturesResponse, type StorageProvider, type WatchableStorage } from './evaluation/types.js';
export { VERSION } from './version.js';
export { unmapIpv4 } from './client-address.js';
export { createFileStorageProvider } from './evaluation/file-storage.js';
export {
  createMultiEnvironmentProxy,
  type MultiEnvironmentProxy,
  type MultiEnvironmentProxyOptions,
  type FlagProxyEnvironmentOptions,
  type SharedOnlyOption,
} from './multi-env/create-multi-environment-proxy.js';
export {
  multiEnvironmentOptionsFromEnv,
  ENVIRONMENT_VARIABLE_PREFIX,
  ENVIRONMENT_VARIABLE_SUFFIXES,
} from './multi-env/env.js';
