/**
 * The event-stream hub every pushing surface uses: wire format, the shared bound, heartbeats,
 * `Last-Event-ID`, broadcast, and `close()` ending every stream.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEventStreamHub, formatEvent, PACE_TICK_MS, type EventStreamHub, type StreamBudget } from '../../src/core/event-streams.js';
import { writeResponse } from '../../src/core/http.js';

interface Opened {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Everything received so far. */
  text(): string;
  /** Resolves once the response ended. */
  ended: Promise<void>;
  destroy(): void;
}

function openStream(port: number, headers: Record<string, string> = {}): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', headers }, (res) => {
      let received = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (received += chunk));
      const ended = new Promise<void>((done) => res.on('close', () => done()));
      resolve({ status: res.statusCode ?? 0, headers: res.headers, text: () => received, ended, destroy: () => req.destroy() });
    });
    req.on('error', reject);
  });
}

const until = async (check: () => boolean, ms = 3000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('event-stream hub', () => {
  let server: http.Server | undefined;
  let hub: EventStreamHub | undefined;
  afterEach(async () => {
    vi.useRealTimers();
    hub?.close();
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  });

  async function start(budget: StreamBudget, heartbeatMs = 60_000) {
    const counts: string[] = [];
    const lastIds: Array<string | undefined> = [];
    hub = createEventStreamHub({ surface: 'test', budget, heartbeatMs, onCount: (_s, change) => counts.push(change) });
    const h = hub;
    server = http.createServer((req, res) =>
      writeResponse(req, res, h.open(req, (stream) => {
        lastIds.push(stream.lastEventId);
        stream.send({ event: 'hello', data: 'first', id: '1' });
      })),
    );
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    return { port: (server.address() as AddressInfo).port, counts, lastIds };
  }

  it('writes events in the text/event-stream format, one data line per line', () => {
    expect(formatEvent({ event: 'e', id: '7', data: 'a\nb' })).toBe('id: 7\nevent: e\ndata: a\ndata: b\n\n');
    // Newlines cannot smuggle a field into the id or event name.
    expect(formatEvent({ event: 'x\ndata: evil', data: '' })).toBe('event: xdata: evil\ndata: \n\n');
  });

  it('opens streams up to the shared bound, refuses the next with 503, and counts them', async () => {
    const budget = { max: 2, open: 0 };
    const { port, counts } = await start(budget);
    const a = await openStream(port);
    const b = await openStream(port);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.headers['content-type']).toMatch(/^text\/event-stream/);
    await until(() => a.text().includes('data: first'));
    const c = await openStream(port);
    expect(c.status).toBe(503);
    expect(budget.open).toBe(2);
    a.destroy();
    await until(() => budget.open === 1);
    const d = await openStream(port);
    expect(d.status).toBe(200);
    expect(counts.filter((x) => x === 'refused')).toHaveLength(1);
    expect(counts.filter((x) => x === 'opened')).toHaveLength(3);
  });

  it('sends heartbeats to idle streams, broadcasts to all, and passes Last-Event-ID on', async () => {
    const { port, lastIds } = await start({ max: 10, open: 0 }, 30);
    const a = await openStream(port, { 'last-event-id': '41' });
    const b = await openStream(port);
    await until(() => a.text().includes(': heartbeat') && b.text().includes(': heartbeat'));
    expect(lastIds).toEqual(['41', undefined]);
    expect(hub!.broadcast({ event: 'changed', data: '{"x":1}' })).toBe(2);
    await until(() => a.text().includes('event: changed\ndata: {"x":1}') && b.text().includes('event: changed'));
  });

  describe('pace()', () => {
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    /** The rate that tells five streams a tick. */
    const FIVE_A_TICK = (5 * 1000) / PACE_TICK_MS;
    /** Opens `n` streams one after the other (so in that order in the hub), with the share timer faked. */
    async function paced(n: number) {
      vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
      const { port } = await start({ max: 100, open: 0 });
      const streams: Opened[] = [];
      for (let i = 0; i < n; i += 1) streams.push(await openStream(port));
      await until(() => streams.every((s) => s.text().includes('data: first')));
      const told = (marker: string) => streams.map((s, i) => (s.text().includes(marker) ? i : -1)).filter((i) => i >= 0);
      /** The streams told `marker`, once the writes so far have arrived. */
      const settled = async (marker: string, count: number) => {
        await until(() => told(marker).length >= count);
        await sleep(50);
        return told(marker);
      };
      return { streams, settled };
    }

    it('tells one share at once and one more every tick, in the order the streams opened', async () => {
      const { settled } = await paced(12);
      expect(hub!.pace({ event: 'changed', data: 'one' }, FIVE_A_TICK)).toBe(12);
      expect(await settled('data: one', 5)).toEqual([0, 1, 2, 3, 4]);
      vi.advanceTimersByTime(PACE_TICK_MS);
      expect(await settled('data: one', 10)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      vi.advanceTimersByTime(PACE_TICK_MS);
      expect(await settled('data: one', 12)).toHaveLength(12);
      // Done: no share timer left, only the heartbeat's.
      expect(vi.getTimerCount()).toBe(1);
    });

    it('tells one stream a tick, further apart, for a rate under one a tick', async () => {
      const { settled } = await paced(3);
      // 20 a second: one stream every 50 ms.
      hub!.pace({ data: 'slow' }, 20);
      expect(await settled('data: slow', 1)).toEqual([0]);
      vi.advanceTimersByTime(49);
      expect(await settled('data: slow', 1)).toEqual([0]);
      vi.advanceTimersByTime(1);
      expect(await settled('data: slow', 2)).toEqual([0, 1]);
    });

    it('keeps to a rate that is no whole number of streams a tick: two every 13 ms for 150 a second', async () => {
      const { settled } = await paced(6);
      hub!.pace({ data: 'odd' }, 150);
      expect(await settled('data: odd', 2)).toEqual([0, 1]);
      vi.advanceTimersByTime(12);
      expect(await settled('data: odd', 2)).toEqual([0, 1]);
      vi.advanceTimersByTime(1);
      expect(await settled('data: odd', 4)).toEqual([0, 1, 2, 3]);
    });

    it('tells every stream at once for 0', async () => {
      const { settled } = await paced(12);
      expect(hub!.pace({ data: 'all' }, 0)).toBe(12);
      expect(await settled('data: all', 12)).toHaveLength(12);
      expect(vi.getTimerCount()).toBe(1);
    });

    it('tells a newer event first to the streams the older one had not reached, and then to the rest', async () => {
      const { streams, settled } = await paced(12);
      hub!.pace({ data: 'old' }, FIVE_A_TICK);
      expect(await settled('data: old', 5)).toEqual([0, 1, 2, 3, 4]);
      hub!.pace({ data: 'new' }, FIVE_A_TICK);
      expect(await settled('data: new', 5)).toEqual([5, 6, 7, 8, 9]);
      vi.advanceTimersByTime(PACE_TICK_MS);
      expect(await settled('data: new', 10)).toEqual([0, 1, 2, 5, 6, 7, 8, 9, 10, 11]);
      vi.advanceTimersByTime(PACE_TICK_MS);
      expect(await settled('data: new', 12)).toHaveLength(12);
      // The older event never reaches the streams it had not reached when it was replaced.
      vi.advanceTimersByTime(PACE_TICK_MS * 4);
      await sleep(50);
      expect(streams.filter((s) => s.text().includes('data: old'))).toHaveLength(5);
    });

    it('skips a stream closed before its turn, without counting it in the share', async () => {
      const { streams, settled } = await paced(8);
      streams[1]!.destroy();
      await until(() => hub!.size() === 7);
      // Counted as the streams still open when the event starts.
      expect(hub!.pace({ data: 'x' }, FIVE_A_TICK)).toBe(7);
      expect(await settled('data: x', 5)).toEqual([0, 2, 3, 4, 5]);
    });

    it('stops on close(): the streams end, and no share timer is left', async () => {
      const { streams, settled } = await paced(12);
      hub!.pace({ data: 'x' }, FIVE_A_TICK);
      await settled('data: x', 5);
      hub!.close();
      await Promise.all(streams.map((s) => s.ended));
      expect(vi.getTimerCount()).toBe(0);
      expect(streams.filter((s) => s.text().includes('data: x'))).toHaveLength(5);
    });
  });

  it('ends every stream on close() and refuses new ones', async () => {
    const budget = { max: 10, open: 0 };
    const { port } = await start(budget);
    const a = await openStream(port);
    const b = await openStream(port);
    await until(() => hub!.size() === 2);
    hub!.close();
    await Promise.all([a.ended, b.ended]);
    expect(budget.open).toBe(0);
    expect((await openStream(port)).status).toBe(503);
  });
});
