/**
 * The repository is self-contained: no source, test, benchmark, example or CI file reads a path
 * outside it. A fresh clone on a machine with nothing beside it must pass its own suite (CI runs
 * it from such a clone: .ci/run), so data a test needs lives in test/fixtures/.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCANNED_DIRS = ['src', 'test', 'bench', 'examples', '.ci'];
const SCANNED_FILES = ['package.json', 'tsconfig.json', 'tsup.config.ts', 'vitest.config.ts', 'vitest.browser.config.ts'];
/** Installed or generated, never written by hand. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.build', '.next']);
const BINARY = /\.(png|jpe?g|gif|ico|gz|tgz|woff2?)$/;

/** Text that names a place outside any checkout: this team's machines, the folder beside the repository. */
const OUTSIDE = [/\/work\//, /\.\.\/shared\b/, /\bshared\/samples\b/];

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return SKIPPED_DIRS.has(entry.name) ? [] : filesUnder(full);
    return BINARY.test(entry.name) ? [] : [full];
  });
}

const self = fileURLToPath(import.meta.url);
// This file is left out: its own examples of what is caught would be caught.
const files = [...SCANNED_DIRS.flatMap((dir) => filesUnder(path.join(root, dir))), ...SCANNED_FILES.map((f) => path.join(root, f))].filter(
  (file) => file !== self,
);

/** Every quoted `../…` literal of a file, e.g. `new URL('../../x/', import.meta.url)` or `path.resolve(here, '../y')`. */
function parentRelativeLiterals(text: string): string[] {
  return [...text.matchAll(/(['"`])((?:\.\.\/)+[^'"`\s$]*|\.\.)\1/g)].map((m) => m[2]!);
}

/** Whether a path relative to the folder of `file` leaves the repository. */
function escapes(file: string, relative: string): boolean {
  const target = path.resolve(path.dirname(file), relative);
  return target !== root && !target.startsWith(root + path.sep);
}

describe('a self-contained repository', () => {
  it('scans the source, tests, benchmarks, examples and CI scripts', () => {
    const scanned = new Set(files.map((f) => path.relative(root, f).split(path.sep)[0]));
    for (const dir of SCANNED_DIRS) expect(scanned, dir).toContain(dir);
    expect(files.length).toBeGreaterThan(100);
  });

  it('names no path outside the repository', () => {
    const offenders = files.flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return OUTSIDE.filter((pattern) => pattern.test(text)).map((pattern) => `${path.relative(root, file)} matches ${pattern}`);
    });
    expect(offenders).toEqual([]);
  });

  it('builds no relative path that climbs out of the repository', () => {
    const offenders = files.flatMap((file) =>
      parentRelativeLiterals(readFileSync(file, 'utf8'))
        .filter((relative) => escapes(file, relative))
        .map((relative) => `${path.relative(root, file)}: '${relative}'`),
    );
    expect(offenders).toEqual([]);
  });

  it('catches the ways a test used to reach outside', () => {
    // What test/admin-events/samples.test.ts once did, from its own folder.
    const sample = path.join(root, 'test', 'admin-events', 'samples.test.ts');
    // Put together here, so that this file itself holds no path out of the repository.
    const climbing = ['..', '..', '..', 'shared', 'samples', 'x', ''].join('/');
    const literals = parentRelativeLiterals(`new URL('${climbing}', import.meta.url)`);
    expect(literals).toEqual([climbing]);
    expect(escapes(sample, literals[0]!)).toBe(true);
    expect(escapes(sample, '../fixtures/x/')).toBe(false);
    expect(OUTSIDE.some((p) => p.test('/work/shared/x'))).toBe(true);
  });
});
