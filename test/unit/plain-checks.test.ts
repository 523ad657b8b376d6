/**
 * Options and flag sets taken without zod (`takePlainOptions`, `isPlainFlagSet`): whatever the
 * hand-written checks accept, the schema must accept too and give back the same fields and values,
 * so skipping it changes nothing; and what real configurations and flag sets look like must take
 * the hand-written path (else zod loads in every proxy).
 */
import { describe, expect, it } from 'vitest';
import { optionsFromEnv } from 'flag-proxy';
import { DECLINED, OPTION_NAMES, takePlainOptions } from '../../src/config/plain-options.js';
import { optionsSchema } from '../../src/config/resolve.js';
import { flagSetSchema, isPlainFlagSet } from '../../src/evaluation/repository.js';
import { createRandom, generateFlags } from '../../bench/flags.js';
import { canonical } from '../support/canonical.js';
import { loadClientSpecs } from '../support/client-spec.js';

const logger = { debug() {}, info() {}, warn() {}, error() {}, fatal() {} };
const storage = { get: async () => undefined, set: async () => undefined };
const strategy = { name: 'beta', isEnabled: () => true };
const fn = () => undefined;

/** Values of every kind an option may be given, valid or not for any one option. */
const SCALARS: unknown[] = [
  undefined, null, true, false, 0, -0, 1, -1, 1.5, 10, 200, 299, 300, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY,
  '', 'x', 'fatal', 'warn', 'loud', 'x-api-key', 'bad header', 'loopback, 10.0.0.0/8', '/base/',
  'http://127.0.0.1:4242/api/', 'https://flags.example.com/api', ' https://flags.example.com/api', 'HTTP://A.example/', 'ftp://a.example/',
  'http:a.example', 'http://exa\nmple.com/', 'file:///etc/bootstrap.json', 'not a url',
  fn, logger, storage, strategy, new Date(0), Symbol.for('s'),
];

function valueOf(next: () => number, depth: number): unknown {
  const pick = next();
  if (pick < 0.6 || depth > 2) return SCALARS[Math.floor(next() * SCALARS.length)];
  if (pick < 0.8) return Array.from({ length: Math.floor(next() * 3) }, () => valueOf(next, depth + 1));
  const keys = ['origin', 'methods', 'maxAge', 'credentials', 'optionsSuccessStatus', 'rejectUnauthorized', 'targetingKey', 'tokens', 'url', 'urlHeaders', 'filePath', 'data', 'name', 'value', 'enabled', 'other'];
  const out: Record<string, unknown> = {};
  for (let i = Math.floor(next() * 4); i > 0; i--) out[keys[Math.floor(next() * keys.length)] as string] = valueOf(next, depth + 1);
  return out;
}

function optionsOf(next: () => number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = Math.floor(next() * 5); i > 0; i--) {
    const name = next() < 0.97 ? (OPTION_NAMES[Math.floor(next() * OPTION_NAMES.length)] as string) : 'unknownOption';
    out[name] = valueOf(next, 0);
  }
  return out;
}

