/**
 * Target: the floor. A bare node:http server that does what any trivial server for this protocol
 * must do — route, check the key, read and parse a POST body, answer 304 to a matching
 * If-None-Match, 204 to a CORS preflight, 200 to a usage report — but serves precomputed answers
 * (the same bytes flag-proxy gave for a sample context, gzipped once for clients that accept it;
 * flag-proxy's own header fields on its 304s, preflights and health, since fields cost to write
 * too) instead of evaluating anything, and keeps no usage counts. Like flag-proxy, it holds one of
 * node's tick objects (src/tick-shape.ts): without it, a full collection between two slices could
 * leave this server's `process.nextTick` slower for the rest of the run, and the floor with it.
 */
import { createHash } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { holdTickShape } from '../../src/tick-shape.js';
import { serveTarget } from './serve.js';

interface Answer {
  body: Buffer;
  /** The body gzipped once, for clients that accept it (as a CDN would keep it). */
  gzipped: Buffer;
  etag: string;
}

function answer(body: string): Answer {
  const buffer = Buffer.from(body, 'utf8');
  return { body: buffer, gzipped: gzipSync(buffer), etag: `W/"${buffer.length.toString(16)}-${createHash('sha1').update(buffer).digest('base64').slice(0, 27)}"` };
}

serveTarget(async (config) => {
  if (!config.bare) throw new Error('bare answers are missing');
  const full = answer(config.bare.full);
  const named = answer(config.bare.named);
  const key = config.clientKey;
  const { notModified, health, preflight } = config.bare;
  /** Where the value of the field `name` is in `fields`. */
  const valueAt = (fields: string[], name: string): number => {
    const at = fields.findIndex((field, i) => i % 2 === 0 && field.toLowerCase() === name) + 1;
    if (at === 0) throw new Error(`flag-proxy's fields have no ${name}`);
    return at;
  };
  const allowHeadersAt = valueAt(preflight, 'access-control-allow-headers');
  const tagAt = valueAt(notModified, 'etag');

  const write = (req: IncomingMessage, res: ServerResponse, status: 200 | 304 | 400, chosen: Answer | undefined): void => {
    if (!chosen) {
      res.writeHead(status, { 'access-control-allow-origin': '*' });
      res.end();
      return;
    }
    if (status === 304) {
      // flag-proxy's fields on its 304s, with this server's own tag.
      const fields = notModified.slice();
      fields[tagAt] = chosen.etag;
      res.writeHead(304, fields);
      res.end();
      return;
    }
    const gzip = status === 200 && /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
    const body = gzip ? chosen.gzipped : chosen.body;
    res.writeHead(status, {
      'access-control-allow-origin': '*',
      'access-control-expose-headers': 'ETag',
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'public, max-age=2',
      vary: 'Accept-Encoding',
      etag: chosen.etag,
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      ...(status === 200 ? { 'content-length': String(body.length) } : {}),
    });
    res.end(status === 200 ? body : undefined);
  };

  /** Reads a request's body and parses it as JSON; `undefined` when it is not JSON. */
  const readJson = (req: IncomingMessage, then: (body: unknown) => void): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      then(body);
    });
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (req.method === 'OPTIONS') {
      // flag-proxy's fields, the requested headers reflected as it reflects them.
      const fields = preflight.slice();
      fields[allowHeadersAt] = req.headers['access-control-request-headers'] ?? '';
      res.writeHead(204, fields);
      res.end();
      return;
    }
    if (path === '/proxy/health') {
      res.writeHead(200, health);
      res.end('ok');
      return;
    }
    if (path === '/proxy/client/metrics' && req.method === 'POST') {
      // A usage report: checked and parsed as any server must, then acknowledged (nothing kept).
      if (req.headers.authorization !== key) {
        res.writeHead(401, { 'access-control-allow-origin': '*', 'content-type': 'text/plain; charset=utf-8' });
        res.end('Unauthorized');
        return;
      }
      readJson(req, (report) => {
        const ok = typeof (report as { bucket?: { toggles?: unknown } } | undefined)?.bucket?.toggles === 'object';
        res.writeHead(ok ? 200 : 400, { 'access-control-allow-origin': '*', 'content-type': 'text/plain; charset=utf-8', 'content-length': '2' });
        res.end(ok ? 'OK' : 'no');
      });
      return;
    }
    if (path !== '/proxy') {
      res.writeHead(404);
      res.end();
      return;
    }
    if (req.headers.authorization !== key) {
      res.writeHead(401, { 'access-control-allow-origin': '*', 'content-type': 'text/plain; charset=utf-8' });
      res.end('Unauthorized');
      return;
    }
    if (req.method === 'GET') {
      write(req, res, req.headers['if-none-match'] === full.etag ? 304 : 200, full);
      return;
    }
    readJson(req, (body) => {
      if (body === undefined) write(req, res, 400, undefined);
      else write(req, res, 200, Array.isArray((body as { toggles?: unknown }).toggles) ? named : full);
    });
  };

  const tickShape = holdTickShape();
  return { server: http.createServer(handle), close: async () => tickShape.release() };
});
