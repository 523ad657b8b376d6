import type { IncomingMessage } from 'node:http';
import type { Registry } from 'prom-client';
import type { Logger, LogLevel } from '../logger.js';
import type { Strategy, StorageProvider, FeaturesResponse, FeatureDefinition, EvaluationContext, HostContextFields } from '../evaluation/types.js';

/** CORS settings, merged over the defaults (unlike the predecessor, which replaced them). */
export interface FlagProxyCorsOptions {
  /** Allowed origin(s); `*` for any. A list echoes the matching origin. @default '*' */
  origin?: string | string[] | boolean;
  /** Allowed methods. @default 'GET, POST' */
  methods?: string | string[];
  /** Allowed request headers; unset reflects what the preflight asks for. @default undefined */
  allowedHeaders?: string | string[];
  /** Headers the browser may read. @default 'ETag' */
  exposedHeaders?: string | string[];
  /** Send `Access-Control-Allow-Credentials: true`. @default false */
  credentials?: boolean;
  /** Seconds a preflight may be cached. @default 172800 */
  maxAge?: number;
  /** Pass preflight requests on to the next handler. @default false */
  preflightContinue?: boolean;
  /** Status of a passing preflight. @default 204 */
  optionsSuccessStatus?: number;
}

/** Settings of the OpenFeature (OFREP) routes. */
export interface FlagProxyOfrepOptions {
  /**
   * The context field an OpenFeature `targetingKey` becomes: `userId`, `sessionId`, or any other
   * name (then a property). Env `FLAG_PROXY_OFREP_TARGETING_KEY`. @default 'userId'
   */
  targetingKey?: string;
  /**
   * Most `refetchEvaluation` notices the event streams send per second, when a change (or a date
   * constraint's instant) makes every open browser fetch its flags again: beyond it the notices go
   * out as a steady flow, not as one burst of refetches from every browser at once (10,000 open
   * streams are told over about 5 s at the default). 0 tells every stream at once.
   * Env `FLAG_PROXY_OFREP_REFETCH_NOTICES_PER_SECOND`. @default 2000
   */
  refetchNoticesPerSecond?: number;
}

/** Bootstrap source used before (or instead of) the first upstream fetch. Experimental. */
export interface FlagProxyBootstrapOptions {
  /** URL serving a client-features document. */
  url?: string;
  /** Headers sent with the bootstrap request (e.g. `{ Authorization: '...' }`). */
  urlHeaders?: Record<string, string>;
  /** Path of a JSON file holding a client-features document. */
  filePath?: string;
  /** Inline feature definitions. */
  data?: FeatureDefinition[];
}

/**
 * A custom activation strategy: an instance of `Strategy` (exported by flag-proxy), or any object
 * with a `name` and an `isEnabled(parameters, context)` method (wrapped so that constraints,
 * segments and strategy variants still apply).
 */
export type CustomStrategy = Strategy | Pick<Strategy, 'name' | 'isEnabled'>;

/** A custom context enricher: gets the context, returns it (possibly changed). Experimental. */
export type ContextEnricher = (context: EvaluationContext) => EvaluationContext | Promise<EvaluationContext>;

/**
 * Options of {@link createFlagProxy}. Each field names its environment variable (see
 * `optionsFromEnv`). `undefined` means "not passed"; `0` and `false` are honoured as given.
 */
