/**
 * The precomputed CORS answers against the `cors` middleware they stand in for: the same fields,
 * values and order on the wire, for every setting a fixed origin can be combined with.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import cors from 'cors';
import { afterEach, describe, expect, it } from 'vitest';
import type { ResolvedCors } from '../../src/config/resolve.js';
import { createCorsPolicy } from '../../src/core/cors.js';
import { writeResponse } from '../../src/core/http.js';
import { rawRequest } from '../support/harness.js';

const DEFAULTS: ResolvedCors = {
  origin: '*',
  methods: 'GET, POST',
  allowedHeaders: undefined,
  exposedHeaders: 'ETag',
  credentials: false,
  maxAge: 172_800,
  preflightContinue: false,
  optionsSuccessStatus: 204,
};

const SETTINGS: Array<Partial<ResolvedCors>> = [
  {},
  { origin: 'https://a.example' },
  { origin: 'https://a.example', credentials: true, allowedHeaders: 'authorization' },
  { credentials: true },
  { methods: ['GET', 'PUT'], exposedHeaders: ['ETag', 'X-Y'] },
  { allowedHeaders: ['authorization', 'x-b'] },
  { allowedHeaders: [] },
  { allowedHeaders: '' },
  { exposedHeaders: '' },
  { methods: '' },
  { maxAge: 0 },
  { optionsSuccessStatus: 200 },
];

const REQUESTS: Array<Record<string, string>> = [
  { origin: 'https://a.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization,unleash-sdk' },
  { origin: 'https://b.example', 'access-control-request-method': 'GET' },
  {},
];

let servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  servers = [];
});

async function serve(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = http.createServer(handle);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The fields of an answer in wire order, without the ones node adds itself. */
async function fields(url: string, method: string, headers: Record<string, string>): Promise<string[]> {
  const { rawHeaders } = await rawRequest(url, { method, headers });
  const out: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (!/^(date|connection|keep-alive)$/i.test(rawHeaders[i]!)) out.push(`${rawHeaders[i]}: ${rawHeaders[i + 1]}`);
  }
  return out;
}

describe('createCorsPolicy', () => {
  it.each(SETTINGS)('answers a preflight as the cors middleware does (%o)', async (setting) => {
    const settings = { ...DEFAULTS, ...setting };
    const policy = createCorsPolicy(settings);
    const middleware = cors({ ...settings });
    const expected = await serve((req, res) => middleware(req, res, () => res.end()));
    const actual = await serve((req, res) => {
      if (!policy.answerPreflight(req, res)) res.end('not answered');
    });
    for (const headers of REQUESTS) {
      expect(await fields(actual, 'OPTIONS', headers)).toEqual(await fields(expected, 'OPTIONS', headers));
    }
  });

  it.each(SETTINGS)('gives the fields the cors middleware sets on other answers (%o)', async (setting) => {
    const settings = { ...DEFAULTS, ...setting };
    const policy = createCorsPolicy(settings);
    const middleware = cors({ ...settings });
    const health = { status: 200, headers: { 'Content-Type': 'text/plain; charset=utf-8' }, body: 'ok' };
    const expected = await serve((req, res) => middleware(req, res, () => writeResponse(req, res, health)));
    const actual = await serve((req, res) => writeResponse(req, res, health, policy.fixed));
    for (const headers of REQUESTS) {
      expect(await fields(actual, 'GET', headers)).toEqual(await fields(expected, 'GET', headers));
    }
  });

  it.each([{ origin: ['https://a.example'] }, { origin: true }, { origin: false }, { preflightContinue: true }] as Array<Partial<ResolvedCors>>)(
    'leaves the preflight to the middleware when the answer depends on more than the settings (%o)',
    async (setting) => {
      const policy = createCorsPolicy({ ...DEFAULTS, ...setting });
      const url = await serve((req, res) => res.end(policy.answerPreflight(req, res) ? '' : 'not answered'));
      expect((await rawRequest(url, { method: 'OPTIONS', headers: REQUESTS[0] })).body).toBe('not answered');
    },
  );

  it('leaves the preflight to the middleware when a host set headers first (it merges Vary with them)', async () => {
    const policy = createCorsPolicy(DEFAULTS);
    const url = await serve((req, res) => {
      res.setHeader('Vary', 'Cookie');
      res.end(policy.answerPreflight(req, res) ? '' : 'not answered');
    });
    expect((await rawRequest(url, { method: 'OPTIONS', headers: REQUESTS[0] })).body).toBe('not answered');
  });
});
