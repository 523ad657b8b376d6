/**
 * `unleash-client` (the Node server SDK, unchanged) in streaming mode against the proxy, standalone
 * and mounted through Express and the fetch adapter: it connects to `/api/client/streaming` and
 * gets the flags with their segments; an upstream change reaches it within one proxy refresh
 * interval plus a second without it ever polling; a cut connection is resumed with
 * `Last-Event-ID` and answered with the changes only; `close()` of the proxy ends its stream and
 * the SDK keeps its flags. The same SDK polling in delta format gets 304s and then only the
 * changed flag. A logging pass-through server in front of the proxy records what the SDK asked and
 * what it was sent.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemStorageProvider, Unleash } from 'unleash-client';
import { SERVER_TOKEN, eventually, feature, startHarness, type Harness } from '../support/harness.js';

const PROXY_REFRESH_MS = 200;

/** One request the pass-through saw, with what it answered so far. */
interface Seen {
  path: string;
  headers: http.IncomingHttpHeaders;
  status?: number;
  body: string;
  ended: boolean;
}

/** A pass-through server in front of `target` that logs each request and can cut open responses. */
async function passThrough(target: URL): Promise<{ origin: string; seen: Seen[]; cut(): void; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const entry: Seen = { path: (req.url ?? '/').split('?')[0]!, headers: req.headers, body: '', ended: false };
    seen.push(entry);
    open.add(res);
    res.on('close', () => open.delete(res));
    const forwarded = http.request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers, agent: false },
      (answer) => {
        entry.status = answer.statusCode;
        res.writeHead(answer.statusCode ?? 500, answer.headers);
        answer.on('data', (chunk: Buffer) => {
          entry.body += chunk.toString('utf8');
          res.write(chunk);
        });
        answer.on('end', () => {
          entry.ended = true;
          res.end();
        });
        answer.on('error', () => res.destroy());
      },
    );
    forwarded.on('error', () => res.destroy());
    res.on('close', () => forwarded.destroy());
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    seen,
    cut: () => {
      for (const res of open) res.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The `data` of each event in a stream body, parsed. */
const eventData = (body: string): Array<{ event: string; id: string; events: Array<{ type: string; [k: string]: unknown }> }> =>
  body
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => {
      const field = (name: string) => block.split('\n').find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2);
      return { event: field('event') ?? '', id: field('id') ?? '', events: JSON.parse(field('data') ?? '{}').events };
    });

const segmented = feature('stream.segmented', { strategies: [{ name: 'default', parameters: {}, constraints: [], segments: [3] }] } as never);

