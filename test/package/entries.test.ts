/**
 * The subpath list is written once, in package.json's exports map. The build entries and the test
 * aliases are derived from it (scripts/package-entries.ts); `typesVersions` (for TypeScript's
 * node10 resolution) and tsconfig.json's `paths` cannot be derived, so any drift fails here.
 */
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import tsupConfig from '../../tsup.config.js';
import vitestConfig from '../../vitest.config.js';
import { packageEntries, readPackageJson, ROOT } from '../../scripts/package-entries.js';

const entries = packageEntries();
const pkg = readPackageJson();

describe('package entries', () => {
  it('finds every subpath of the exports map, each with its own source', () => {
    expect(entries.map((entry) => entry.subpath)).toEqual(Object.keys(pkg.exports).filter((key) => key !== './package.json'));
    expect(new Set(entries.map((entry) => entry.source)).size).toBe(entries.length);
    expect(entries.find((entry) => entry.specifier === 'flag-proxy/express')?.source).toBe('src/adapters/express.ts');
    expect(entries.find((entry) => entry.specifier === 'flag-proxy/testing')?.source).toBe('src/testing/index.ts');
  });

  it('has a typesVersions entry for every subpath but the root, naming the ESM declarations', () => {
    const expected = Object.fromEntries(entries.filter((entry) => entry.subpath !== '.').map((entry) => [entry.subpath.slice(2), [entry.types]]));
    expect(pkg.typesVersions).toEqual({ '*': expected });
  });

  it('builds every subpath with tsup, with declarations, and the CLI of bin', () => {
    const config = tsupConfig as { entry: Record<string, string>; dts: { entry: Record<string, string> } };
    const expected = Object.fromEntries(entries.map((entry) => [entry.entryName, entry.source]));
    expect(config.dts.entry).toEqual(expected);
    expect(config.entry).toEqual({ ...expected, cli: 'src/cli.ts' });
  });

  it('aliases every specifier to its source in vitest, and nothing else', () => {
    const aliases = vitestConfig.resolve?.alias as Array<{ find: RegExp; replacement: string }>;
    for (const entry of entries) {
      const matching = aliases.filter((alias) => alias.find.test(entry.specifier));
      expect(matching.map((alias) => alias.replacement), entry.specifier).toEqual([path.join(ROOT, entry.source)]);
    }
    expect(aliases).toHaveLength(entries.length);
    expect(aliases.some((alias) => alias.find.test('flag-proxy/unknown'))).toBe(false);
  });

  it("resolves every specifier to its source through tsconfig.json's paths", () => {
    const file = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), ts.sys.readFile);
    const { options } = ts.parseJsonConfigFileContent(file.config, ts.sys, ROOT);
    const from = path.join(ROOT, 'test', 'package', 'entries.test.ts');
    for (const entry of entries) {
      const { resolvedModule } = ts.resolveModuleName(entry.specifier, from, options, ts.sys);
      expect(resolvedModule?.resolvedFileName, entry.specifier).toBe(path.join(ROOT, entry.source));
    }
  });
});
