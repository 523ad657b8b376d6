/**
 * The bare server is the floor the benchmark's ratios divide by, so it must write what flag-proxy
 * writes: its bodies, and the header fields of its 304s, preflights and health answers. Both
 * targets run as the benchmark runs them (child processes under the runner's protocol).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_KEY, generateFlags, namedToggles, UPSTREAM_TOKEN } from '../../bench/flags.js';
import { startTarget, targetConfig, type TargetProcess } from '../../bench/processes.js';
import { bareAnswers, checkTarget, fieldDifference, ownFields, request, verifyAgainstReference, type Reference } from '../../bench/verify.js';
import { createTestFlagServer, type TestFlagServer } from '../../src/testing/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const entry = (name: string): string => path.join(ROOT, 'bench', 'targets', `${name}.ts`);
const TSX = ['--import', 'tsx'];

describe('header fields of answers', () => {
  it('leaves out what node adds to every answer itself', () => {
    const rawHeaders = ['ETag', 'W/"2-x"', 'Date', 'Sun, 29 Nov 2026 18:00:00 GMT', 'Connection', 'keep-alive', 'Keep-Alive', 'timeout=5', 'Vary', 'Accept-Encoding'];
    expect(ownFields({ status: 200, headers: {}, rawHeaders, body: '' })).toEqual(['ETag', 'W/"2-x"', 'Vary', 'Accept-Encoding']);
  });

  it('compares names in any case and in any order, values exactly', () => {
    expect(fieldDifference(['ETag', 'W/"a"', 'Vary', 'Origin'], ['vary', 'Origin', 'etag', 'W/"a"'])).toBeUndefined();
    expect(fieldDifference(['ETag', 'W/"a"'], ['ETag', 'W/"b"'])).toBe('missing etag: W/"b"; extra etag: W/"a"');
    expect(fieldDifference(['Vary', 'Origin'], ['Vary', 'Origin', 'ETag', 'W/"a"'])).toBe('missing etag: W/"a"');
  });
});

describe('the bare server', () => {
  const { features, segments } = generateFlags(40);
  const named = namedToggles(features);
  let upstream: TestFlagServer;
  let ours: TargetProcess;
  let bare: TargetProcess | undefined;
  let reference: Reference;

  beforeAll(async () => {
    upstream = await createTestFlagServer({ features, segments, clientTokens: [UPSTREAM_TOKEN] });
    const config = targetConfig(upstream, path.join(ROOT, 'src', 'index.ts'));
    ours = await startTarget('flag-proxy', { entry: entry('flag-proxy'), config, core: undefined, nodeArgs: TSX });
    reference = await verifyAgainstReference(ours.base, undefined, CLIENT_KEY, named);
    bare = await startTarget('bare-node', { entry: entry('bare-node'), config: { ...config, bare: bareAnswers(reference) }, core: undefined, nodeArgs: TSX });
  }, 60_000);

  afterAll(async () => {
    await bare?.stop();
    await ours?.stop();
    await upstream?.close();
  });

  it("answers health and preflights with flag-proxy's own header fields", async () => {
    const target = bare as TargetProcess;
    const health = await request(target.base, 'GET', '/proxy/health');
    expect(health.status).toBe(200);
    expect(health.body).toBe('ok');
    expect(fieldDifference(ownFields(health), reference.fields.health)).toBeUndefined();
    // flag-proxy's health carries Express's ETag and Vary, which the bare server used to leave out.
    expect(health.headers.etag).toMatch(/^W\/"2-/);
    expect(health.headers.vary).toBe('Accept-Encoding');

    const asked = 'authorization,x-custom';
    const preflight = await request(target.base, 'OPTIONS', '/proxy', { origin: 'https://app.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': asked });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-headers']).toBe(asked);
    expect(preflight.headers['access-control-expose-headers']).toBe('ETag');
    const theirs = await request(ours.base, 'OPTIONS', '/proxy', { origin: 'https://app.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': asked });
    expect(fieldDifference(ownFields(preflight), ownFields(theirs))).toBeUndefined();
  });

  it('passes the check before timing, and fails it when its fields are not flag-proxy\'s', async () => {
    const target = bare as TargetProcess;
    await expect(checkTarget('bare-node', target.base, reference, CLIENT_KEY, named)).resolves.toBeUndefined();
    const withMoreOnHealth: Reference = { ...reference, fields: { ...reference.fields, health: [...reference.fields.health, 'X-Extra', '1'] } };
    await expect(checkTarget('bare-node', target.base, withMoreOnHealth, CLIENT_KEY, named)).rejects.toThrow(/health answer's header fields are not flag-proxy's: missing x-extra: 1/);
    // As it was before: its 304 with Content-Type and Vary, which flag-proxy's has not.
    const moreOn304: Reference = { ...reference, fields: { ...reference.fields, notModified: [...reference.fields.notModified, 'Vary', 'Accept-Encoding'] } };
    await expect(checkTarget('bare-node', target.base, moreOn304, CLIENT_KEY, named)).rejects.toThrow(/notModified answer's header fields are not flag-proxy's: missing vary: Accept-Encoding/);
  });
});
