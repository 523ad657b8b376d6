/**
 * Issue 20, item 8: the default backup holds every flag rule, so it is readable by its owner only
 * (file 0600 in a directory 0700), also after every atomic rewrite; `backup: false` turns it off.
 */
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFileStorageProvider, createFlagProxy, resolveConfig, type FeaturesResponse } from 'flag-proxy';
import { createTestFlagServer } from 'flag-proxy/testing';
import { jsonPieces } from '../../src/evaluation/file-storage.js';
import { useTempTmpdir } from '../support/temp-tmpdir.js';

const SNAPSHOT: FeaturesResponse = { version: 2, features: [{ name: 'a', enabled: true, strategies: [], variants: [] }] } as never;
const mode = async (file: string) => (await stat(file)).mode & 0o777;
const quiet = { debug() {}, info() {}, warn() {}, error() {}, fatal() {} };

// os.tmpdir() follows TMPDIR: each test gets a temp directory of its own.
const tempDir = useTempTmpdir('fp-storage-');

/** The per-user directory the default backup lives in. */
const privateDir = () => path.join(tempDir(), `flag-proxy-${process.getuid?.() ?? 'user'}`);

describe('createFileStorageProvider (the default backup)', () => {
  it('writes the file 0600 in a per-user directory 0700 under the temp directory, also after a rewrite', async () => {
    const storage = createFileStorageProvider('scope');
    await storage.set('app', SNAPSHOT);
    const [name] = await readdir(privateDir());
    const file = path.join(privateDir(), name!);
    expect(name).toBe('flag-proxy-backup-scope-app.json');
    expect(await mode(privateDir())).toBe(0o700);
    expect(await mode(file)).toBe(0o600);
    await storage.set('app', { ...SNAPSHOT, version: 3 } as never);
    expect(await mode(file)).toBe(0o600);
    expect(await readdir(privateDir())).toEqual([name]);
    expect((await storage.get('app'))?.version).toBe(3);
  });

  it('writes a large flag set in pieces, as the very text JSON.stringify makes, and reads it back', async () => {
    const features = Array.from({ length: 3000 }, (_, i) => ({
      name: `flag-${i}`,
      enabled: i % 7 !== 0,
      description: i % 5 === 0 ? undefined : `"quoted" \u2028 ünïcode ${i}`,
      strategies: [{ name: 'flexibleRollout', parameters: { rollout: String(i % 100), stickiness: 'default', groupId: `flag-${i}` }, constraints: [] }],
      variants: i % 3 === 0 ? [{ name: 'a', weight: 1000, payload: { type: 'json', value: JSON.stringify({ n: i }) } }] : [],
    }));
    const data = { version: 2, features, segments: [{ id: 1, constraints: [] }, undefined], query: undefined, meta: { etag: null } } as unknown as FeaturesResponse;
    const pieces = [...jsonPieces(data)];
    // More than one piece, none much longer than its share: the set is never one string.
    expect(pieces.length).toBeGreaterThan(5);
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThan(70 * 1024);
    expect(pieces.join('')).toBe(JSON.stringify(data));

    const storage = createFileStorageProvider('scope');
    await storage.set('app', data);
    const [name] = await readdir(privateDir());
    expect(await readFile(path.join(privateDir(), name!), 'utf8')).toBe(JSON.stringify(data));
    expect(await storage.get('app')).toEqual(JSON.parse(JSON.stringify(data)));
  });

  it('writes a flag set without arrays, and an empty one, as JSON.stringify does', () => {
    for (const data of [{ version: 2 }, { version: 2, features: [] }, {}] as unknown as FeaturesResponse[]) {
      expect([...jsonPieces(data)].join('')).toBe(JSON.stringify(data));
    }
  });

  it('tightens a per-user directory and a file left open by an older version', async () => {
    await mkdir(privateDir(), { mode: 0o755 });
    await chmod(privateDir(), 0o755);
    const file = path.join(privateDir(), 'flag-proxy-backup-scope-app.json');
    await writeFile(file, JSON.stringify(SNAPSHOT), { mode: 0o644 });
    const storage = createFileStorageProvider('scope');
    await storage.set('app', SNAPSHOT);
    expect(await mode(privateDir())).toBe(0o700);
    expect(await mode(file)).toBe(0o600);
  });

  it('writes 0600 files in a directory given explicitly, without changing that directory', async () => {
    const own = path.join(tempDir(), 'given');
    await mkdir(own, { mode: 0o755 });
    await chmod(own, 0o755);
    await createFileStorageProvider('scope', own).set('app', SNAPSHOT);
    expect(await mode(path.join(own, 'flag-proxy-backup-scope-app.json'))).toBe(0o600);
    expect(await mode(own)).toBe(0o755);
  });
});

describe('the backup of a proxy', () => {
  it('is written 0600 in the per-user directory by default', async () => {
    const upstream = await createTestFlagServer({ features: [{ name: 'f', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [] }], variants: [] }] as never });
    const proxy = createFlagProxy({ flagUrl: upstream.url, flagApiToken: upstream.token, clientKeys: ['k'], metricsInterval: 0, logger: quiet });
    try {
      await proxy.ready;
      await expect.poll(async () => (await readdir(privateDir()).catch(() => [])).length).toBe(1);
      const [name] = await readdir(privateDir());
      expect(await mode(path.join(privateDir(), name!))).toBe(0o600);
    } finally {
      await proxy.close();
      await upstream.close();
    }
  });

  it('is neither read nor written with backup: false (FLAG_PROXY_BACKUP=false)', async () => {
    const upstream = await createTestFlagServer({ features: [{ name: 'f', enabled: true, strategies: [{ name: 'default', parameters: {}, constraints: [] }], variants: [] }] as never });
    const proxy = createFlagProxy({ flagUrl: upstream.url, flagApiToken: upstream.token, clientKeys: ['k'], metricsInterval: 0, logger: quiet, backup: false });
    try {
      await proxy.ready;
      await new Promise((r) => setTimeout(r, 100));
      expect(await readdir(tempDir())).toEqual([]);
    } finally {
      await proxy.close();
      await upstream.close();
    }
  });

  it('refuses backup: false together with a storageProvider, naming both', () => {
    expect(() =>
      resolveConfig({ flagUrl: 'http://127.0.0.1:1/api/', flagApiToken: 't', clientKeys: ['k'], backup: false, storageProvider: { get: async () => undefined, set: async () => {} } }),
    ).toThrow('Invalid option backup (FLAG_PROXY_BACKUP): false turns the backup off; do not give a storageProvider as well');
  });
});
