import { describe, expect, it } from 'vitest';
import { createFlagProxy, isFlagProxyError, optionsFromEnv, resolveConfig, type FlagProxyOptions } from 'flag-proxy';

const base: FlagProxyOptions = { flagUrl: 'http://127.0.0.1:1/api/', flagApiToken: 'token', clientKeys: ['k'] };

function messageOf(options: FlagProxyOptions): string {
  try {
    resolveConfig(options);
  } catch (error) {
    expect(isFlagProxyError(error)).toBe(true);
    expect((error as { code: string }).code).toBe('INVALID_OPTION');
    return (error as Error).message;
  }
  throw new Error('expected resolveConfig to throw');
}

describe('resolveConfig', () => {
  it.each([
    ['flagUrl', 'You must specify the flagUrl (FLAG_URL) option'],
    ['flagApiToken', 'You must specify the flagApiToken (FLAG_API_TOKEN) option'],
    ['clientKeys', 'You must specify the clientKeys (FLAG_PROXY_CLIENT_KEYS) option'],
  ] as const)('throws naming %s and its env var when it is missing', (name, message) => {
    const { [name]: _omit, ...rest } = base;
    expect(messageOf(rest)).toBe(message);
  });

  it.each([
    ['clientKeys: []', { ...base, clientKeys: [] }],
    ['proxySecrets: []', { flagUrl: base.flagUrl, flagApiToken: base.flagApiToken, proxySecrets: [] }],
    ['FLAG_PROXY_CLIENT_KEYS=,,', { ...base, clientKeys: undefined, ...optionsFromEnv({ FLAG_PROXY_CLIENT_KEYS: ' , ,' }) }],
  ])('refuses an empty client-key list (%s) like a missing one: a proxy answering 401 to all must not start', (_, options) => {
    expect(messageOf(options as FlagProxyOptions)).toBe('Invalid option clientKeys (FLAG_PROXY_CLIENT_KEYS): must list at least one key; without one every caller is refused');
    expect(() => createFlagProxy(options as FlagProxyOptions)).toThrow('clientKeys (FLAG_PROXY_CLIENT_KEYS)');
  });

  it('accepts the deprecated proxySecrets alias for clientKeys', () => {
    const { clientKeys: _omit, ...rest } = base;
    expect(resolveConfig({ ...rest, proxySecrets: ['s'] }).clientKeys).toEqual(['s']);
  });

  it.each([
    [{ refreshInterval: -1 }, 'refreshInterval (FLAG_FETCH_INTERVAL)', 'non-negative integer'],
    [{ refreshInterval: Number.NaN }, 'refreshInterval (FLAG_FETCH_INTERVAL)', ''],
    [{ metricsInterval: 1.5 }, 'metricsInterval (FLAG_METRICS_INTERVAL)', 'integer'],
    [{ flagUrl: 'not a url' }, 'flagUrl (FLAG_URL)', 'URL'],
    [{ logLevel: 'loud' }, 'logLevel (LOG_LEVEL)', ''],
    [{ cors: { maxAge: -5 } }, 'cors.maxAge (CORS_MAX_AGE)', ''],
    [{ trustProxy: 'garbage' }, 'trustProxy (TRUST_PROXY)', 'hop count'],
    [{ clientKeysHeaderName: 'bad header' }, 'clientKeysHeaderName (CLIENT_KEY_HEADER_NAME)', 'header name'],
    [{ customStrategies: [{}] }, 'customStrategies.0 (FLAG_CUSTOM_STRATEGIES_FILE)', 'strategy'],
    [{ logger: { info() {} } }, 'logger', 'methods'],
    [{ surprise: true }, 'options', 'unknown option(s) surprise'],
    [{ clientKeys: [''] }, 'clientKeys (FLAG_PROXY_CLIENT_KEYS)', 'empty'],
    [{ frontendApi: 'yes' }, 'frontendApi (FLAG_PROXY_FRONTEND_API)', 'boolean'],
    [{ clientApi: 1 }, 'clientApi (FLAG_PROXY_CLIENT_API)', 'boolean'],
  ])('throws a message naming the option for %j', (extra, name, detail) => {
    const message = messageOf({ ...base, ...(extra as FlagProxyOptions) });
    expect(message).toContain(`Invalid option ${name}`);
    expect(message).toContain(detail);
  });

  it('honours 0 and false given in code (no || fall-through)', () => {
    const config = resolveConfig({ ...base, refreshInterval: 0, metricsInterval: 0, enableAllEndpoint: false, trustProxy: false, cors: { maxAge: 0, credentials: false } });
    expect(config.refreshInterval).toBe(0);
    expect(config.metricsInterval).toBe(0);
    expect(config.trustProxy).toBe(false);
    expect(config.cors.maxAge).toBe(0);
  });

  it('applies the documented defaults', () => {
    const config = resolveConfig(base);
    expect(config).toMatchObject({
      basePath: '',
      appName: 'flag-proxy',
      refreshInterval: 5000,
      metricsInterval: 30_000,
      metricsJitter: 0,
      clientKeysHeaderName: 'authorization',
      enableOAS: false,
      enableAllEndpoint: false,
      proxyApi: true,
      frontendApi: true,
      clientApi: true,
      backstageProbes: true,
      ofrepApi: true,
      maxBodyBytes: 102_400,
      trustProxy: false,
      cors: { origin: '*', methods: 'GET, POST', exposedHeaders: 'ETag', credentials: false, maxAge: 172_800, preflightContinue: false, optionsSuccessStatus: 204 },
    });
    expect(config.instanceId.length).toBeGreaterThan(3);
  });

  it.each([
    ['  base/path/ ', '/base/path'],
    ['/base/path', '/base/path'],
    ['base/path', '/base/path'],
    ['/', ''],
    ['   ', ''],
  ])('normalises proxyBasePath %j to %j', (input, expected) => {
    expect(resolveConfig({ ...base, proxyBasePath: input }).basePath).toBe(expected);
  });

  it('maps targetingKey to userId unless ofrep.targetingKey names another field, and refuses an empty name naming its env var', () => {
    expect(resolveConfig(base).ofrep).toEqual({ targetingKey: 'userId', refetchNoticesPerSecond: 2000 });
    expect(resolveConfig({ ...base, ofrep: { targetingKey: 'sessionId' } }).ofrep).toEqual({ targetingKey: 'sessionId', refetchNoticesPerSecond: 2000 });
    expect(messageOf({ ...base, ofrep: { targetingKey: '' } })).toBe(
      'Invalid option ofrep.targetingKey (FLAG_PROXY_OFREP_TARGETING_KEY): must be a non-empty field name',
    );
  });

  it('paces refetch notices at 2000 a second unless ofrep.refetchNoticesPerSecond says otherwise (0: all at once), and refuses a negative or fractional rate', () => {
    expect(resolveConfig({ ...base, ofrep: { refetchNoticesPerSecond: 0 } }).ofrep).toEqual({ targetingKey: 'userId', refetchNoticesPerSecond: 0 });
    expect(resolveConfig({ ...base, ofrep: { refetchNoticesPerSecond: 150 } }).ofrep.refetchNoticesPerSecond).toBe(150);
    for (const bad of [-1, 2.5]) {
      expect(messageOf({ ...base, ofrep: { refetchNoticesPerSecond: bad } })).toBe(
        'Invalid option ofrep.refetchNoticesPerSecond (FLAG_PROXY_OFREP_REFETCH_NOTICES_PER_SECOND): must be a non-negative integer',
      );
    }
  });

  it('does not mutate the options object', () => {
    const options = { ...base, cors: { origin: ['https://a.example'] } };
    const copy = structuredClone(options);
    resolveConfig(options);
    expect(options).toEqual(copy);
  });

  it('makes createFlagProxy throw synchronously on bad options', () => {
    expect(() => createFlagProxy({ ...base, refreshInterval: -1 })).toThrow(/FLAG_FETCH_INTERVAL/);
  });
});

describe('clientStreaming', () => {
  it('is on by default, read from FLAG_PROXY_CLIENT_STREAMING, and a non-boolean names the option and its variable', () => {
    expect(resolveConfig(base).clientStreaming).toBe(true);
    expect(resolveConfig({ ...base, ...optionsFromEnv({ FLAG_PROXY_CLIENT_STREAMING: 'off' }) }).clientStreaming).toBe(false);
    expect(messageOf({ ...base, clientStreaming: 'no' as never })).toMatch(/^Invalid option clientStreaming \(FLAG_PROXY_CLIENT_STREAMING\): /);
  });
});
