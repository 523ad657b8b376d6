/**
 * `GET /api/client/streaming` and `GET /api/client/delta` on the wire, as `unleash-client` 6 reads
 * them (docs/streaming.md): server-side tokens only, `unleash-connected` with a hydration first,
 * `unleash-updated` with the changes of each new flag set, `Last-Event-ID` and `If-None-Match`
 * naming revisions, the bound on open streams, and `close()` ending every stream. Runs standalone
 * and through every adapter (the fetch bridge must stream).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_KEY, SERVER_TOKEN, eventually, feature, startHarness, type Harness } from '../support/harness.js';
import { openEventStream, type SseConnection, type SseEvent } from '../support/sse.js';

const TOKEN = { authorization: SERVER_TOKEN };
const ID = /^(\d+)-[0-9a-f]{8}$/;
const segmented = (name: string) =>
  feature(name, { strategies: [{ name: 'default', parameters: {}, constraints: [], segments: [7] }] } as never);

const eventsOf = (event: SseEvent): any[] => JSON.parse(event.data).events;
const revisionOf = (id: string | undefined): number => Number(ID.exec(id ?? '')?.[1]);

describe('GET /api/client/streaming', () => {
  let h: Harness;
  const open: SseConnection[] = [];
  const connect = async (headers: Record<string, string> = TOKEN, query = ''): Promise<SseConnection> => {
    const stream = await openEventStream(`${h.base}/api/client/streaming${query}`, headers);
    open.push(stream);
    return stream;
  };
  beforeAll(async () => {
    h = await startHarness({
      features: [feature('alpha'), feature('beta'), segmented('gamma')],
      segments: [{ id: 7, constraints: [{ contextName: 'userId', operator: 'IN', values: ['1'] }] }],
      options: { expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } },
    });
  });
  afterEach(() => {
    for (const stream of open.splice(0)) stream.close();
  });
  afterAll(() => h.close());

  it('returns 401 without a server-side token, and for a client key', async () => {
    for (const headers of [{}, { authorization: CLIENT_KEY }, { authorization: 'wrong' }] as Array<Record<string, string>>) {
      const stream = await connect(headers);
      expect(stream.status).toBe(401);
      await stream.ended;
      expect(stream.text()).toBe('Unauthorized');
    }
  });

  it('answers an event stream whose first event is a hydration of every flag and segment', async () => {
    const stream = await connect();
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers['cache-control']).toBe('no-cache, no-transform');
    expect(stream.headers.etag).toBeUndefined();
    expect(stream.headers['content-encoding']).toBeUndefined();
    const first = await stream.event(0);
    expect(first.event).toBe('unleash-connected');
    expect(first.id).toMatch(ID);
    const events = eventsOf(first);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'hydration', eventId: revisionOf(first.id) });
    expect(events[0].features.map((f: { name: string }) => f.name).sort()).toEqual(['alpha', 'beta', 'gamma']);
    expect(events[0].features.find((f: { name: string }) => f.name === 'gamma').strategies[0].segments).toEqual([7]);
    // As the upstream serves them: the test flag server fills in `inverted: false`.
    expect(events[0].segments).toEqual([{ id: 7, constraints: [{ contextName: 'userId', operator: 'IN', values: ['1'], inverted: false }] }]);
  });

  it('pushes each upstream change as unleash-updated with the changed flag only, under a new revision id', async () => {
    const stream = await connect();
    const first = await stream.event(0);
    h.upstream.setEnabled('beta', false);
    const updated = await stream.event(1);
    expect(updated.event).toBe('unleash-updated');
    expect(revisionOf(updated.id)).toBeGreaterThan(revisionOf(first.id));
    const events = eventsOf(updated);
    expect(events).toEqual([{ type: 'feature-updated', eventId: revisionOf(updated.id), feature: expect.objectContaining({ name: 'beta', enabled: false }) }]);

    h.upstream.removeFeature('beta');
    const removed = eventsOf(await stream.event(2));
    expect(removed).toEqual([{ type: 'feature-removed', eventId: expect.any(Number), featureName: 'beta', project: 'default' }]);

    h.upstream.setSegments([{ id: 7, constraints: [] }]);
    const segment = eventsOf(await stream.event(3));
    expect(segment).toEqual([{ type: 'segment-updated', eventId: expect.any(Number), segment: { id: 7, constraints: [] } }]);
    h.upstream.upsertFeature(feature('beta'));
    expect(eventsOf(await stream.event(4))[0]).toMatchObject({ type: 'feature-updated', feature: { name: 'beta', enabled: true } });
  });

  it('reaches every connected client with a change within a second of the proxy seeing it', async () => {
    const streams = await Promise.all(Array.from({ length: 20 }, () => connect()));
    await Promise.all(streams.map((stream) => stream.event(0)));
    const started = Date.now();
    h.upstream.setEnabled('gamma', !h.upstream.features().find((f) => f.name === 'gamma')!.enabled);
    const updates = await Promise.all(streams.map((stream) => stream.event(1, 3000)));
    // The proxy polls every 100 ms here; the push itself is immediate.
    expect(Date.now() - started).toBeLessThan(100 + 1000);
    expect(new Set(updates.map((u) => u.id)).size).toBe(1);
    expect(updates.every((u) => u.event === 'unleash-updated')).toBe(true);
  });

  it('sends only the changes since the Last-Event-ID of a reconnecting client, and a hydration for an unknown one', async () => {
    const before = await connect();
    const held = (await before.event(0)).id!;
    before.close();

    const current = await connect({ ...TOKEN, 'last-event-id': held });
    const caughtUp = await current.event(0);
    expect(caughtUp).toMatchObject({ event: 'unleash-connected', id: held });
    expect(eventsOf(caughtUp)).toEqual([]);

    h.upstream.setEnabled('alpha', false);
    await current.event(1);
    const behind = await connect({ ...TOKEN, 'last-event-id': held });
    const delta = await behind.event(0);
    expect(delta.event).toBe('unleash-connected');
    expect(revisionOf(delta.id)).toBeGreaterThan(revisionOf(held));
    expect(eventsOf(delta)).toEqual([{ type: 'feature-updated', eventId: revisionOf(delta.id), feature: expect.objectContaining({ name: 'alpha', enabled: false }) }]);

    // A revision of another proxy instance (or an earlier process) is unknown here.
    for (const unknown of [`${revisionOf(held)}-00000000`, 'garbage', '999999']) {
      const other = await connect({ ...TOKEN, 'last-event-id': unknown });
      expect(eventsOf(await other.event(0))[0].type).toBe('hydration');
    }
  });

  it('keeps to the namePrefix and project a client asks for', async () => {
    const stream = await connect(TOKEN, '?namePrefix=al&project=default');
    const [hydration] = eventsOf(await stream.event(0));
    expect(hydration.features.map((f: { name: string }) => f.name)).toEqual(['alpha']);
    const other = await connect(TOKEN, '?project=elsewhere');
    expect(eventsOf(await other.event(0))[0].features).toEqual([]);
  });
});

describe('GET /api/client/delta', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ features: [feature('alpha'), feature('beta')], options: { expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } } });
  });
  afterAll(() => h.close());

  it('returns 401 without a server-side token', async () => {
    expect((await h.raw('/api/client/delta')).status).toBe(401);
    expect((await h.raw('/api/client/delta', { headers: { authorization: CLIENT_KEY } })).status).toBe(401);
  });

  it('answers a hydration with a revision ETag, 304 for it, and the changes since it once the flags change', async () => {
    const first = await h.raw('/api/client/delta', { headers: TOKEN });
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8');
    const etag = first.headers.etag!;
    expect(etag).toMatch(/^"\d+-[0-9a-f]{8}"$/);
    const [hydration] = JSON.parse(first.body).events;
    expect(hydration.type).toBe('hydration');
    expect(hydration.features.map((f: { name: string }) => f.name).sort()).toEqual(['alpha', 'beta']);

    const again = await h.raw('/api/client/delta', { headers: { ...TOKEN, 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers.etag).toBe(etag);

    h.upstream.setEnabled('alpha', false);
    let changed = again;
    for (let i = 0; i < 100 && changed.status === 304; i += 1) {
      await new Promise((r) => setTimeout(r, 50));
      changed = await h.raw('/api/client/delta', { headers: { ...TOKEN, 'if-none-match': etag } });
    }
    expect(changed.status).toBe(200);
    expect(changed.headers.etag).not.toBe(etag);
    expect(JSON.parse(changed.body).events).toEqual([{ type: 'feature-updated', eventId: expect.any(Number), feature: expect.objectContaining({ name: 'alpha', enabled: false }) }]);
  });
});

describe('event-stream bounds and shutdown', () => {
  it('refuses a stream past maxEventStreams with 503 and counts it', async () => {
    const h = await startHarness({ features: [feature('alpha')], options: { maxEventStreams: 1, expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } } });
    const first = await openEventStream(`${h.base}/api/client/streaming`, TOKEN);
    try {
      await first.event(0);
      const second = await openEventStream(`${h.base}/api/client/streaming`, TOKEN);
      expect(second.status).toBe(503);
      expect(second.headers['retry-after']).toBe('5');
      const metrics = await h.proxy.metrics();
      expect(metrics).toContain('flag_proxy_event_streams{surface="client-streaming"} 1');
      expect(metrics).toContain('flag_proxy_event_streams_refused_total{surface="client-streaming"} 1');
      // A client that goes away frees its place.
      first.close();
      await eventually(async () => expect(await h.proxy.metrics()).toContain('flag_proxy_event_streams{surface="client-streaming"} 0'));
      const third = await openEventStream(`${h.base}/api/client/streaming`, TOKEN);
      expect(third.status).toBe(200);
      third.close();
    } finally {
      first.close();
      await h.close();
    }
  });

  it('ends every open stream when the proxy closes', async () => {
    const h = await startHarness({ features: [feature('alpha')], options: { expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } } });
    const stream = await openEventStream(`${h.base}/api/client/streaming`, TOKEN);
    try {
      await stream.event(0);
      // The proxy alone, not the server: the stream must end without its connection being cut.
      await h.proxy.close();
      await stream.ended;
      expect(stream.events).toHaveLength(1);
    } finally {
      await h.close();
    }
  });

  it('sends heartbeat comments on an idle stream, unbuffered', async () => {
    const h = await startHarness({ features: [feature('alpha')], options: { eventStreamHeartbeatInterval: 50, expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } } });
    const stream = await openEventStream(`${h.base}/api/client/streaming`, TOKEN);
    try {
      await stream.event(0);
      await eventually(() => expect(stream.comments()).toBeGreaterThanOrEqual(2), 3000);
      expect(stream.text()).toContain('\n: heartbeat\n\n');
      expect(stream.events).toHaveLength(1);
    } finally {
      stream.close();
      await h.close();
    }
  });

  it('serves neither route when clientStreaming is off', async () => {
    const h = await startHarness({ features: [feature('alpha')], options: { clientStreaming: false, expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } } });
    try {
      expect((await h.raw('/api/client/streaming', { headers: TOKEN })).status).toBe(404);
      expect((await h.raw('/api/client/delta', { headers: TOKEN })).status).toBe(404);
    } finally {
      await h.close();
    }
  });
});
