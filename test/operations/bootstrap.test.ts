/**
 * `expBootstrap.url` with `urlHeaders.Authorization` (and EXP_BOOTSTRAP_URL /
 * EXP_BOOTSTRAP_AUTHORIZATION): with the upstream down at start, the proxy becomes ready from
 * the bootstrap document; once the upstream answers, its flags replace the bootstrap's.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { optionsFromEnv, type FlagProxyOptions, type Logger } from 'flag-proxy';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { eventually, feature, startHarness, type Harness } from '../support/harness.js';

const BOOTSTRAP_SECRET = 'bootstrap-secret-value';

interface BootstrapServer {
  url: string;
  authorizations: Array<string | undefined>;
  close(): Promise<void>;
}

/** Serves a client-features document to requests carrying the expected Authorization, 401 otherwise. */
async function startBootstrapServer(features: unknown[]): Promise<BootstrapServer> {
  const authorizations: Array<string | undefined> = [];
  const server = http.createServer((req, res) => {
    authorizations.push(req.headers.authorization);
    if (req.headers.authorization !== BOOTSTRAP_SECRET) {
      res.writeHead(401).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ version: 2, features }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/bootstrap/features.json`,
    authorizations,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const names = async (h: Harness) => ((await (await h.request('/proxy')).json()).toggles as Array<{ name: string }>).map((t) => t.name);

let upstream: TestFlagServer | undefined;
let bootstrap: BootstrapServer | undefined;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  await bootstrap?.close();
  await upstream?.close();
  h = bootstrap = upstream = undefined;
});

async function startDown(options: (bootstrapUrl: string) => Partial<FlagProxyOptions>, logger?: Logger): Promise<Harness> {
  upstream = await createTestFlagServer({ features: [feature('from-upstream')] });
  upstream.setFault({ status: 503, routes: 'features' });
  bootstrap = await startBootstrapServer([feature('from-bootstrap')]);
  h = await startHarness({ upstream, noWait: true, options: { ...options(bootstrap.url), ...(logger ? { logger } : {}) } });
  return h;
}

describe('expBootstrap.url', () => {
  it('becomes ready from the bootstrap URL, sending urlHeaders.Authorization, while the upstream is down', async () => {
    const harness = await startDown((url) => ({ expBootstrap: { url, urlHeaders: { Authorization: BOOTSTRAP_SECRET } } }));
    await harness.proxy.ready;
    expect(bootstrap!.authorizations).toEqual([BOOTSTRAP_SECRET]);
    expect(await names(harness)).toEqual(['from-bootstrap']);
    expect((await harness.request('/proxy/health')).status).toBe(200);
    upstream!.setFault(undefined);
    await eventually(async () => expect(await names(harness)).toEqual(['from-upstream']));
  });

  it('is read from EXP_BOOTSTRAP_URL and EXP_BOOTSTRAP_AUTHORIZATION, and the authorization is never logged', async () => {
    const lines: string[] = [];
    const capture = (level: string) => (message: string, ...args: unknown[]) =>
      lines.push(`${level} ${message} ${args.map((a) => (a instanceof Error ? `${a.message} ${a.stack}` : JSON.stringify(a))).join(' ')}`);
    const logger: Logger = { debug: capture('debug'), info: capture('info'), warn: capture('warn'), error: capture('error'), fatal: capture('fatal') };
    const harness = await startDown(
      (url) => optionsFromEnv({ EXP_BOOTSTRAP_URL: url, EXP_BOOTSTRAP_AUTHORIZATION: BOOTSTRAP_SECRET, LOG_LEVEL: 'debug' }),
      logger,
    );
    await harness.proxy.ready;
    expect(bootstrap!.authorizations).toEqual([BOOTSTRAP_SECRET]);
    expect(await names(harness)).toEqual(['from-bootstrap']);
    await new Promise((r) => setTimeout(r, 150)); // a few failed fetches get logged meanwhile
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toContain(BOOTSTRAP_SECRET);
  });

  it('stays not ready when the bootstrap URL refuses the authorization and the upstream is down', async () => {
    const harness = await startDown((url) => ({ expBootstrap: { url, urlHeaders: { Authorization: 'wrong' } } }));
    await eventually(() => expect(bootstrap!.authorizations).toEqual(['wrong']));
    await new Promise((r) => setTimeout(r, 200));
    expect(harness.proxy.isReady()).toBe(false);
    expect((await harness.request('/proxy')).status).toBe(503);
  });
});
