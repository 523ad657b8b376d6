/**
 * The import graph of src/ as the boundary tests read it: each file's import and export
 * specifiers, static or dynamic, type-only or not.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The absolute path of src/. */
export const srcDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');

/** One import or re-export of a file. */
export interface Import {
  specifier: string;
  /** `import type …` / `export type … from`. */
  typeOnly: boolean;
  /** `import('…')`, loaded at run time. */
  dynamic: boolean;
}

/** The static imports and re-exports of `file`, then its dynamic imports. */
export function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const found: Import[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?'([^']+)'/gm)) {
    found.push({ specifier: m[2]!, typeOnly: m[1] !== undefined, dynamic: false });
  }
  for (const m of text.matchAll(/import\(\s*'([^']+)'\s*\)/g)) found.push({ specifier: m[1]!, typeOnly: false, dynamic: true });
  return found;
}

/** Every .ts file below `dir`. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(full) : entry.name.endsWith('.ts') ? [full] : [];
  });
}
