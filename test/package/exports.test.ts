/**
 * The packed package through its exports map: `npm pack` makes the tarball a user would install,
 * it is unpacked into a consumer project's node_modules (its dependencies linked from this
 * repository, so no network), and ESM, CJS and TypeScript consumers load every subpath from it.
 * Only what `files` ships is there: a missing file fails here.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, symlinkSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);
const SUBPATHS = {
  'flag-proxy': ['createFlagProxy', 'optionsFromEnv', 'FlagProxyError', 'isFlagProxyError', 'Strategy', 'createMultiEnvironmentProxy', 'createFileStorageProvider'],
  'flag-proxy/testing': ['createTestFlagServer', 'createMemoryStorageProvider', 'createAdminEventLog'],
  'flag-proxy/admin-events': ['createAdminEventsClient', 'createAdminEventsHandler'],
  'flag-proxy/express': ['createExpressMiddleware'],
  'flag-proxy/koa': ['createKoaMiddleware'],
  'flag-proxy/fastify': ['createFastifyPlugin'],
  'flag-proxy/fetch': ['createFetchHandler'],
  'flag-proxy/redis': ['createRedisStorageProvider', 'redisStorageOptionsFromEnv'],
  'flag-proxy/openfeature': ['createOpenFeatureProvider'],
};
/** The frameworks the adapters serve: optional peers, never loaded by the package itself. */
const FRAMEWORK = String.raw`^(express|koa|fastify|hono|@koa\/router)(\/|$)`;

/** Like `run`, but a failure shows the command's output (tsc and publint report on stdout). */
const runShowing = (file: string, args: string[], options: { cwd: string }) =>
  run(file, args, options).catch((error: { message: string; stdout?: string; stderr?: string }) => {
    throw new Error(`${error.message}\n${error.stdout ?? ''}${error.stderr ?? ''}`);
  });

let consumer: string;