export interface FlagProxyOptions {
  /** API URL of the upstream flag server, e.g. `https://flags.example.com/api/`. Env `FLAG_URL`. Required. */
  flagUrl?: string;
  /** Client API token for the upstream server. Env `FLAG_API_TOKEN`. Required. */
  flagApiToken?: string;
  /** Client keys the proxy accepts. Env `FLAG_PROXY_CLIENT_KEYS` (comma-separated). Required. */
  clientKeys?: string[];
  /** @deprecated alias of `clientKeys`. Env `FLAG_PROXY_SECRETS`. */
  proxySecrets?: string[];
  /** Prefix of every route; `/proxy` is appended. Env `PROXY_BASE_PATH`. @default '' */
  proxyBasePath?: string;
  /** Application name used upstream and as the default context `appName`. Env `FLAG_APP_NAME`. @default 'flag-proxy' */
  flagAppName?: string;
  /** Instance id used upstream. Env `FLAG_INSTANCE_ID`. @default generated */
  flagInstanceId?: string;
  /**
   * Milliseconds between fetches from upstream; 0 never fetches by itself (as unleash-client): the
   * flag set then comes from `bootstrap`, the backup or `proxy.refresh()`. Env `FLAG_FETCH_INTERVAL`.
   * @default 5000
   */
  refreshInterval?: number;
  /** Milliseconds between usage reports upstream; 0 disables them. Env `FLAG_METRICS_INTERVAL`. @default 30000 */
  metricsInterval?: number;
  /** Milliseconds of random jitter added to the metrics interval. Env `FLAG_METRICS_JITTER`. @default 0 */
  metricsJitter?: number;
  /** Fixed context `environment`; callers cannot override it. Env `FLAG_ENVIRONMENT`. @default undefined */
  environment?: string;
  /** Only toggles of this project are fetched. Env `FLAG_PROJECT_NAME`. @default undefined */
  projectName?: string;
  /** Custom logger; receives every message, with secrets redacted. @default the built-in logger */
  logger?: Logger;
  /** The built-in logger writes one-line JSON. Env `JSON_LOGGER`. @default false */
  useJsonLogger?: boolean;
  /** Lowest level the built-in logger writes. Env `LOG_LEVEL`. @default 'warn' */
  logLevel?: LogLevel;
  /** Custom activation strategies (instances). Env `FLAG_CUSTOM_STRATEGIES_FILE` (file paths). @default [] */
  customStrategies?: CustomStrategy[];
  /**
   * Trust `X-Forwarded-*`: `true` (all hops), a hop count, or IP/CIDR names (a string, comma
   * list, or array). Env `TRUST_PROXY`. @default false
   */
  trustProxy?: boolean | number | string | string[];
  /** Only toggles whose name starts with this are fetched. Env `FLAG_NAME_PREFIX`. @default undefined */
  namePrefix?: string;
  /** Only toggles with these tags are fetched. Env `FLAG_TAGS` (`name:value,name2:value2`). @default undefined */
  tags?: Array<{ name: string; value: string }>;
  /** Header carrying the client key (case-insensitive). Env `CLIENT_KEY_HEADER_NAME`. @default 'authorization' */
  clientKeysHeaderName?: string;
  /**
   * Where the last fetched flag set is backed up (and read back at start when the upstream is
   * down). @default a file readable by its owner only (0600) in `<os temp dir>/flag-proxy-<uid>/` (0700)
   */
  storageProvider?: StorageProvider<FeaturesResponse>;
  /**
   * `false`: no backup is read or written (not with `storageProvider`). Env `FLAG_PROXY_BACKUP`.
   * @default true
   */
  backup?: boolean;
  /** Serve the OpenAPI document and page. Env `ENABLE_OAS`. @default false */
  enableOAS?: boolean;
  /** Serve `/proxy/all`, `/api/frontend/all` and `/api/proxy/all`. Env `ENABLE_ALL_ENDPOINT`. @default false */
  enableAllEndpoint?: boolean;
  /**
   * Serve the `@unleash/proxy` routes, everything below `/proxy` (including `/proxy/health` and
   * `/proxy/internal-backstage/prometheus`). Env `FLAG_PROXY_PROXY_API`. @default true
   */
  proxyApi?: boolean;
  /**
   * Serve the Unleash frontend API as Unleash Edge does: `/api/frontend…` and its alias
   * `/api/proxy…`, with client keys. Env `FLAG_PROXY_FRONTEND_API`. @default true
   */
  frontendApi?: boolean;
  /**
   * Serve the client API for server SDKs and other proxies: `/api/client/features`,
   * `/api/client/metrics`, `/api/client/register`, with server-side tokens (401 while none are
   * configured). Env `FLAG_PROXY_CLIENT_API`. @default true
   */
  clientApi?: boolean;
  /**
   * Serve Unleash Edge's probe paths `/internal-backstage/health` and `/internal-backstage/ready`.
   * Env `FLAG_PROXY_BACKSTAGE_PROBES`. @default true
   */
  backstageProbes?: boolean;
  /** CORS settings, merged over the defaults. Env `CORS_*`. */
  cors?: FlagProxyCorsOptions;
  /** Upstream TLS options. Env `HTTP_OPTIONS_REJECT_UNAUTHORIZED`. */
  httpOptions?: { rejectUnauthorized?: boolean };
  /** Largest accepted request body in bytes; larger bodies get 413. Env `FLAG_PROXY_MAX_BODY_BYTES`. @default 102400 */
  maxBodyBytes?: number;
  /**
   * Budget in bytes of the answer cache, shared by the serialized answers of repeated contexts and
   * their ETags (both dropped on every flag-set change) and the parsed contexts of repeated GET
   * queries (which let a repeated request skip parsing); 0 turns all three off. A poll that sends
   * back the ETag of an answer that holds until the flags change is answered 304 from its tag,
   * without the cache, for any number of clients; the cache serves repeated requests without such
   * an ETag (and answers that hold only until a date). Its admission counters take 768 KiB
   * more once it is first written to. Env `FLAG_PROXY_ANSWER_CACHE_BYTES`. @default 8388608 (8 MiB)
   */
  answerCacheBytes?: number;
  /**
   * Most server-sent event streams (pushed flag updates, on every surface that offers them) open
   * at once on this proxy; one more is answered 503. Env `FLAG_PROXY_MAX_EVENT_STREAMS`.
   * @default 10000
   */
  maxEventStreams?: number;
  /**
   * Milliseconds between heartbeat comments on idle event streams, so proxies and SDK read
   * timeouts (60 s in `unleash-client`) never see a silent connection.
   * Env `FLAG_PROXY_EVENT_STREAM_HEARTBEAT_INTERVAL`. @default 15000
   */
  eventStreamHeartbeatInterval?: number;
  /**
   * Serve OpenFeature's remote evaluation protocol (OFREP), everything below `/ofrep`; see
   * docs/openfeature.md. Env `FLAG_PROXY_OFREP_API`. @default true
   */
  ofrepApi?: boolean;
  /** The OpenFeature (OFREP) routes below `/ofrep/v1`; see docs/openfeature.md. */
  ofrep?: FlagProxyOfrepOptions;
  /**
   * Serve `/api/client/streaming` (pushed flag updates for `unleash-client` in streaming mode) and
   * `/api/client/delta` (its delta polling) to server-side SDKs holding one of
   * `expServerSideSdkConfig.tokens`; without such tokens both answer 401. `false` leaves both paths
   * to the host (404 standalone). Env `FLAG_PROXY_CLIENT_STREAMING`. @default true
   */
  clientStreaming?: boolean;
  /** Prometheus registry to register this proxy's metrics in. @default a new registry per proxy */
  metricsRegistry?: Registry;
  /** Bootstrap source. Experimental. Env `EXP_BOOTSTRAP_URL`, `EXP_BOOTSTRAP_AUTHORIZATION`. */
  expBootstrap?: FlagProxyBootstrapOptions;
  /** Tokens server-side SDKs may use to read raw definitions. Experimental. Env `EXP_SERVER_SIDE_SDK_CONFIG_TOKENS`. */
  expServerSideSdkConfig?: { tokens?: string[] };
  /** Context enrichers run in order. Experimental. Env `EXP_CUSTOM_ENRICHERS_FILE` (file paths). @default [] */
  expCustomEnrichers?: ContextEnricher[];
  /**
   * Reads the caller's address from a request, e.g. the value your framework took from a trusted
   * forwarding hop. When it gives an address other than the socket's, that address is the
   * context's `remoteAddress`, over what the caller sent; otherwise the proxy's own rule stands
   * (`trustProxy`). The Express, Koa and Fastify adapters set it from `req.ip` / `ctx.ip` /
   * `request.ip` while `trustProxy` is unset. Unlike `context`, it keeps polls answerable from
   * the request alone. No env var. @default none
   */
  clientAddress?: (req: IncomingMessage) => string | undefined;
  /**
   * Host-side hook that binds context fields from the host's own session. Every key it returns
   * replaces the caller's value for that key, even when its value is `undefined` or `null`.
   * @default undefined
   */
  context?: (req: IncomingMessage) => HostContextFields | undefined | Promise<HostContextFields | undefined>;
}
