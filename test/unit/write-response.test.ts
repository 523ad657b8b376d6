/** The writer of normalized responses (src/core/http.ts), where the handler cannot be seen failing. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { jsonError, writeResponse } from '../../src/core/http.js';

let server: http.Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** The status line of the answer to one GET, as it came over the wire. */
async function statusLine(handle: http.RequestListener): Promise<string> {
  server = http.createServer(handle);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('end', () => resolve(received.split('\r\n')[0]!));
    socket.on('error', reject);
    socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  });
}

describe('writeResponse', () => {
  it('answers an error with its own status message after node refused a header of the first answer', async () => {
    const line = await statusLine((req, res) => {
      expect(() => writeResponse(req, res, { status: 200, headers: { 'X-Bad': 'a\nb' }, body: 'ok' })).toThrow();
      writeResponse(req, res, jsonError(500, 'Internal error'));
    });
    expect(line).toBe('HTTP/1.1 500 Internal Server Error');
  });

  it('leaves every header it wrote readable on the response, for the host (loggers read res.getHeader)', async () => {
    let seen: http.OutgoingHttpHeaders = {};
    await statusLine((req, res) => {
      res.on('finish', () => (seen = res.getHeaders()));
      writeResponse(req, res, { status: 200, headers: { 'Content-Type': 'application/json; charset=utf-8' }, body: '{"toggles":[]}' }, [
        'Access-Control-Allow-Origin',
        '*',
      ]);
    });
    expect(seen).toMatchObject({
      'access-control-allow-origin': '*',
      'content-type': 'application/json; charset=utf-8',
      'content-length': 14,
      etag: expect.stringMatching(/^W\/"e-/),
    });
  });
});
