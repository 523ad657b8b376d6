/** Each option's environment variable, for error messages and `optionsFromEnv`. */
export const ENV_NAMES = {
  flagUrl: 'FLAG_URL',
  flagApiToken: 'FLAG_API_TOKEN',
  clientKeys: 'FLAG_PROXY_CLIENT_KEYS',
  proxySecrets: 'FLAG_PROXY_SECRETS',
  proxyBasePath: 'PROXY_BASE_PATH',
  flagAppName: 'FLAG_APP_NAME',
  flagInstanceId: 'FLAG_INSTANCE_ID',
  refreshInterval: 'FLAG_FETCH_INTERVAL',
  metricsInterval: 'FLAG_METRICS_INTERVAL',
  metricsJitter: 'FLAG_METRICS_JITTER',
  environment: 'FLAG_ENVIRONMENT',
  projectName: 'FLAG_PROJECT_NAME',
  useJsonLogger: 'JSON_LOGGER',
  logLevel: 'LOG_LEVEL',
  customStrategies: 'FLAG_CUSTOM_STRATEGIES_FILE',
  trustProxy: 'TRUST_PROXY',
  namePrefix: 'FLAG_NAME_PREFIX',
  tags: 'FLAG_TAGS',
  clientKeysHeaderName: 'CLIENT_KEY_HEADER_NAME',
  backup: 'FLAG_PROXY_BACKUP',
  enableOAS: 'ENABLE_OAS',
  enableAllEndpoint: 'ENABLE_ALL_ENDPOINT',
  proxyApi: 'FLAG_PROXY_PROXY_API',
  frontendApi: 'FLAG_PROXY_FRONTEND_API',
  clientApi: 'FLAG_PROXY_CLIENT_API',
  backstageProbes: 'FLAG_PROXY_BACKSTAGE_PROBES',
  ofrepApi: 'FLAG_PROXY_OFREP_API',
  'cors.allowedHeaders': 'CORS_ALLOWED_HEADERS',
  'cors.credentials': 'CORS_CREDENTIALS',
  'cors.exposedHeaders': 'CORS_EXPOSED_HEADERS',
  'cors.maxAge': 'CORS_MAX_AGE',
  'cors.methods': 'CORS_METHODS',
  'cors.optionsSuccessStatus': 'CORS_OPTIONS_SUCCESS_STATUS',
  'cors.origin': 'CORS_ORIGIN',
  'cors.preflightContinue': 'CORS_PREFLIGHT_CONTINUE',
  'httpOptions.rejectUnauthorized': 'HTTP_OPTIONS_REJECT_UNAUTHORIZED',
  maxBodyBytes: 'FLAG_PROXY_MAX_BODY_BYTES',
  answerCacheBytes: 'FLAG_PROXY_ANSWER_CACHE_BYTES',
  maxEventStreams: 'FLAG_PROXY_MAX_EVENT_STREAMS',
  eventStreamHeartbeatInterval: 'FLAG_PROXY_EVENT_STREAM_HEARTBEAT_INTERVAL',
  'ofrep.targetingKey': 'FLAG_PROXY_OFREP_TARGETING_KEY',
  'ofrep.refetchNoticesPerSecond': 'FLAG_PROXY_OFREP_REFETCH_NOTICES_PER_SECOND',
  clientStreaming: 'FLAG_PROXY_CLIENT_STREAMING',
  'expBootstrap.url': 'EXP_BOOTSTRAP_URL',
  'expBootstrap.urlHeaders.Authorization': 'EXP_BOOTSTRAP_AUTHORIZATION',
  'expServerSideSdkConfig.tokens': 'EXP_SERVER_SIDE_SDK_CONFIG_TOKENS',
  expCustomEnrichers: 'EXP_CUSTOM_ENRICHERS_FILE',
} as const;

/** `option (ENV_VAR)` for an option path, or just the path when it has no variable. */
export function describeOption(path: string): string {
  for (let p = path; p.length > 0; p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') {
    const env = (ENV_NAMES as Record<string, string>)[p];
    if (env) return `${path} (${env})`;
  }
  return path;
}
