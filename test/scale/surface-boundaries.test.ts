/**
 * The route table's promise: a wire protocol is its own folder under src/surfaces/ plus its line in
 * src/surfaces/index.ts. So a surface never imports another surface's files; what two surfaces
 * share lives in src/surfaces/common/, which imports no surface.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const surfacesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/surfaces');

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?'([^']+)'/gm)].map((m) => m[1]!);
}

const folders = readdirSync(surfacesDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

describe('surface boundaries', () => {
  it('finds the surface folders and the shared one', () => {
    expect(folders).toEqual(expect.arrayContaining(['common', 'unleash-proxy']));
  });

  it.each(folders)('src/surfaces/%s imports no other surface', (folder) => {
    const dir = path.join(surfacesDir, folder);
    const offenders = readdirSync(dir)
      .filter((name) => name.endsWith('.ts'))
      .flatMap((name) =>
        importsOf(path.join(dir, name))
          .filter((specifier) => {
            const target = path.resolve(dir, specifier);
            if (!specifier.startsWith('.') || !target.startsWith(surfacesDir + path.sep)) return false;
            const other = path.relative(surfacesDir, target).split(path.sep)[0];
            // Only the shared folder, and only from a surface (shared imports no surface).
            return other !== folder && !(other === 'common' && folder !== 'common');
          })
          .map((specifier) => `${folder}/${name} → ${specifier}`),
      );
    expect(offenders).toEqual([]);
  });
});
