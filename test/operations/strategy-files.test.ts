/**
 * Custom strategy and enricher files through the CLI (FLAG_CUSTOM_STRATEGIES_FILE,
 * EXP_CUSTOM_ENRICHERS_FILE), in a real process that resolves modules the way node does:
 * tsx runs without the repository's tsconfig `paths`, so `flag-proxy` resolves only from a
 * node_modules, as after `npm install flag-proxy`.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createFlagProxy } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer, silentLogger as silent } from 'flag-proxy/testing';
import { feature, postJson } from '../support/harness.js';
import { installFlagProxy, startCli, tempDir, tsconfigWithoutPaths, waitForHealth, type Cli } from './support.js';

const strategy = (name: string, parameters: Record<string, string> = {}, constraints: unknown[] = []) =>
  ({ strategies: [{ name, parameters, constraints }] }) as never;

const FEATURES = [
  feature('from-cjs', strategy('fromCjs', { user: 'alice' })),
  feature('from-esm', strategy('fromEsm', { user: 'bob' })),
  feature('from-plain', strategy('plainObject', { user: 'carol' }, [{ contextName: 'region', operator: 'IN', values: ['eu'] }])),
  feature('from-factory', strategy('fromFactory', { user: 'dave' })),
  feature('lounge', strategy('default', {}, [{ contextName: 'lounge', operator: 'IN', values: ['yes'] }])),
];

let project: string;
let outside: string;
let tsconfig: string;
const files: Record<string, string> = {};

beforeAll(() => {
  // A project with flag-proxy installed: its files import Strategy from 'flag-proxy'.
  project = tempDir('project');
  installFlagProxy(project);
  mkdirSync(path.join(project, 'strategies'));
  files.cjs = path.join(project, 'strategies', 'from-cjs.cjs');
  writeFileSync(
    files.cjs,
    `const { Strategy } = require('flag-proxy');
class FromCjs extends Strategy {
  constructor() { super('fromCjs'); }
  isEnabled(parameters, context) { return context.userId === parameters.user; }
}
module.exports = [new FromCjs()];
`,
  );
  files.esm = path.join(project, 'strategies', 'from-esm.mjs');
  writeFileSync(
    files.esm,
    `import { Strategy } from 'flag-proxy';
class FromEsm extends Strategy {
  constructor() { super('fromEsm'); }
  isEnabled(parameters, context) { return context.userId === parameters.user; }
}
export default [new FromEsm()];
`,
  );
  files.vip = path.join(project, 'vip-enricher.mjs');
  writeFileSync(
    files.vip,
    `export default [async (context) => context.userId?.startsWith('vip-') ? { ...context, properties: { ...context.properties, tier: 'gold' } } : context];\n`,
  );

  // Files anywhere else (a mounted config volume, /etc/...): no import of flag-proxy needed.
  outside = tempDir('outside');
  tsconfig = tsconfigWithoutPaths(outside);
  files.plain = path.join(outside, 'plain.cjs');
  writeFileSync(files.plain, `module.exports = [{ name: 'plainObject', isEnabled: (parameters, context) => context.userId === parameters.user }];\n`);
  files.factory = path.join(outside, 'factory.mjs');
  writeFileSync(
    files.factory,
    `export default ({ Strategy }) => [new (class extends Strategy {
  constructor() { super('fromFactory'); }
  isEnabled(parameters, context) { return context.userId === parameters.user; }
})()];
`,
  );
  files.lounge = path.join(outside, 'lounge-enricher.cjs');
  writeFileSync(files.lounge, `module.exports = [(context) => context.properties?.tier === 'gold' ? { ...context, properties: { ...context.properties, lounge: 'yes' } } : context];\n`);
  files.importsOutside = path.join(outside, 'imports-flag-proxy.cjs');
  writeFileSync(files.importsOutside, `const { Strategy } = require('flag-proxy');\nmodule.exports = [];\n`);
  files.wrong = path.join(outside, 'wrong.cjs');
  writeFileSync(files.wrong, `module.exports = { name: 'notAList' };\n`);
});

afterAll(() => {
  rmSync(project, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

let upstream: TestFlagServer | undefined;
const running: Cli[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((cli) => cli.stop()));
  await upstream?.close();
  upstream = undefined;
});

describe('FLAG_CUSTOM_STRATEGIES_FILE and EXP_CUSTOM_ENRICHERS_FILE through the CLI', () => {
  it('loads strategies that import Strategy from flag-proxy, plain objects and factories, and runs enrichers in order', async () => {
    upstream = await createTestFlagServer({ clientTokens: ['upstream-token'], features: FEATURES });
    const cli = startCli(
      {
        FLAG_URL: upstream.url,
        FLAG_API_TOKEN: 'upstream-token',
        FLAG_PROXY_CLIENT_KEYS: 'cli-key',
        FLAG_METRICS_INTERVAL: '0',
        FLAG_CUSTOM_STRATEGIES_FILE: [files.cjs, files.esm, files.plain, files.factory].join(','),
        EXP_CUSTOM_ENRICHERS_FILE: `${files.vip}, ${files.lounge}`,
      },
      { tsconfig },
    );
    running.push(cli);
    const base = await cli.base;
    await waitForHealth(base);
    const enabled = async (context: Record<string, unknown>) => {
      const res = await fetch(`${base}/proxy`, { ...postJson({ context }), headers: { authorization: 'cli-key', 'content-type': 'application/json' } });
      expect(res.status).toBe(200);
      return ((await res.json()) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name);
    };
    expect(await enabled({ userId: 'alice' })).toEqual(['from-cjs']);
    expect(await enabled({ userId: 'bob' })).toEqual(['from-esm']);
    expect(await enabled({ userId: 'dave' })).toEqual(['from-factory']);
    // A plain object is wrapped in a Strategy: the strategy's constraints still apply.
    expect(await enabled({ userId: 'carol', properties: { region: 'us' } })).toEqual([]);
    expect(await enabled({ userId: 'carol', properties: { region: 'eu' } })).toEqual(['from-plain']);
    // The second enricher sees what the first added.
    expect(await enabled({ userId: 'vip-erin' })).toEqual(['lounge']);
    expect(await cli.stop()).toBe(0);
  });

  const PREFIX = 'flag-proxy: Invalid option';
  const failures: Array<[string, () => { env: Record<string, string>; line: string }]> = [
    ['a missing strategy file', () => ({
      env: { FLAG_CUSTOM_STRATEGIES_FILE: '/nonexistent/flag-proxy/strategies.js' },
      line: `${PREFIX} customStrategies (FLAG_CUSTOM_STRATEGIES_FILE): cannot load /nonexistent/flag-proxy/strategies.js: file not found`,
    })],
    ['a missing enricher file', () => ({
      env: { EXP_CUSTOM_ENRICHERS_FILE: '/nonexistent/enrichers.mjs' },
      line: `${PREFIX} expCustomEnrichers (EXP_CUSTOM_ENRICHERS_FILE): cannot load /nonexistent/enrichers.mjs: file not found`,
    })],
    ['a strategy file of the wrong shape', () => ({
      env: { FLAG_CUSTOM_STRATEGIES_FILE: files.wrong! },
      line: `${PREFIX} customStrategies (FLAG_CUSTOM_STRATEGIES_FILE): ${files.wrong} must export a list of strategy instances (or objects with a name and an isEnabled method)`,
    })],
    ['a strategy file outside any project that imports flag-proxy', () => ({
      env: { FLAG_CUSTOM_STRATEGIES_FILE: files.importsOutside! },
      line:
        `${PREFIX} customStrategies (FLAG_CUSTOM_STRATEGIES_FILE): cannot load ${files.importsOutside}: Cannot find module 'flag-proxy'; ` +
        'a file outside a project that has flag-proxy installed can export plain { name, isEnabled } objects, or a function ({ Strategy }) => [...], instead of importing it',
    })],
  ];

  it.each(failures)('fails at start with one clear line for %s', async (_what, setup) => {
    const { env, line } = setup();
    const cli = startCli({ FLAG_URL: 'http://127.0.0.1:9/api/', FLAG_API_TOKEN: 't', FLAG_PROXY_CLIENT_KEYS: 'k', ...env }, { tsconfig });
    running.push(cli);
    expect(await cli.exited).toBe(1);
    expect(cli.output().trim()).toBe(line);
  });
});

describe('custom strategies given in code', () => {

  it('accepts plain { name, isEnabled } objects; one that throws evaluates as disabled and is counted', async () => {
    upstream = await createTestFlagServer({
      features: [feature('plain', strategy('plainObject', { user: 'carol' })), feature('throws', strategy('exploding'))],
    });
    const proxy = createFlagProxy({
      flagUrl: upstream.url,
      flagApiToken: upstream.token,
      clientKeys: ['k'],
      storageProvider: createMemoryStorageProvider(),
      metricsInterval: 0,
      logger: silent,
      customStrategies: [
        { name: 'plainObject', isEnabled: (parameters: Record<string, unknown>, context: { userId?: string }) => context.userId === parameters.user },
        {
          name: 'exploding',
          isEnabled: () => {
            throw new Error('boom');
          },
        },
      ] as never,
    });
    const server = http.createServer(proxy);
    try {
      await proxy.ready;
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/proxy`, {
        ...postJson({ context: { userId: 'carol' }, toggles: ['plain', 'throws'] }),
        headers: { authorization: 'k', 'content-type': 'application/json' },
      });
      const body = (await res.json()) as { toggles: Array<{ enabled: boolean }> };
      expect(body.toggles.map((t) => t.enabled)).toEqual([true, false]);
      expect(await proxy.metrics()).toMatch(/^flag_proxy_strategy_errors_total 1$/m);
    } finally {
      server.closeAllConnections();
      server.close();
      await proxy.close();
    }
  });
});
