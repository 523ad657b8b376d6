/**
 * The Node server SDK (`unleash-client`, its own `new Unleash()` instances) reading the raw flag
 * definitions through the Express and the Koa example, where the proxy is mounted under
 * /api/flags: for every state of the client specification, every case evaluates as it does with
 * the SDK pointed straight at the flag server, and as the specification expects.
 *
 * test/operations/server-side-sdk.test.ts runs the same comparison against the standalone proxy
 * (and covers register, metrics and chaining there); this file adds the mounts the examples use,
 * whose routers must pass `/proxy/client/features`, `/client/register` and `/client/metrics` on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Unleash } from 'unleash-client';
import { loadClientSpecs, serverSdk, synchronized, type SpecCase } from '../support/client-spec.js';
import type { FeatureDefinition, FlagProxy, FlagProxyOptions } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer, type TestSegment } from 'flag-proxy/testing';
import { eventually, EXAMPLES, MOUNT_PATH, serveLogged, silentLogger, type ExampleHost, type LoggedRequest, type LoggedServer } from './sdk-fixtures.js';

const SERVER_TOKEN = 'sdk-e2e-server-token';

type Case = SpecCase & { variant: boolean };

/** Each specification state with its tests and variant tests as one list of cases. */
const SPECS = loadClientSpecs().map((spec) => ({
  name: spec.name,
  features: spec.features,
  segments: spec.segments,
  cases: [...spec.tests.map((c): Case => ({ ...c, variant: false })), ...spec.variantTests.map((c): Case => ({ ...c, variant: true }))],
}));

const answer = (sdk: Unleash, c: Case): unknown =>
  c.variant ? sdk.getVariant(c.toggleName, c.context) : sdk.isEnabled(c.toggleName, c.context);

/** One example serving one flag server, with the server-side token accepted. */
interface Running {
  upstream: TestFlagServer;
  proxy: FlagProxy;
  server: LoggedServer;
  log: LoggedRequest[];
  close(): Promise<void>;
}

async function run(build: ExampleHost, upstream: TestFlagServer, extra: Partial<FlagProxyOptions> = {}): Promise<Running> {
  const log: LoggedRequest[] = [];
  const { listener, proxy } = build({
    flagUrl: upstream.url,
    flagApiToken: upstream.token,
    clientKeys: ['sdk-e2e-frontend-key'],
    expServerSideSdkConfig: { tokens: [SERVER_TOKEN] },
    storageProvider: createMemoryStorageProvider(),
    refreshInterval: 60_000,
    metricsInterval: 0,
    logger: silentLogger,
    ...extra,
  });
  const server = await serveLogged('example', listener, log);
  await proxy.ready;
  return {
    upstream,
    proxy,
    server,
    log,
    async close() {
      await proxy.close();
      await server.close();
    },
  };
}

describe.each(EXAMPLES)('unleash-client through the %s example (proxy under /api/flags)', (_name, build) => {
  for (const spec of SPECS) {
    describe(spec.name, () => {
      let upstream: TestFlagServer;
      let example: Running;
      let direct: Unleash;
      let proxied: Unleash;
      beforeAll(async () => {
        upstream = await createTestFlagServer({ features: spec.features, segments: spec.segments });
        example = await run(build, upstream);
        direct = serverSdk(upstream.url, upstream.token, 'direct');
        proxied = serverSdk(`${example.server.origin}${MOUNT_PATH}/proxy/`, SERVER_TOKEN, 'proxied');
        await Promise.all([synchronized(direct), synchronized(proxied)]);
      });
      afterAll(async () => {
        direct?.destroy();
        proxied?.destroy();
        await example?.close();
        await upstream?.close();
      });

      it(`evaluates its ${spec.cases.length} cases as the SDK pointed at the flag server, and as specified`, () => {
        expect(example.log.some((r) => r.path === `${MOUNT_PATH}/proxy/client/features` && r.status === 200)).toBe(true);
        const differences = spec.cases
          .map((c) => ({ case: c.description, direct: answer(direct, c), proxied: answer(proxied, c) }))
          .filter((r) => JSON.stringify(r.direct) !== JSON.stringify(r.proxied));
        expect(differences).toEqual([]);
        for (const c of spec.cases) {
          if (!c.variant) expect(proxied.isEnabled(c.toggleName, c.context), c.description).toBe(c.expectedResult);
          else {
            const expected = c.expectedResult as Record<string, unknown>;
            const actual = proxied.getVariant(c.toggleName, c.context) as unknown as Record<string, unknown>;
            expect(Object.fromEntries(Object.keys(expected).map((k) => [k, actual[k]])), c.description).toEqual(expected);
          }
        }
      });
    });
  }

  it('registers and reports usage through the mount; the counts reach the flag server', async () => {
    const upstream = await createTestFlagServer({
      features: [{ name: 'server.metered', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [] }], variants: [] } as FeatureDefinition],
    });
    const example = await run(build, upstream, { metricsInterval: 200 });
    const sdk = serverSdk(`${example.server.origin}${MOUNT_PATH}/proxy`, SERVER_TOKEN, 'reporting', 100);
    try {
      await synchronized(sdk);
      for (let i = 0; i < 4; i += 1) expect(sdk.isEnabled('server.metered')).toBe(true);
      await eventually(() => expect(upstream.countsFor('server.metered').yes).toBe(4), 10_000);
      const answered = (route: string) => example.log.filter((r) => r.method === 'POST' && r.path === `${MOUNT_PATH}/proxy/client/${route}`).map((r) => r.status);
      expect(answered('register')).toEqual([200]);
      expect(answered('metrics')).toContain(200);
      // A frontend key is not a server-side token: no definitions for it.
      const refused = await fetch(`${example.server.origin}${MOUNT_PATH}/proxy/client/features`, { headers: { authorization: 'sdk-e2e-frontend-key' } });
      expect(refused.status).toBe(401);
    } finally {
      sdk.destroy();
      await example.close();
      await upstream.close();
    }
  });
});