beforeAll(async () => {
  await run('npm', ['run', 'build', '--silent'], { cwd: root });
  const packDir = mkdtempSync(path.join(tmpdir(), 'flag-proxy-pack-'));
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packDir], { cwd: root });
  const tarball = path.join(packDir, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename);
  // A consumer project whose node_modules/flag-proxy is the unpacked tarball, as after an install.
  consumer = mkdtempSync(path.join(tmpdir(), 'flag-proxy-consumer-'));
  const installed = path.join(consumer, 'node_modules', 'flag-proxy');
  mkdirSync(installed, { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
  expect(existsSync(path.join(installed, 'src'))).toBe(false);
  symlinkSync(path.join(root, 'node_modules'), path.join(installed, 'node_modules'), 'dir');
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
    // skipLibCheck: false checks all of @types/node too: ~10 s of CPU, far more on a busy machine.
  }, 120_000);

  it('type-checks a TypeScript consumer of every adapter with moduleResolution node16', async () => {
    // skipLibCheck: @types/koa 3.0.3 itself does not type-check against content-disposition 1.x's
    // bundled types. Our declarations' own resolution is checked by arethetypeswrong below.
    writeFileSync(
      path.join(consumer, 'tsconfig.adapters.json'),
      JSON.stringify({ compilerOptions: { module: 'node16', moduleResolution: 'node16', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] }, files: ['adapters.mts'] }),
    );
    writeFileSync(
      path.join(consumer, 'adapters.mts'),
      `import type { FlagProxyOptions } from 'flag-proxy';
       import { createExpressMiddleware } from 'flag-proxy/express';
       import { createKoaMiddleware } from 'flag-proxy/koa';
       import { createFastifyPlugin } from 'flag-proxy/fastify';
       import { createFetchHandler } from 'flag-proxy/fetch';
       const options: FlagProxyOptions = { flagUrl: 'http://x/api/', flagApiToken: 't', clientKeys: ['k'] };
       export const viaExpress = createExpressMiddleware(options, { context: (req) => ({ userId: req.get('x-user') }) });
       export const viaKoa = createKoaMiddleware(options, { prefix: '/api/flags', context: (ctx) => ({ userId: String(ctx.state.user) }) });
       export const viaFastify = createFastifyPlugin(options, { context: (request) => ({ userId: request.id }) });
       export const viaFetch: (request: Request) => Promise<Response> = createFetchHandler(options, { prefix: '/api/flags' });
       export const closing: Promise<void> = viaExpress.proxy.close();
       // @ts-expect-error prefix is a string
       createKoaMiddleware(options, { prefix: 1 });
       // @ts-expect-error the Express hook gets an Express request, which has no ctx.state
       createExpressMiddleware(options, { context: (req) => ({ userId: req.state }) });`,
    );
    if (!existsSync(path.join(consumer, 'node_modules', '@types'))) {
      symlinkSync(path.join(root, 'node_modules', '@types'), path.join(consumer, 'node_modules', '@types'), 'dir');
    }
    await runShowing(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(consumer, 'tsconfig.adapters.json')], { cwd: consumer });
  }, 120_000);

  it('recognises an error thrown through an adapter subpath in the main entry, from ESM and CJS', async () => {
    const file = path.join(consumer, 'adapter-error.mjs');
    writeFileSync(
      file,
      `import { createRequire } from 'node:module';
       import { FlagProxyError, isFlagProxyError } from 'flag-proxy';
       import { createKoaMiddleware } from 'flag-proxy/koa';
       const cjs = createRequire(import.meta.url)('flag-proxy/express');
       try { createKoaMiddleware({}); } catch (e) { console.log(e instanceof FlagProxyError, e.code); }
       try { cjs.createExpressMiddleware({}); } catch (e) { console.log(isFlagProxyError(e), e.code); }`,
    );
    const { stdout } = await run(process.execPath, [file], { cwd: consumer });
    expect(stdout.trim().split('\n')).toEqual(['true INVALID_OPTION', 'true INVALID_OPTION']);
  });

  it('never loads Express, Koa, Fastify or Hono when flag-proxy or any subpath is imported, from ESM', async () => {
    // A resolve hook refuses the frameworks, so any import of one anywhere in the graph fails.
    writeFileSync(
      path.join(consumer, 'refuse-frameworks.mjs'),
      `export async function resolve(specifier, context, next) {
         if (new RegExp(${JSON.stringify(FRAMEWORK)}).test(specifier)) throw new Error('framework loaded: ' + specifier);
         return next(specifier, context);
       }`,
    );
    const file = path.join(consumer, 'alone.mjs');
    writeFileSync(
      file,
      `import { register } from 'node:module';
       register('./refuse-frameworks.mjs', import.meta.url);
       const loaded = [];
       for (const subpath of ${JSON.stringify(Object.keys(SUBPATHS))}) { await import(subpath); loaded.push(subpath); }
       // The control: the hook does refuse a framework.
       const control = await import('express').then(() => 'loaded', () => 'refused');
       console.log(JSON.stringify({ loaded, control }));`,
    );
    const { stdout } = await run(process.execPath, [file], { cwd: consumer });
    expect(JSON.parse(stdout)).toEqual({ loaded: Object.keys(SUBPATHS), control: 'refused' });
  });

  it('never loads Express, Koa, Fastify or Hono when flag-proxy or any subpath is required, from CJS', async () => {
    const file = path.join(consumer, 'alone.cjs');
    writeFileSync(
      file,
      `const frameworks = () => Object.keys(require.cache).filter((f) => /node_modules[\\/](express|koa|fastify|hono|@koa[\\/]router)[\\/]/.test(f));
       for (const subpath of ${JSON.stringify(Object.keys(SUBPATHS))}) require(subpath);
       const after = frameworks();
       require('${path.join(root, 'node_modules', 'express').replace(/\\/g, '/')}');
       console.log(JSON.stringify({ after, control: frameworks().length > 0 }));`,
    );
    const { stdout } = await run(process.execPath, [file], { cwd: consumer });
    expect(JSON.parse(stdout)).toEqual({ after: [], control: true });
  });

  it('passes publint and arethetypeswrong for node16 and bundler resolution', { timeout: 120_000 }, async () => {
    const bin = (name: string) => path.join(root, 'node_modules', '.bin', name);
    // publint exits non-zero on any error, and on warnings with --strict.
    const lint = await runShowing(bin('publint'), ['--strict'], { cwd: root });
    expect(lint.stdout).toContain('All good!');
    // attw reads the packed tarball (packed without rebuilding: beforeAll built dist).
    const packDir = mkdtempSync(path.join(tmpdir(), 'flag-proxy-pack-'));
    const packed = await run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', packDir], { cwd: root });
    const tarball = path.join(packDir, packed.stdout.trim().split('\n').pop()!);
    const report = JSON.parse(
      (await run(bin('attw'), [tarball, '--format', 'json', '--profile', 'node16'], { cwd: root, maxBuffer: 64 * 1024 * 1024 }).catch((e: { stdout: string }) => e)).stdout,
    ) as { analysis: { problems: Array<{ kind: string; entrypoint: string; resolutionKind: string }> } };
    // moduleResolution node10 ignores the exports map, so no subpath resolves there; the node16
    // profile leaves it out (see docs/adapters-README-section.md).
    expect(report.analysis.problems.filter((p) => p.resolutionKind !== 'node10')).toEqual([]);
    expect(report.analysis.problems.filter((p) => p.entrypoint === '.')).toEqual([]);
  });
});
