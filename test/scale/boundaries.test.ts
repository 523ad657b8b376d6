/**
 * STYLE.md boundaries for the scale-out modules: they are built over the public surface, and
 * `redis` stays an optional peer (loaded at run time only, by src/redis/index.ts only, and only
 * when a client has to be created), so `import 'flag-proxy'` never needs it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const srcDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');

interface Import {
  specifier: string;
  dynamic: boolean;
}

function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const found: Import[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?'([^']+)'/gm)) found.push({ specifier: m[1]!, dynamic: false });
  for (const m of text.matchAll(/import\(\s*'([^']+)'\s*\)/g)) found.push({ specifier: m[1]!, dynamic: true });
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(full) : entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('scale-out module boundaries', () => {
  const files = ['multi-env', 'redis'].flatMap((dir) => sourceFiles(path.join(srcDir, dir)));

  it.each(files.map((f) => [path.relative(srcDir, f), f]))('%s imports only node:*, the public surface, siblings, cors and (lazily) redis', (name, file) => {
    for (const { specifier, dynamic } of importsOf(file)) {
      if (specifier === 'redis') {
        expect(name, 'only src/redis/index.ts loads redis').toBe(path.join('redis', 'index.ts'));
        expect(dynamic, 'redis must be loaded with import(), at run time').toBe(true);
        continue;
      }
      // ../http-headers.js: stateless header helpers shared with the core rather than copied.
      const allowed =
        specifier.startsWith('node:') ||
        specifier === '../index.js' ||
        specifier === '../http-headers.js' ||
        /^\.\/[a-z-]+\.js$/.test(specifier) ||
        (specifier === 'cors' && name.startsWith('multi-env'));
      expect(allowed, `${name} → ${specifier}`).toBe(true);
    }
  });

  it('nothing else imports redis', () => {
    const offenders = sourceFiles(srcDir)
      .filter((file) => !file.startsWith(path.join(srcDir, 'redis') + path.sep))
      .flatMap((file) => importsOf(file).filter(({ specifier }) => specifier === 'redis' || specifier.startsWith('@redis/')).map(() => path.relative(srcDir, file)));
    expect(offenders).toEqual([]);
  });
});
