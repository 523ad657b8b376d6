/**
 * The packed package through its exports map: `npm pack` makes the tarball a user would install,
 * it is unpacked into a consumer project's node_modules (its dependencies linked from this
 * repository, so no network), and ESM, CJS and TypeScript consumers load every subpath from it.
 * Only what `files` ships is there: a missing file fails here.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, symlinkSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { packageEntries } from '../../scripts/package-entries.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);
const SUBPATHS = {
  'flag-proxy': ['createFlagProxy', 'optionsFromEnv', 'FlagProxyError', 'isFlagProxyError', 'Strategy', 'createMultiEnvironmentProxy', 'createFileStorageProvider', 'bootstrapScript', 'serializeForScript'],
  'flag-proxy/testing': ['createTestFlagServer', 'createMemoryStorageProvider', 'createAdminEventLog', 'flag', 'silentLogger'],
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
const runShowing = (file: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) =>
  run(file, args, options).catch((error: { message: string; stdout?: string; stderr?: string }) => {
    throw new Error(`${error.message}\n${error.stdout ?? ''}${error.stderr ?? ''}`);
  });

let consumer: string;
let tarball: string;

/** The code block after `marker` in README.md, verbatim. */
function readmeBlock(marker: string): string {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  const match = new RegExp(`<!-- ${marker} -->\\n\`\`\`ts\\n([\\s\\S]*?)\\n\`\`\`\\n`).exec(readme);
  if (!match?.[1]) throw new Error(`README.md has no \`\`\`ts block after <!-- ${marker} -->`);
  return match[1];
}

/** Links a package of this repository's node_modules into the consumer's, as if installed there. */
function linkIntoConsumer(name: string): void {
  if (!existsSync(path.join(consumer, 'node_modules', name))) {
    symlinkSync(path.join(root, 'node_modules', name), path.join(consumer, 'node_modules', name), 'dir');
  }
}

/** Creates a proxy with `enableOAS` (from ESM or CJS) and asks for one file of the Swagger UI page. */
const OPENAPI_PAGE_CHECK = `
  const options = { flagUrl: 'http://127.0.0.1:9/api/', flagApiToken: 't', clientKeys: ['k'], refreshInterval: 60000, metricsInterval: 0,
    storageProvider: { async get() { return undefined; }, async set() {} },
    logger: { debug() {}, info() {}, warn() {}, error() {}, fatal() {} } };
  const check = async (createFlagProxy) => {
    let proxy;
    try { proxy = createFlagProxy({ ...options, enableOAS: true }); } catch (e) { return e.code + ': ' + e.message; }
    const server = require('node:http').createServer(proxy).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const res = await fetch('http://127.0.0.1:' + server.address().port + '/docs/openapi/swagger-ui.css');
    const without = createFlagProxy(options);
    await Promise.all([proxy.close(), without.close(), new Promise((r) => server.close(r))]);
    return 'page asset ' + res.status + ' ' + res.headers.get('content-type');
  };`;

beforeAll(async () => {
  await run('npm', ['run', 'build', '--silent'], { cwd: root });
  const packDir = mkdtempSync(path.join(tmpdir(), 'flag-proxy-pack-'));
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packDir], { cwd: root });
  tarball = path.join(packDir, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename);
  // A consumer project whose node_modules/flag-proxy is the unpacked tarball, as after an install.
  consumer = mkdtempSync(path.join(tmpdir(), 'flag-proxy-consumer-'));
  const installed = path.join(consumer, 'node_modules', 'flag-proxy');
  mkdirSync(installed, { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
  expect(existsSync(path.join(installed, 'src'))).toBe(false);
  symlinkSync(path.join(root, 'node_modules'), path.join(installed, 'node_modules'), 'dir');
}, 180_000);

