/**
 * The unleash-client internals flag-proxy uses (src/evaluation/unleash-internals.ts), checked for
 * the shape and behaviour the flag repository relies on, so an unleash-client release that moves
 * or changes them fails here, loudly, rather than in production. package.json pins the range.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { resolveBootstrapProvider, type FeatureInterface, type Segment } from '../../src/evaluation/unleash-internals.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const FEATURES = [{ name: 'a', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [], segments: [1] }] }] as unknown as FeatureInterface[];
const SEGMENTS = [{ id: 1, constraints: [] }] as unknown as Segment[];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(full) : entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('unleash-client internals', () => {
  it('are imported by src/evaluation/unleash-internals.ts alone', () => {
    const importers = sourceFiles(path.join(root, 'src'))
      .filter((file) => /from\s+'unleash-client\/lib\//.test(readFileSync(file, 'utf8')))
      .map((file) => path.relative(root, file).split(path.sep).join('/'));
    expect(importers).toEqual(['src/evaluation/unleash-internals.ts']);
  });

  it('come from the unleash-client release package.json pins', () => {
    const pinned = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies['unleash-client'];
    expect(pinned).toMatch(/^~6\.12\.\d+$/);
    const installed = (JSON.parse(readFileSync(path.join(root, 'node_modules', 'unleash-client', 'package.json'), 'utf8')) as { version: string }).version;
    expect(installed).toMatch(/^6\.12\.\d+$/);
  });

  it('resolveBootstrapProvider hands back a provider the caller gives', async () => {
    const own = { readBootstrap: async () => ({ version: 2, features: FEATURES }) };
    expect(resolveBootstrapProvider({ bootstrapProvider: own }, 'app', 'instance')).toBe(own);
  });

  it('reads nothing when no bootstrap is configured', async () => {
    expect(await resolveBootstrapProvider({}, 'app', 'instance').readBootstrap()).toBeUndefined();
  });

  it('reads bootstrap data as a version 2 flag set, with its segments, as a copy', async () => {
    const data = [...FEATURES];
    const read = await resolveBootstrapProvider({ data, segments: SEGMENTS }, 'app', 'instance').readBootstrap();
    expect(read).toEqual({ version: 2, segments: SEGMENTS, features: FEATURES });
    expect(read?.features).not.toBe(data);
  });

  it('reads a bootstrap file as JSON', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'flag-proxy-bootstrap-'));
    try {
      const file = path.join(dir, 'flags.json');
      writeFileSync(file, JSON.stringify({ version: 2, features: FEATURES, segments: SEGMENTS }));
      expect(await resolveBootstrapProvider({ filePath: file }, 'app', 'instance').readBootstrap()).toEqual({ version: 2, features: FEATURES, segments: SEGMENTS });
      await expect(resolveBootstrapProvider({ filePath: path.join(dir, 'missing.json') }, 'app', 'instance').readBootstrap()).rejects.toThrow(/ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('GETs a bootstrap URL with the app, instance and custom headers; a non-2xx reads nothing', async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers);
      if (req.url === '/missing') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ version: 2, features: FEATURES }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const provider = resolveBootstrapProvider({ url: `${base}/flags`, urlHeaders: { authorization: 'bootstrap-token' } }, 'my-app', 'my-instance');
      expect(await provider.readBootstrap()).toEqual({ version: 2, features: FEATURES });
      expect(seen[0]).toMatchObject({ authorization: 'bootstrap-token', 'unleash-appname': 'my-app', 'unleash-instanceid': 'my-instance' });
      expect(await resolveBootstrapProvider({ url: `${base}/missing` }, 'my-app', 'my-instance').readBootstrap()).toBeUndefined();
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
