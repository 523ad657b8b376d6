/**
 * Issue 20, item 9: `close()` waits for or aborts everything the proxy started (flag fetch,
 * registration, usage report, backup write, timers, sockets). Once it resolves nothing is logged
 * and nothing is left running: the process's active resources are what they were before.
 */
import { describe, expect, it } from 'vitest';
import { createFlagProxy, type FlagProxy, type Logger } from 'flag-proxy';
import { createTestFlagServer } from 'flag-proxy/testing';
import { useTempTmpdir } from '../support/temp-tmpdir.js';
import { feature } from './helpers.js';

const KEY = 'clean-close-client-key';

function capture(): { logger: Logger; lines: Array<{ level: string; text: string }> } {
  const lines: Array<{ level: string; text: string }> = [];
  const log =
    (level: string) =>
    (message: string, ...args: unknown[]) =>
      void lines.push({ level, text: [message, ...args.map(String)].join(' ') });
  return { lines, logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error'), fatal: log('fatal') } };
}

/** Active resources by type (`TCPSocketWrap: 3`, `Timeout: 2`, ...). */
function resources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

// The default file backup is part of what a proxy starts: keep it in a directory of this test.
useTempTmpdir('fp-close-');

describe('close()', () => {
  it('leaves nothing running and logs nothing after it resolves, for 20 proxies readied and closed', async () => {
    const upstream = await createTestFlagServer({ features: [feature('a'), feature('b')] });
    // What runs before: vitest's own, and the upstream's listening socket.
    for (let i = 0; i < 5; i++) await tick();
    const before = resources();

    const { logger, lines } = capture();
    const proxies: FlagProxy[] = [];
    for (let i = 0; i < 20; i++) {
      // Default intervals and the default backup: a fetch, a registration and a backup start at once.
      proxies.push(createFlagProxy({ flagUrl: upstream.url, flagApiToken: upstream.token, clientKeys: [KEY], flagAppName: `close-${i}`, logger }));
    }
    await Promise.all(proxies.map((p) => p.ready));
    await Promise.all(proxies.map((p) => p.close()));
    const afterClose = lines.length;
    // A few turns for the upstream's side of each closed connection to see the close; the upstream
    // still runs, so a connection the proxies left open would still be counted.
    for (let i = 0; i < 20; i++) await tick();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const after = resources();
    // The order: the host closes the upstream right after the proxies.
    await upstream.close();
    await new Promise((resolve) => setTimeout(resolve, 200));

    expect(lines.slice(afterClose)).toEqual([]);
    expect(lines.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
    for (const [type, count] of Object.entries(after)) expect({ type, count }).toEqual({ type, count: Math.min(count, before[type] ?? 0) });
  });

  it('waits for a backup write in flight', async () => {
    const upstream = await createTestFlagServer({ features: [feature('a')] });
    const events: string[] = [];
    const storageProvider = {
      get: async () => undefined,
      async set() {
        events.push('write started');
        await new Promise((resolve) => setTimeout(resolve, 300));
        events.push('write done');
      },
    };
    const proxy = createFlagProxy({ flagUrl: upstream.url, flagApiToken: upstream.token, clientKeys: [KEY], logger: capture().logger, storageProvider });
    try {
      await proxy.ready;
      await expect.poll(() => events).toContain('write started');
      await proxy.close();
      events.push('closed');
      expect(events).toEqual(['write started', 'write done', 'closed']);
    } finally {
      await upstream.close();
    }
  });

  it('aborts a flag fetch the upstream holds, so close resolves at once and nothing is logged', async () => {
    const upstream = await createTestFlagServer({ features: [feature('a')] });
    const { logger, lines } = capture();
    const proxy = createFlagProxy({ flagUrl: upstream.url, flagApiToken: upstream.token, clientKeys: [KEY], logger, refreshInterval: 50 });
    await proxy.ready;
    upstream.setFault({ hang: true, routes: 'features' });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const started = Date.now();
    await proxy.close();
    expect(Date.now() - started).toBeLessThan(1000);
    const afterClose = lines.length;
    upstream.setFault(undefined);
    await upstream.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(lines.slice(afterClose)).toEqual([]);
    expect(lines.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
  });
});
