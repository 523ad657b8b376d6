import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { optionsFromEnv, portFromEnv } from 'flag-proxy';

describe('optionsFromEnv', () => {
  it('reads every variable of the options table', () => {
    const options = optionsFromEnv({
      FLAG_URL: 'https://flags.example/api/',
      FLAG_API_TOKEN: 'tok',
      FLAG_PROXY_CLIENT_KEYS: 'a, b,c ,',
      FLAG_PROXY_SECRETS: 'old',
      PROXY_BASE_PATH: '/base',
      FLAG_APP_NAME: 'app',
      FLAG_INSTANCE_ID: 'inst',
      FLAG_FETCH_INTERVAL: '1000',
      FLAG_METRICS_INTERVAL: '2000',
      FLAG_METRICS_JITTER: '30',
      FLAG_ENVIRONMENT: 'prod',
      FLAG_PROJECT_NAME: 'proj',
      JSON_LOGGER: 'TRUE',
      LOG_LEVEL: 'DEBUG',
      TRUST_PROXY: 'loopback, 10.0.0.0/8',
      FLAG_NAME_PREFIX: 'web.',
      FLAG_TAGS: 'simple:proxy, demo:test',
      CLIENT_KEY_HEADER_NAME: 'x-key',
      ENABLE_OAS: 'yes',
      ENABLE_ALL_ENDPOINT: '1',
      FLAG_PROXY_PROXY_API: 'true',
      FLAG_PROXY_FRONTEND_API: 'false',
      FLAG_PROXY_CLIENT_API: '0',
      FLAG_PROXY_BACKSTAGE_PROBES: 'no',
      FLAG_PROXY_OFREP_API: 'off',
      CORS_ORIGIN: 'https://a.example, https://b.example',
      CORS_METHODS: 'GET',
      CORS_ALLOWED_HEADERS: 'authorization',
      CORS_EXPOSED_HEADERS: 'ETag, X-Other',
      CORS_CREDENTIALS: 'true',
      CORS_MAX_AGE: '60',
      CORS_OPTIONS_SUCCESS_STATUS: '200',
      CORS_PREFLIGHT_CONTINUE: 'f',
      HTTP_OPTIONS_REJECT_UNAUTHORIZED: 'false',
      FLAG_PROXY_MAX_BODY_BYTES: '2048',
      EXP_BOOTSTRAP_URL: 'https://bootstrap.example/features.json',
      EXP_BOOTSTRAP_AUTHORIZATION: 'boot-secret',
      EXP_SERVER_SIDE_SDK_CONFIG_TOKENS: 'super1, super2',
      FLAG_PROXY_OFREP_TARGETING_KEY: 'sessionId',
      FLAG_PROXY_OFREP_REFETCH_NOTICES_PER_SECOND: '500',
    });
    expect(options).toEqual({
      flagUrl: 'https://flags.example/api/',
      flagApiToken: 'tok',
      clientKeys: ['a', 'b', 'c'],
      proxySecrets: ['old'],
      proxyBasePath: '/base',
      flagAppName: 'app',
      flagInstanceId: 'inst',
      refreshInterval: 1000,
      metricsInterval: 2000,
      metricsJitter: 30,
      environment: 'prod',
      projectName: 'proj',
      useJsonLogger: true,
      logLevel: 'debug',
      trustProxy: ['loopback', '10.0.0.0/8'],
      namePrefix: 'web.',
      tags: [
        { name: 'simple', value: 'proxy' },
        { name: 'demo', value: 'test' },
      ],
      clientKeysHeaderName: 'x-key',
      enableOAS: true,
      enableAllEndpoint: true,
      proxyApi: true,
      frontendApi: false,
      clientApi: false,
      backstageProbes: false,
      ofrepApi: false,
      cors: {
        origin: ['https://a.example', 'https://b.example'],
        methods: 'GET',
        allowedHeaders: 'authorization',
        exposedHeaders: 'ETag, X-Other',
        credentials: true,
        maxAge: 60,
        optionsSuccessStatus: 200,
        preflightContinue: false,
      },
      httpOptions: { rejectUnauthorized: false },
      maxBodyBytes: 2048,
      expBootstrap: { url: 'https://bootstrap.example/features.json', urlHeaders: { Authorization: 'boot-secret' } },
      expServerSideSdkConfig: { tokens: ['super1', 'super2'] },
      ofrep: { targetingKey: 'sessionId', refetchNoticesPerSecond: 500 },
    });
  });

  it('leaves unset and blank variables out', () => {
    expect(optionsFromEnv({ FLAG_URL: '  ', LOG_LEVEL: '' })).toEqual({});
  });

  it.each(['true', 'TRUE', 'True', '1', 'yes', 'YES', 't', 'on'])('reads %s as true', (value) => {
    expect(optionsFromEnv({ ENABLE_ALL_ENDPOINT: value }).enableAllEndpoint).toBe(true);
  });

  it.each(['false', 'FALSE', '0', 'no', 'f', 'off'])('reads %s as false', (value) => {
    expect(optionsFromEnv({ ENABLE_ALL_ENDPOINT: value }).enableAllEndpoint).toBe(false);
  });

  it.each([
    ['FLAG_FETCH_INTERVAL', 'abc', 'refreshInterval (FLAG_FETCH_INTERVAL)'],
    ['FLAG_FETCH_INTERVAL', '-5', 'refreshInterval (FLAG_FETCH_INTERVAL)'],
    ['FLAG_METRICS_INTERVAL', '10s', 'metricsInterval (FLAG_METRICS_INTERVAL)'],
    ['CORS_MAX_AGE', '1.5', 'cors.maxAge (CORS_MAX_AGE)'],
    ['ENABLE_OAS', 'maybe', 'enableOAS (ENABLE_OAS)'],
    ['LOG_LEVEL', 'verbose', 'logLevel (LOG_LEVEL)'],
    ['FLAG_TAGS', 'novalue', 'tags (FLAG_TAGS)'],
  ])('throws naming the variable for %s=%s', (name, value, described) => {
    expect(() => optionsFromEnv({ [name]: value })).toThrow(`Invalid option ${described}`);
  });

  it.each([
    ['true', true],
    ['FALSE', false],
    ['1', 1],
    ['2', 2],
    ['0', 0],
    ['10.0.0.1', ['10.0.0.1']],
    ['loopback,10.0.0.0/8', ['loopback', '10.0.0.0/8']],
  ])('reads TRUST_PROXY=%s as %j (a number is a hop count)', (value, expected) => {
    expect(optionsFromEnv({ TRUST_PROXY: value }).trustProxy).toEqual(expected);
  });

  it('loads custom strategies and enrichers from files (CJS and ESM), and fails clearly on a bad file', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'flag-proxy-env-'));
    writeFileSync(path.join(dir, 'strategies.cjs'), "module.exports = [{ name: 'FromFile', isEnabled: () => true }];");
    writeFileSync(path.join(dir, 'enrichers.mjs'), 'export default [(ctx) => ctx];');
    writeFileSync(path.join(dir, 'wrong.cjs'), 'module.exports = { not: "a list" };');
    const options = optionsFromEnv(
      { FLAG_CUSTOM_STRATEGIES_FILE: 'strategies.cjs', EXP_CUSTOM_ENRICHERS_FILE: path.join(dir, 'enrichers.mjs') },
      { cwd: dir },
    );
    expect(options.customStrategies?.map((s) => s.name)).toEqual(['FromFile']);
    expect(options.expCustomEnrichers).toHaveLength(1);
    expect(() => optionsFromEnv({ FLAG_CUSTOM_STRATEGIES_FILE: 'missing.js' }, { cwd: dir })).toThrow(
      /customStrategies \(FLAG_CUSTOM_STRATEGIES_FILE\): cannot load .*missing\.js: file not found/,
    );
    expect(() => optionsFromEnv({ FLAG_CUSTOM_STRATEGIES_FILE: 'wrong.cjs' }, { cwd: dir })).toThrow(/must export a list of strategy instances/);
  });
});

describe('portFromEnv', () => {
  it('reads PORT, then PROXY_PORT, defaulting to 3000', () => {
    expect(portFromEnv({})).toBe(3000);
    expect(portFromEnv({ PROXY_PORT: '4000' })).toBe(4000);
    expect(portFromEnv({ PORT: '5000', PROXY_PORT: '4000' })).toBe(5000);
    expect(() => portFromEnv({ PORT: 'http' })).toThrow(/PORT or PROXY_PORT/);
  });
});
