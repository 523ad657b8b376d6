/**
 * The package's entry points, read from package.json: its `exports` map is the one list of
 * subpaths, and `bin` names the CLI. tsup.config.ts builds these entries and vitest.config.ts
 * aliases these specifiers to their sources; test/package/entries.test.ts fails when
 * `typesVersions` or tsconfig.json's `paths` disagree with them.
 *
 * Adding a subpath: add it to `exports` (and `typesVersions`, which the test asks for), with its
 * source at `src/<name>/index.ts` (or `src/adapters/<name>.ts` for a framework adapter).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file is in `scripts/`). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** One subpath of the exports map, with where it is built from and to. */
export interface PackageEntry {
  /** The import specifier, e.g. `flag-proxy/express` (`flag-proxy` for `.`). */
  specifier: string;
  /** The exports key, e.g. `./express`. */
  subpath: string;
  /** tsup's entry name: the output path without extension, e.g. `express/index`. */
  entryName: string;
  /** The source file, relative to the root, e.g. `src/adapters/express.ts`. */
  source: string;
  /** The ESM declaration file the exports map names, e.g. `./dist/express/index.d.ts`. */
  types: string;
}

interface ConditionalExport {
  import: { types: string; default: string };
  require: { types: string; default: string };
}

/** package.json, read fresh (the config files run before any build). */
export function readPackageJson(root = ROOT): Record<string, unknown> & {
  name: string;
  exports: Record<string, ConditionalExport | string>;
  bin?: Record<string, string>;
  typesVersions?: Record<string, Record<string, string[]>>;
} {
  return JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
}

/** `./dist/express/index.js` → `express/index`. */
function entryNameOf(file: string, subpath: string): string {
  const match = /^\.\/dist\/(.+)\.(?:js|cjs)$/.exec(file);
  if (!match?.[1]) throw new Error(`package.json exports["${subpath}"] must point into ./dist/, not ${file}`);
  return match[1];
}

/** The source of a subpath: `src/<name>/index.ts`, or an adapter's `src/adapters/<name>.ts`. */
function sourceOf(entryName: string, subpath: string, root: string): string {
  if (entryName === 'index') return 'src/index.ts';
  const name = entryName.replace(/\/index$/, '');
  const candidates = [`src/${name}/index.ts`, `src/adapters/${name}.ts`];
  const found = candidates.find((candidate) => existsSync(path.join(root, candidate)));
  if (found === undefined) throw new Error(`package.json exports["${subpath}"] has no source: expected ${candidates.join(' or ')}`);
  return found;
}

/** Every code subpath of the exports map (not `./package.json`), in the map's order. */
export function packageEntries(root = ROOT): PackageEntry[] {
  const pkg = readPackageJson(root);
  return Object.entries(pkg.exports)
    .filter((pair): pair is [string, ConditionalExport] => typeof pair[1] !== 'string')
    .map(([subpath, target]) => {
      const entryName = entryNameOf(target.import.default, subpath);
      if (entryNameOf(target.require.default, subpath) !== entryName) {
        throw new Error(`package.json exports["${subpath}"]: import and require must build from one entry`);
      }
      return {
        specifier: subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`,
        subpath,
        entryName,
        source: sourceOf(entryName, subpath, root),
        types: target.import.types,
      };
    });
}

/** tsup's entries: every subpath, plus the CLI named by `bin` (built, not exported). */
export function buildEntries(root = ROOT): { all: Record<string, string>; withTypes: Record<string, string> } {
  const withTypes = Object.fromEntries(packageEntries(root).map((entry) => [entry.entryName, entry.source]));
  const bins = Object.values(readPackageJson(root).bin ?? {}).map((file) => {
    const name = entryNameOf(file, 'bin');
    return [name, `src/${name}.ts`] as const;
  });
  return { all: { ...withTypes, ...Object.fromEntries(bins) }, withTypes };
}

/** vitest's aliases: each specifier, exactly, to its source (absolute). */
export function sourceAliases(root = ROOT): Array<{ find: RegExp; replacement: string }> {
  return packageEntries(root).map((entry) => ({
    find: new RegExp(`^${entry.specifier.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`),
    replacement: path.join(root, entry.source),
  }));
}
