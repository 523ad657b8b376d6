/**
 * STYLE.md boundaries for the adapters: they reach the proxy only through the public surface and
 * load no framework at run time (types only), and nothing outside src/adapters/ imports them or a
 * framework, so `import 'flag-proxy'` can never load Express, Koa, Fastify or Hono.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsOf, sourceFiles, srcDir } from '../support/imports.js';

const FRAMEWORKS = /^(express|koa|fastify|hono|@koa\/router|@hono\/)/;

describe('adapter boundaries', () => {
  const adapterFiles = sourceFiles(path.join(srcDir, 'adapters'));

  it('finds the four adapters', () => {
    expect(adapterFiles.map((f) => path.basename(f))).toEqual(expect.arrayContaining(['express.ts', 'koa.ts', 'fastify.ts', 'fetch.ts']));
  });

  it.each(adapterFiles.map((f) => [path.basename(f), f]))('%s imports only node:*, the public surface, sibling adapter files and framework types', (_name, file) => {
    for (const { specifier, typeOnly } of importsOf(file)) {
      if (FRAMEWORKS.test(specifier)) {
        expect(typeOnly, `${specifier} must be a type-only import`).toBe(true);
        continue;
      }
      expect(specifier.startsWith('node:') || specifier === '../index.js' || /^\.\/[a-z-]+\.js$/.test(specifier), `${specifier}`).toBe(true);
    }
  });

  it('nothing outside src/adapters/ imports an adapter or a framework', () => {
    const offenders = sourceFiles(srcDir)
      .filter((file) => !file.startsWith(path.join(srcDir, 'adapters') + path.sep))
      .flatMap((file) =>
        importsOf(file)
          .filter(({ specifier }) => FRAMEWORKS.test(specifier) || specifier.includes('adapters/'))
          .map(({ specifier }) => `${path.relative(srcDir, file)} → ${specifier}`),
      );
    expect(offenders).toEqual([]);
  });
});