describe('options taken without the schema', () => {
  it('are exactly what the schema gives back, over a generated corpus', () => {
    const schema = optionsSchema();
    const next = createRandom(11);
    let taken = 0;
    let valid = 0;
    for (let i = 0; i < 20_000; i++) {
      const options = optionsOf(next);
      const fast = takePlainOptions(options);
      const checked = schema.safeParse(options);
      if (checked.success) valid++;
      if (fast === DECLINED) continue;
      taken++;
      expect(checked.success, `schema refuses what the check took: ${String(Object.keys(options))}`).toBe(true);
      expect(fast).toStrictEqual(checked.data);
    }
    // Both answers occur, and the check takes most of what the schema accepts.
    expect(taken).toBeGreaterThan(1000);
    expect(taken).toBeLessThan(19_000);
    expect(taken).toBeGreaterThan(valid * 0.6);
  });

  it('copies arrays and plain objects, as the schema does, and keeps functions and instances', () => {
    const options = { clientKeys: ['a'], cors: { origin: ['https://a.example'] }, logger, customStrategies: [strategy] };
    const taken = takePlainOptions(options) as typeof options;
    expect(taken.clientKeys).not.toBe(options.clientKeys);
    expect(taken.cors.origin).not.toBe(options.cors.origin);
    expect(taken.logger).toBe(logger);
    expect(taken.customStrategies[0]).toBe(strategy);
  });

  it('takes real configurations: the CLI environment and a library setup', () => {
    const env = optionsFromEnv({
      FLAG_URL: 'https://flags.example.com/api/',
      FLAG_API_TOKEN: 'default:production.0123456789abcdef',
      FLAG_PROXY_CLIENT_KEYS: 'key-1,key-2',
      FLAG_PROXY_TRUST_PROXY: 'loopback',
      FLAG_PROXY_BASE_PATH: '/flags',
      FLAG_PROXY_REFRESH_INTERVAL: '15000',
      FLAG_PROXY_ENABLE_OAS: 'true',
      FLAG_PROXY_CORS_ORIGIN: 'https://app.example.com',
      EXP_SERVER_SIDE_SDK_CONFIG_TOKENS: 'server-token',
    });
    expect(takePlainOptions(env)).not.toBe(DECLINED);
    const library = {
      flagUrl: 'http://127.0.0.1:4242/api/',
      flagApiToken: 'token',
      clientKeys: ['key'],
      logger,
      storageProvider: storage,
      customStrategies: [strategy],
      expCustomEnrichers: [fn],
      context: fn,
      tags: [{ name: 'team', value: 'web' }],
      expBootstrap: { url: 'https://cdn.example.com/flags.json', urlHeaders: { authorization: 'x' }, data: [{ name: 'a', enabled: true, strategies: [] }] },
    };
    expect(takePlainOptions(library)).toStrictEqual(optionsSchema().parse(library));
  });
});

/** A copy of `value` with one field somewhere inside replaced by a value of another kind (or removed). */
function mutate(value: unknown, next: () => number): unknown {
  const copy = structuredClone(value) as Record<string, unknown>;
  const replacements: unknown[] = [undefined, null, 'x', '', 3, 1.5, true, [], {}, [1], ['x'], [{}], { name: 'n' }];
  let node: unknown = copy;
  for (let depth = 0; depth < 6; depth++) {
    const keys = node !== null && typeof node === 'object' ? Object.keys(node) : [];
    if (keys.length === 0) break;
    const key = keys[Math.floor(next() * keys.length)] as string;
    const child = (node as Record<string, unknown>)[key];
    if (next() < 0.3 || child === null || typeof child !== 'object') {
      const replacement = replacements[Math.floor(next() * replacements.length)];
      if (replacement === undefined && !Array.isArray(node)) delete (node as Record<string, unknown>)[key];
      else (node as Record<string, unknown>)[key] = replacement;
      break;
    }
    node = child;
  }
  return copy;
}

describe('flag sets taken without the schema', () => {
  it('take every flag set of the client specification and of the benchmark', () => {
    for (const spec of loadClientSpecs()) expect(isPlainFlagSet({ version: 2, features: spec.features, segments: spec.segments }), spec.file).toBe(true);
    expect(isPlainFlagSet({ version: 2, ...generateFlags(200) })).toBe(true);
  });

  it('are exactly those the schema passes unchanged, over mutated flag sets', () => {
    const schema = flagSetSchema();
    const next = createRandom(5);
    const specs = loadClientSpecs();
    let declined = 0;
    for (let i = 0; i < 4000; i++) {
      const spec = specs[i % specs.length]!;
      const flagSet = mutate({ version: 2, features: spec.features, segments: spec.segments }, next);
      const checked = schema.safeParse(flagSet);
      if (!isPlainFlagSet(flagSet)) {
        declined++;
        continue;
      }
      expect(checked.success, JSON.stringify(flagSet).slice(0, 300)).toBe(true);
      expect(canonical(checked.data)).toBe(canonical(flagSet));
    }
    expect(declined).toBeGreaterThan(400);
    expect(declined).toBeLessThan(3600);
  });
});