describe.each(['node', 'express', 'fetch'] as const)('unleash-client in streaming mode, proxy mounted: %s', (mount) => {
  let h: Harness;
  let front: Awaited<ReturnType<typeof passThrough>>;
  let sdk: Unleash;
  const errors: unknown[] = [];
  const streams = (): Seen[] => front.seen.filter((s) => s.path.endsWith('/api/client/streaming'));

  beforeAll(async () => {
    h = await startHarness({
      mount,
      features: [feature('stream.flip'), segmented],
      segments: [{ id: 3, constraints: [{ contextName: 'userId', operator: 'IN', values: ['1'] }] }],
      options: { refreshInterval: PROXY_REFRESH_MS, expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } },
    });
    const base = new URL(h.base);
    front = await passThrough(base);
    sdk = new Unleash({
      url: `${front.origin}${base.pathname}/api/`,
      appName: 'streaming-e2e',
      instanceId: 'streaming-e2e-1',
      customHeaders: { Authorization: SERVER_TOKEN },
      // Polling would come only after a fallback, and then not within the test.
      refreshInterval: 60_000,
      disableMetrics: true,
      storageProvider: new InMemStorageProvider(),
      skipInstanceCountWarning: true,
      experimentalMode: { type: 'streaming' },
    });
    sdk.on('error', (error) => errors.push(error));
    sdk.on('warn', () => undefined);
    await new Promise<void>((resolve) => sdk.once('synchronized', () => resolve()));
  });
  afterAll(async () => {
    sdk?.destroy();
    await h?.close();
    await front?.close();
  });

  it('connects to /api/client/streaming and gets every flag with its segments', () => {
    expect(streams()).toHaveLength(1);
    expect(streams()[0]).toMatchObject({ status: 200, headers: { authorization: SERVER_TOKEN, accept: 'text/event-stream' } });
    expect(eventData(streams()[0]!.body)[0]).toMatchObject({ event: 'unleash-connected', events: [{ type: 'hydration' }] });
    expect(sdk.isEnabled('stream.flip')).toBe(true);
    expect(sdk.isEnabled('stream.segmented', { userId: '1' })).toBe(true);
    expect(sdk.isEnabled('stream.segmented', { userId: '2' })).toBe(false);
  });

  it('sees a flag flipped upstream within one refresh interval plus a second, without polling', async () => {
    const started = Date.now();
    h.upstream.setEnabled('stream.flip', false);
    await eventually(() => expect(sdk.isEnabled('stream.flip')).toBe(false), PROXY_REFRESH_MS + 1000);
    expect(Date.now() - started).toBeLessThanOrEqual(PROXY_REFRESH_MS + 1000);
    const update = eventData(streams()[0]!.body).find((e) => e.event === 'unleash-updated');
    expect(update?.events).toEqual([expect.objectContaining({ type: 'feature-updated', feature: expect.objectContaining({ name: 'stream.flip', enabled: false }) })]);
    // Every request the SDK made: the one stream, never /api/client/features or /delta.
    expect(front.seen.map((s) => s.path).filter((p) => p.includes('/api/client/') && !p.endsWith('/register'))).toEqual([streams()[0]!.path]);
    expect(errors).toEqual([]);
  });

  it('resumes a cut stream with Last-Event-ID and gets the changes since, not a hydration', async () => {
    const lastId = eventData(streams()[0]!.body).at(-1)!.id;
    front.cut();
    h.upstream.setEnabled('stream.flip', true);
    // The SDK retries after 1–2 s (its backoff, with jitter).
    await eventually(() => expect(sdk.isEnabled('stream.flip')).toBe(true), 6000);
    expect(streams()).toHaveLength(2);
    const resumed = streams()[1]!;
    expect(resumed.headers['last-event-id']).toBe(lastId);
    const sent = eventData(resumed.body);
    expect(sent[0]!.event).toBe('unleash-connected');
    expect(sent.flatMap((e) => e.events.map((x) => x.type))).not.toContain('hydration');
    expect(sent.flatMap((e) => e.events)).toContainEqual(expect.objectContaining({ type: 'feature-updated', feature: expect.objectContaining({ name: 'stream.flip', enabled: true }) }));
  });

  it('has its stream ended by close() of the proxy, and keeps its flags', async () => {
    const current = streams().at(-1)!;
    await h.proxy.close();
    await eventually(() => expect(current.ended).toBe(true), 2000);
    expect(sdk.isEnabled('stream.flip')).toBe(true);
    expect(sdk.isEnabled('stream.segmented', { userId: '1' })).toBe(true);
  });
});

describe('unleash-client polling in delta format', () => {
  it('hydrates from /api/client/delta, gets 304 while nothing changes, then only the changed flag', async () => {
    const h = await startHarness({
      features: [feature('delta.flip'), feature('delta.other')],
      options: { refreshInterval: PROXY_REFRESH_MS, expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } },
    });
    const base = new URL(h.base);
    const front = await passThrough(base);
    const sdk = new Unleash({
      url: `${front.origin}${base.pathname}/api/`,
      appName: 'delta-e2e',
      instanceId: 'delta-e2e-1',
      customHeaders: { Authorization: SERVER_TOKEN },
      refreshInterval: 100,
      disableMetrics: true,
      storageProvider: new InMemStorageProvider(),
      skipInstanceCountWarning: true,
      experimentalMode: { type: 'polling', format: 'delta' },
    });
    try {
      sdk.on('error', () => undefined);
      await new Promise<void>((resolve) => sdk.once('synchronized', () => resolve()));
      expect(sdk.isEnabled('delta.flip')).toBe(true);
      const polls = () => front.seen.filter((s) => s.path.endsWith('/api/client/delta'));
      await eventually(() => expect(polls().filter((p) => p.status === 304).length).toBeGreaterThanOrEqual(2));
      expect(polls()[1]!.headers['if-none-match']).toMatch(/^"\d+-[0-9a-f]{8}"$/);
      h.upstream.setEnabled('delta.flip', false);
      await eventually(() => expect(sdk.isEnabled('delta.flip')).toBe(false), 3000);
      const changed = polls().filter((p) => p.status === 200).at(-1)!;
      expect(JSON.parse(changed.body).events).toEqual([
        expect.objectContaining({ type: 'feature-updated', feature: expect.objectContaining({ name: 'delta.flip', enabled: false }) }),
      ]);
      expect(sdk.isEnabled('delta.other')).toBe(true);
      expect(front.seen.filter((s) => s.path.endsWith('/api/client/features'))).toEqual([]);
    } finally {
      sdk.destroy();
      await h.close();
      await front.close();
    }
  });
});
