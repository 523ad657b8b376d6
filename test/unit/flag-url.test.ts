/** The flag URL as operators get it wrong: a missing `/api/`, a query string. */
import { afterEach, describe, expect, it } from 'vitest';
import { createFlagProxy, isFlagProxyError, type FlagProxy } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { capturingLogger, feature, waitUntil } from '../reliability/helpers.js';

let upstream: TestFlagServer | undefined;
let proxy: FlagProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  await upstream?.close();
  proxy = undefined;
  upstream = undefined;
});

async function errorLoggedFor(flagUrl: (server: TestFlagServer) => string): Promise<string> {
  upstream = await createTestFlagServer({ features: [feature('on')] });
  const logger = capturingLogger();
  proxy = createFlagProxy({
    flagUrl: flagUrl(upstream),
    flagApiToken: upstream.token,
    clientKeys: ['k'],
    metricsInterval: 0,
    storageProvider: createMemoryStorageProvider(),
    logger,
  });
  await waitUntil(() => logger.lines.some((l) => l.startsWith('error:')), 5000, 'a logged fetch error');
  return logger.lines.find((l) => l.startsWith('error:'))!;
}

describe('flagUrl', () => {
  it('hints at /api/ when client/features answers 404 under a URL without it', async () => {
    const line = await errorLoggedFor((server) => server.origin);
    expect(line).toContain('responded 404');
    expect(line).toContain(`did you mean ${upstream!.origin}/api/?`);
  });

  it('gives no /api/ hint when the URL already ends in /api/', async () => {
    const line = await errorLoggedFor((server) => `${server.origin}/other/api/`);
    expect(line).toContain('responded 404');
    expect(line).not.toContain('did you mean');
  });

  it('never puts credentials of the URL in the hint', async () => {
    const line = await errorLoggedFor((server) => server.origin.replace('http://', 'http://bob:hunter2pass@'));
    expect(line).toContain(`did you mean ${upstream!.origin}/api/?`);
  });

  it.each([['https://flags.example/api/?project=web'], ['https://flags.example/api/?']])(
    'refuses a query string at creation (it would be dropped from every fetch): %s',
    (flagUrl) => {
      let caught: unknown;
      try {
        createFlagProxy({ flagUrl, flagApiToken: 't', clientKeys: ['k'] });
      } catch (error) {
        caught = error;
      }
      expect(isFlagProxyError(caught) && caught.code).toBe('INVALID_OPTION');
      expect((caught as Error).message).toBe(
        'Invalid option flagUrl (FLAG_URL): must not carry a query string (it is not sent upstream); filter with projectName, namePrefix or tags',
      );
    },
  );
});
