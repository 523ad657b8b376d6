/** The writer of normalized responses (src/core/http.ts), where the handler cannot be seen failing. */
import diagnostics from 'node:diagnostics_channel';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { constantText, jsonError, sentWithTag, withMembers, writeResponse, type ConstantHeads, type HeaderList } from '../../src/core/http.js';

let server: http.Server | undefined;
async function closeServer(): Promise<void> {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
}
afterEach(closeServer);

/** The whole answer to one request (`GET /` unless given), as it came over the wire, without its Date. */
async function rawAnswer(handle: http.RequestListener, head = 'GET / HTTP/1.1'): Promise<string> {
  server ??= http.createServer(handle);
  if (!server.listening) await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('end', () => resolve(received.replace(/\r\nDate: [^\r]*/, '')));
    socket.on('error', reject);
    socket.write(`${head}\r\nHost: x\r\nConnection: close\r\n\r\n`);
  });
}

/** Wraps `res.end` so that what it is given goes into `into`, then on to node. */
function recordEnd(res: http.ServerResponse, into: unknown[]): void {
  const end = res.end.bind(res) as (chunk?: unknown) => http.ServerResponse;
  res.end = ((chunk?: unknown) => {
    into.push(chunk);
    return end(chunk);
  }) as typeof res.end;
}

/** The status line of the answer to one GET. */
async function statusLine(handle: http.RequestListener): Promise<string> {
  return (await rawAnswer(handle)).split('\r\n')[0]!;
}

