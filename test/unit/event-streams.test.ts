/**
 * The event-stream hub every pushing surface uses: wire format, the shared bound, heartbeats,
 * `Last-Event-ID`, broadcast, and `close()` ending every stream.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createEventStreamHub, formatEvent, type EventStreamHub, type StreamBudget } from '../../src/core/event-streams.js';
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