describe('package exports', () => {
  it('checks every subpath of the exports map here', () => {
    expect(Object.keys(SUBPATHS).sort()).toEqual(packageEntries().map((entry) => entry.specifier).sort());
  });

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

  it('ships README.md, LICENSE, CHANGELOG.md and the build, and no sources or tests', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout.trim().split('\n').map((file) => file.replace(/^package\//, ''));
    expect(files).toEqual(expect.arrayContaining(['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'dist/index.js', 'dist/index.cjs']));
    expect(files.filter((file) => !/^(package\.json|README\.md|LICENSE|CHANGELOG\.md|dist\/.+)$/.test(file))).toEqual([]);
    expect(files.filter((file) => /(^|\/)(test|tests|__tests__)\/|\.(test|spec)\.[cm]?[jt]s$/.test(file))).toEqual([]);
  });

  it('serves the Swagger UI page from the optional peer swagger-ui-dist, from ESM and CJS', async () => {
    const file = path.join(consumer, 'openapi-page.cjs');
    writeFileSync(file, `${OPENAPI_PAGE_CHECK}
      (async () => {
        const esm = await check((await import('flag-proxy')).createFlagProxy);
        const cjs = await check(require('flag-proxy').createFlagProxy);
        console.log(JSON.stringify([esm, cjs]));
      })();`);
    const { stdout } = await run(process.execPath, [file], { cwd: consumer });
    expect(JSON.parse(stdout)).toEqual(['page asset 200 text/css; charset=utf-8', 'page asset 200 text/css; charset=utf-8']);
  });

  it('refuses enableOAS at creation, naming the package to install, when swagger-ui-dist is not installed', async () => {
    // A second consumer whose flag-proxy has every dependency but the optional peer swagger-ui-dist.
    const bare = mkdtempSync(path.join(tmpdir(), 'flag-proxy-consumer-'));
    const installed = path.join(bare, 'node_modules', 'flag-proxy');
    mkdirSync(path.join(installed, 'node_modules'), { recursive: true });
    await run('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
    for (const name of readdirSync(path.join(root, 'node_modules'))) {
      if (name !== 'swagger-ui-dist' && !name.startsWith('.')) {
        symlinkSync(path.join(root, 'node_modules', name), path.join(installed, 'node_modules', name), 'dir');
      }
    }
    const file = path.join(bare, 'openapi-page.cjs');
    writeFileSync(file, `${OPENAPI_PAGE_CHECK}
      (async () => {
        const esm = await check((await import('flag-proxy')).createFlagProxy);
        const cjs = await check(require('flag-proxy').createFlagProxy);
        // Without enableOAS the proxy starts as usual.
        const plain = require('flag-proxy').createFlagProxy(options);
        await plain.close();
        console.log(JSON.stringify([esm, cjs]));
      })();`);
    const { stdout } = await run(process.execPath, [file], { cwd: bare });
    const refusal =
      'INVALID_OPTION: Invalid option enableOAS (ENABLE_OAS): serves its page from the swagger-ui-dist package, which is not installed: npm install swagger-ui-dist';
    expect(JSON.parse(stdout)).toEqual([refusal, refusal]);
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

  it('type-checks a TypeScript consumer of every subpath with moduleResolution node (node10), through typesVersions', async () => {
    // node10 ignores the exports map: without typesVersions no subpath's types resolve.
    writeFileSync(
      path.join(consumer, 'tsconfig.node10.json'),
      JSON.stringify({
        compilerOptions: { module: 'commonjs', moduleResolution: 'node', strict: true, noEmit: true, skipLibCheck: true, esModuleInterop: true, types: ['node'] },
        files: ['node10.ts'],
      }),
    );
    const specifiers = Object.keys(SUBPATHS);
    writeFileSync(
      path.join(consumer, 'node10.ts'),
      [
        ...specifiers.map((specifier, i) => `import type * as m${i} from '${specifier}';`),
        `import { createFlagProxy, type FlagProxyOptions } from 'flag-proxy';`,
        `import { createExpressMiddleware } from 'flag-proxy/express';`,
        `import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';`,
        `const options: FlagProxyOptions = { flagUrl: 'http://x/api/', flagApiToken: 't', clientKeys: ['k'] };`,
        `export const make = () => createFlagProxy(options);`,
        `export const viaExpress = createExpressMiddleware(options);`,
        `export const up: () => Promise<TestFlagServer> = createTestFlagServer;`,
        // Each subpath's own exports are typed: a name that is not exported is an error.
        ...specifiers.map((specifier, i) => `export type T${i} = typeof m${i}[${JSON.stringify(SUBPATHS[specifier as keyof typeof SUBPATHS][0])}];`),
        `// @ts-expect-error refreshInterval is a number`,
        `export const bad: FlagProxyOptions = { refreshInterval: '5' };`,
      ].join('\n'),
    );
    if (!existsSync(path.join(consumer, 'node_modules', '@types'))) {
      symlinkSync(path.join(root, 'node_modules', '@types'), path.join(consumer, 'node_modules', '@types'), 'dir');
    }
    await runShowing(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(consumer, 'tsconfig.node10.json')], { cwd: consumer });
  }, 120_000);

  it("compiles the README's testing example under strict as written, and its test passes", async () => {
    writeFileSync(path.join(consumer, 'readme.test.mts'), readmeBlock('readme-testing-example'));
    writeFileSync(
      path.join(consumer, 'tsconfig.readme.json'),
      JSON.stringify({
        compilerOptions: { module: 'node16', moduleResolution: 'node16', target: 'es2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
        files: ['readme.test.mts'],
      }),
    );
    linkIntoConsumer('@types');
    linkIntoConsumer('vitest');
    await runShowing(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(consumer, 'tsconfig.readme.json')], { cwd: consumer });
    // And it runs: the whole loop, against the packed package, in a vitest of the consumer's own.
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('VITEST') && key !== 'NODE_OPTIONS'));
    const { stdout } = await runShowing(
      process.execPath,
      [path.join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', 'readme.test.mts', '--root', consumer, '--reporter', 'verbose'],
      { cwd: consumer, env: { ...env, NO_COLOR: '1' } },
    );
    const output = stdout.replace(/\x1b\[[0-9;]*m/g, '');
    expect(output).toMatch(/✓ .*shows the new checkout to alice only/);
    expect(output).toMatch(/Tests\s+1 passed/);
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

  it('passes publint, and arethetypeswrong for node10, node16 and bundler resolution', { timeout: 120_000 }, async () => {
    const bin = (name: string) => path.join(root, 'node_modules', '.bin', name);
    // publint exits non-zero on any error, and on warnings with --strict.
    const lint = await runShowing(bin('publint'), ['--strict'], { cwd: root });
    expect(lint.stdout).toContain('All good!');
    // attw reads the packed tarball (packed without rebuilding: beforeAll built dist).
    const packDir = mkdtempSync(path.join(tmpdir(), 'flag-proxy-pack-'));
    const packed = await run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', packDir], { cwd: root });
    const tarball = path.join(packDir, packed.stdout.trim().split('\n').pop()!);
    const report = JSON.parse(
      (await run(bin('attw'), [tarball, '--format', 'json'], { cwd: root, maxBuffer: 64 * 1024 * 1024 }).catch((e: { stdout: string }) => e)).stdout,
    ) as { analysis: { problems: Array<{ kind: string; entrypoint: string; resolutionKind: string }> } };
    // node10 too: typesVersions gives its resolution every subpath's types.
    expect(report.analysis.problems).toEqual([]);
  });
});