describe('writeResponse', () => {
  it('answers an error with its own status message after node refused a header of the first answer', async () => {
    const line = await statusLine((req, res) => {
      expect(() => writeResponse(req, res, { status: 200, headers: { 'X-Bad': 'a\nb' }, body: 'ok' })).toThrow();
      writeResponse(req, res, jsonError(500, 'Internal error'));
    });
    expect(line).toBe('HTTP/1.1 500 Internal Server Error');
  });

  it('writes one field per name whatever the case each was given in, the later value in the earlier place', async () => {
    const answer = await rawAnswer((req, res) => {
      writeResponse(req, res, { status: 200, headers: { 'Content-Type': 'text/plain', VARY: 'Origin', 'x-a': '2', 'X-B': '2', 'X-~': 'tilde' }, body: 'ok' }, [
        'X-A',
        '1',
        'x-b',
        '1',
        'content-type',
        'text/html',
        'Content-Typf',
        'kept apart',
        'X-^',
        'caret',
      ]);
    });
    const fields = answer.split('\r\n\r\n')[0]!.split('\r\n').slice(1);
    // Names that differ in a letter's case are one field; `Content-Typf` is not `Content-Type`, nor
    // `^` `~` (0x5e, 0x7e: apart by the bit that tells a letter's case).
    expect(fields.filter((field) => /^x-a:/i.test(field))).toEqual(['X-A: 2']);
    expect(fields.filter((field) => /^x-b:/i.test(field))).toEqual(['x-b: 2']);
    expect(fields).toContain('Content-Typf: kept apart');
    expect(fields).toEqual(expect.arrayContaining(['X-^: caret', 'X-~: tilde']));
    expect(fields.filter((field) => /^content-type:/i.test(field))).toEqual(['content-type: text/plain']);
    expect(fields.filter((field) => /^vary:/i.test(field))).toEqual(['VARY: Origin, Accept-Encoding']);
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

  it('writes the head in one call where nothing but node could read its fields: the same bytes as field by field', async () => {
    const healthy = constantText(200, 'ok');
    const cors: HeaderList = ['Access-Control-Allow-Origin', '*', 'Access-Control-Expose-Headers', 'ETag'];
    const answers = [
      { response: healthy, head: 'GET / HTTP/1.1' },
      { response: healthy, head: 'HEAD / HTTP/1.1' },
      { response: { status: 200, headers: { 'Content-Type': 'application/json; charset=utf-8', 'Cache-control': 'public, max-age=2' }, body: '{"toggles":[]}' }, head: 'GET / HTTP/1.1' },
      { response: { status: 200, headers: { 'Content-Type': 'application/json; charset=utf-8' }, body: '{"toggles":[]}' }, head: `GET / HTTP/1.1\r\nIf-None-Match: W/"e-${'x'.repeat(27)}"` },
      { response: { status: 204, headers: { 'Access-Control-Max-Age': '172800' } }, head: 'OPTIONS / HTTP/1.1' },
    ];
    for (const { response, head } of answers) {
      const fieldsLeft: string[][] = [];
      const bytes: string[] = [];
      for (const observed of [false, true]) {
        const constants: ConstantHeads = new WeakMap();
        bytes.push(
          await rawAnswer((req, res) => {
            if (observed) res.on('finish', () => undefined);
            writeResponse(req, res, response, cors, constants);
            fieldsLeft.push(res.getHeaderNames());
          }, head),
        );
        await closeServer();
      }
      expect(bytes[0]).toBe(bytes[1]);
      expect(bytes[0]).toMatch(/^HTTP\/1\.1 \d{3} [^\r]*\r\nAccess-Control-Allow-Origin: \*\r\nAccess-Control-Expose-Headers: ETag\r\n/);
      // Unobserved, node was handed the list: nothing was kept on the response to be read back.
      expect(fieldsLeft[0]).toEqual([]);
      expect(fieldsLeft[1]).toContain('access-control-allow-origin');
    }
  });

  it('keeps every field readable wherever a host could look at them: its listeners, its wrappers of node\'s writers, node\'s finish channel', async () => {
    const cases: Array<[string, (res: http.ServerResponse, seen: (headers: http.OutgoingHttpHeaders) => void) => () => void]> = [
      ['a finish listener (morgan, pino-http)', (res, seen) => (res.on('finish', () => seen(res.getHeaders())), () => undefined)],
      ['a close listener', (res, seen) => (res.on('close', () => seen(res.getHeaders())), () => undefined)],
      ['a prefinish listener', (res, seen) => (res.on('prefinish', () => seen(res.getHeaders())), () => undefined)],
      [
        'a wrapped writeHead (on-headers, compression)',
        (res, seen) => {
          const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => http.ServerResponse;
          res.writeHead = ((...args: unknown[]) => {
            const result = writeHead(...args);
            seen(res.getHeaders());
            return result;
          }) as typeof res.writeHead;
          return () => undefined;
        },
      ],
      [
        'a wrapped end (express-winston, tracers)',
        (res, seen) => {
          const end = res.end.bind(res) as (...args: unknown[]) => http.ServerResponse;
          res.end = ((...args: unknown[]) => {
            seen(res.getHeaders());
            return end(...args);
          }) as typeof res.end;
          return () => undefined;
        },
      ],
      [
        "a subscriber to node's http.server.response.finish",
        (res, seen) => {
          const finished = (message: unknown) => {
            if ((message as { response?: unknown }).response === res) seen(res.getHeaders());
          };
          diagnostics.subscribe('http.server.response.finish', finished);
          return () => diagnostics.unsubscribe('http.server.response.finish', finished);
        },
      ],
    ];
    for (const [name, observe] of cases) {
      let seen: http.OutgoingHttpHeaders = {};
      let stop = (): void => undefined;
      await rawAnswer((req, res) => {
        stop = observe(res, (headers) => (seen = headers));
        writeResponse(req, res, constantText(200, 'ok'), ['Access-Control-Allow-Origin', '*'], new WeakMap());
      });
      stop();
      await closeServer();
      expect({ name, seen }).toMatchObject({ name, seen: { 'access-control-allow-origin': '*', 'content-length': 2, etag: expect.stringMatching(/^W\/"2-/) } });
    }
  });

  it("keeps the fields readable on a response of another class whose one 'finish' listener is not node's (fastify's inject, a host's own class)", () => {
    // node's server puts exactly one listener on each of its plain ServerResponses; a response of
    // another class may carry one of its own and nothing of node's (docs/frameworks.md).
    class InjectedResponse extends http.ServerResponse {}
    const req = new http.IncomingMessage(new net.Socket());
    req.method = 'GET';
    const res = new InjectedResponse(req);
    res.on('finish', () => undefined);
    writeResponse(req, res, constantText(200, 'ok'), ['Access-Control-Allow-Origin', '*'], new WeakMap());
    expect(res.getHeaders()).toMatchObject({ 'access-control-allow-origin': '*', 'content-length': 2, etag: expect.stringMatching(/^W\/"2-/) });
  });

  it('writes a constant answer with the fields made on its first plain GET, while each request still decides freshness and HEAD', async () => {
    const healthy = constantText(200, 'ok');
    const constants: ConstantHeads = new WeakMap();
    const cors: HeaderList = ['Access-Control-Allow-Origin', '*'];
    let leading = cors;
    let seen: http.OutgoingHttpHeaders = {};
    const handle: http.RequestListener = (req, res) => {
      res.on('finish', () => (seen = res.getHeaders()));
      writeResponse(req, res, healthy, leading, constants);
    };
    const first = await rawAnswer(handle);
    expect(first).toMatch(/^HTTP\/1\.1 200 OK\r\nAccess-Control-Allow-Origin: \*\r\nContent-Type: text\/html; charset=utf-8\r\nETag: W\/"2-[^"]+"\r\nVary: Accept-Encoding\r\nContent-Length: 2\r\n/);
    expect(first.endsWith('\r\n\r\nok')).toBe(true);
    expect(constants.get(healthy)?.leading).toBe(cors);
    // Made once, written as made; the host still reads every field.
    expect(await rawAnswer(handle)).toBe(first);
    expect(seen).toMatchObject({ 'access-control-allow-origin': '*', 'content-length': 2, vary: 'Accept-Encoding' });
    const etag = /ETag: ([^\r]+)/.exec(first)![1]!;
    expect(await rawAnswer(handle, `GET / HTTP/1.1\r\nIf-None-Match: ${etag}`)).toMatch(/^HTTP\/1\.1 304 Not Modified\r\n/);
    const head = await rawAnswer(handle, 'HEAD / HTTP/1.1');
    expect(head).toMatch(/Content-Length: 2\r\n/);
    expect(head.endsWith('\r\n\r\n')).toBe(true);
    // Other leading fields than those it was made with: made afresh, the memo left as it was.
    leading = ['Access-Control-Allow-Origin', 'https://app.example'];
    expect(await rawAnswer(handle)).toContain('Access-Control-Allow-Origin: https://app.example\r\n');
    expect(constants.get(healthy)?.leading).toBe(cors);
  });

  it('hands node a long string body as its UTF-8 bytes, the same bytes on the wire, whether it writes the head at once or field by field', async () => {
    // Over 2,048 UTF-16 units, with characters of two, three and four UTF-8 bytes.
    const body = JSON.stringify({ toggles: Array.from({ length: 60 }, (_, i) => ({ name: `flag-${i}-é€😀`, enabled: true })) });
    expect(body.length).toBeGreaterThan(2048);
    const bytes = Buffer.from(body);
    expect(bytes.length).toBeGreaterThan(body.length);
    for (const hostSetHeader of [false, true]) {
      const ended: unknown[] = [];
      const answer = await rawAnswer((req, res) => {
        // A host's own header makes the writer go field by field over what the host set.
        if (hostSetHeader) res.setHeader('X-Host', 'yes');
        recordEnd(res, ended);
        writeResponse(req, res, { status: 200, headers: { 'Content-Type': 'application/json; charset=utf-8' }, body });
      });
      expect(Buffer.isBuffer(ended[0])).toBe(true);
      const [head, ...rest] = answer.split('\r\n\r\n');
      expect(head).toContain(`Content-Length: ${bytes.length}`);
      expect(head?.includes('X-Host: yes')).toBe(hostSetHeader);
      expect(Buffer.from(rest.join('\r\n\r\n'), 'latin1').toString('utf8')).toBe(body);
      // rawAnswer's server keeps its first handler: the next one gets a server of its own.
      await closeServer();
    }
    // A short one stays a string: node writes it with the head in one piece.
    const short: unknown[] = [];
    await rawAnswer((req, res) => {
      recordEnd(res, short);
      writeResponse(req, res, { status: 200, headers: { 'Content-Type': 'application/json; charset=utf-8' }, body: '{"toggles":[]}' });
    });
    expect(short[0]).toBe('{"toggles":[]}');
  });
});

describe('sentWithTag', () => {
  const find = (ifNoneMatch: string, tag: string) => sentWithTag(ifNoneMatch, tag, '"');
  const tag = 'W/"21fe-c31TPSz38dXsuC5EQCD4MlFxeyY.4G13Fwwg3Rx8SzbCDDjq01"';
  const requestTag = '4G13Fwwg3Rx8SzbCDDjq01';

  it('finds the one ETag an SDK sends back, as it was sent', () => {
    expect(find(tag, requestTag)).toBe(tag);
    expect(find(`  ${tag}\t`, requestTag)).toBe(tag);
  });

  it('finds it in a list, trimmed, wherever it stands', () => {
    expect(find(`W/"a-b", ${tag}`, requestTag)).toBe(tag);
    expect(find(`${tag} ,W/"a-b"`, requestTag)).toBe(tag);
    expect(find(`W/"a-b",${tag},"c"`, requestTag)).toBe(tag);
  });

  it('finds nothing where no ETag ends with the tag', () => {
    expect(find('W/"21fe-c31TPSz38dXsuC5EQCD4MlFxeyY.other"', requestTag)).toBeUndefined();
    // The tag inside a longer ETag, or with its closing quote elsewhere, is not the end of one.
    expect(find(`${tag.slice(0, -1)}x"`, requestTag)).toBeUndefined();
    expect(find('W/"a.4G13", Fwwg3Rx8SzbCDDjq01"', requestTag)).toBeUndefined();
    expect(find(`"${requestTag}"`, requestTag)).toBeUndefined();
    expect(find('', requestTag)).toBeUndefined();
    expect(find(',', requestTag)).toBeUndefined();
    expect(find('*', requestTag)).toBeUndefined();
  });

  it('finds nothing where one character of the tag differs, wherever it is', () => {
    for (const at of [0, 7, requestTag.length - 1]) {
      const other = `${requestTag.slice(0, at)}${requestTag[at] === 'A' ? 'B' : 'A'}${requestTag.slice(at + 1)}`;
      expect(find(tag.replace(requestTag, other), requestTag)).toBeUndefined();
    }
  });

  it('finds the tag followed by what the surface writes after it, and nothing without it', () => {
    const ofrep = 'W/"21fe-c31TPSz38dXsuC5EQCD4MlFxeyY.4G13Fwwg3Rx8SzbCDDjq01.lq4x"';
    expect(sentWithTag(ofrep, '4G13Fwwg3Rx8SzbCDDjq01', '.lq4x"')).toBe(ofrep);
    expect(sentWithTag(ofrep, '4G13Fwwg3Rx8SzbCDDjq01', '.lq4y"')).toBeUndefined();
    expect(sentWithTag(ofrep, '4G13Fwwg3Rx8SzbCDDjq01', '"')).toBeUndefined();
  });
});

describe('withMembers', () => {
  const members = `,"eventStreams":[{"type":"sse","url":"http://x/ofrep/v1/sse?t=é"}]`;
  const expected = (object: unknown) => ({ ...(object as object), eventStreams: [{ type: 'sse', url: 'http://x/ofrep/v1/sse?t=é' }] });

  it('adds members before the closing brace of a short answer, as a string', () => {
    const object = { flags: [{ key: 'a', value: true }] };
    const out = withMembers(JSON.stringify(object), members);
    expect(typeof out).toBe('string');
    expect(JSON.parse(out as string)).toEqual(expected(object));
  });

  it('writes a long answer and its members once as UTF-8 bytes, multi-byte characters included', () => {
    const object = { flags: Array.from({ length: 200 }, (_, i) => ({ key: `flag-${i}`, value: 'ünïcødé ✓', reason: 'STATIC' })) };
    const text = JSON.stringify(object);
    expect(text.length).toBeGreaterThan(2048);
    const out = withMembers(text, members);
    expect(Buffer.isBuffer(out)).toBe(true);
    expect((out as Buffer).length).toBe(Buffer.byteLength(text) - 1 + Buffer.byteLength(members) + 1);
    expect(JSON.parse((out as Buffer).toString('utf8'))).toEqual(expected(object));
  });

  it('takes an answer that is already bytes', () => {
    const object = { flags: [{ key: 'ß', value: 1 }] };
    const out = withMembers(Buffer.from(JSON.stringify(object)), members);
    expect(JSON.parse((out as Buffer).toString('utf8'))).toEqual(expected(object));
  });
});
