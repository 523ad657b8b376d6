/**
 * The built package through its exports map: ESM, CJS and TypeScript consumers of every subpath
 * (node resolves the package's own name from inside it, so `dist` is what gets loaded).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync, symlinkSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);
const SUBPATHS = {
  'flag-proxy': ['createFlagProxy', 'optionsFromEnv', 'FlagProxyError', 'isFlagProxyError', 'Strategy'],
  'flag-proxy/testing': ['createTestFlagServer', 'createMemoryStorageProvider', 'createAdminEventLog'],
  'flag-proxy/admin-events': ['createAdminEventsClient', 'createAdminEventsHandler'],
};

let consumer: string;

beforeAll(async () => {
  await run('npm', ['run', 'build', '--silent'], { cwd: root });
  // A consumer project whose node_modules/flag-proxy is this package, as after an install.
  consumer = mkdtempSync(path.join(tmpdir(), 'flag-proxy-consumer-'));
  mkdirSync(path.join(consumer, 'node_modules'));
  symlinkSync(root, path.join(consumer, 'node_modules', 'flag-proxy'), 'dir');
}, 180_000);

describe('package exports', () => {
  it.each(Object.entries(SUBPATHS))('loads %s from ESM with its named exports', async (subpath, names) => {
    const file = path.join(consumer, 'check.mjs');
    writeFileSync(file, `import * as m from '${subpath}'; console.log(JSON.stringify(Object.keys(m)));`);
    const { stdout } = await run(process.execPath, [file], { cwd: consumer });
    expect(JSON.parse(stdout)).toEqual(expect.arrayContaining(names));
  });

  it.each(Object.entries(SUBPATHS))('loads %s from CommonJS with its named exports', async (subpath, names) => {
    const file = path.join(consumer, 'check.cjs');
    writeFileSync(file, `console.log(JSON.stringify(Object.keys(require('${subpath}'))));`);
    const { stdout } = await run(process.execPath, [file], { cwd: consumer });
    expect(JSON.parse(stdout)).toEqual(expect.arrayContaining(names));
  });

  it('recognises an error thrown by the CJS build in the ESM build', async () => {
    const file = path.join(consumer, 'cross.mjs');
    writeFileSync(
      file,
      `import { createRequire } from 'node:module';
       import { isFlagProxyError } from 'flag-proxy';
       const cjs = createRequire(import.meta.url)('flag-proxy');
       try { cjs.createFlagProxy({}); } catch (e) { console.log(isFlagProxyError(e), e.code); }`,
    );
    const { stdout } = await run(process.execPath, [file], { cwd: consumer });
    expect(stdout.trim()).toBe('true INVALID_OPTION');
  });

  it('type-checks a TypeScript consumer with moduleResolution node16', async () => {
    writeFileSync(
      path.join(consumer, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { module: 'node16', moduleResolution: 'node16', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] }, files: ['check.mts'] }),
    );
    writeFileSync(
      path.join(consumer, 'check.mts'),
      `import { createFlagProxy, type FlagProxyOptions } from 'flag-proxy';
       import { createTestFlagServer } from 'flag-proxy/testing';
       import { createAdminEventsClient } from 'flag-proxy/admin-events';
       const options: FlagProxyOptions = { flagUrl: 'http://x/api/', flagApiToken: 't', clientKeys: ['k'] };
       export const make = () => createFlagProxy(options);
       export const up = createTestFlagServer;
       export const events = createAdminEventsClient;
       // @ts-expect-error refreshInterval is a number
       export const bad: FlagProxyOptions = { refreshInterval: '5' };`,
    );
    symlinkSync(path.join(root, 'node_modules', '@types'), path.join(consumer, 'node_modules', '@types'), 'dir');
    await run(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', consumer], { cwd: consumer });
  });
});
