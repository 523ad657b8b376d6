/**
 * Boundaries of src/ drawn from its imports. The scale-out modules are built over the public
 * surface, importing the modules behind it (never the barrel src/index.ts, which exports them:
 * that would be a circle), and `redis` stays an optional peer (loaded at run time only, by
 * src/redis/index.ts only, and only when a client has to be created), so `import 'flag-proxy'`
 * never needs it. Across src/: no import circle, and config/ never imports core/.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsOf, sourceFiles, srcDir } from '../support/imports.js';

describe('scale-out module boundaries', () => {
  const files = ['multi-env', 'redis'].flatMap((dir) => sourceFiles(path.join(srcDir, dir)));

  // The modules the public barrel re-exports from: what "the public surface" is made of.
  const publicModules = new Set(importsOf(path.join(srcDir, 'index.ts')).map(({ specifier }) => specifier.replace(/^\.\//, '../')));

  it('reads the public surface from src/index.ts', () => {
    expect(publicModules).toContain('../create-flag-proxy.js');
    expect(publicModules).toContain('../errors.js');
  });

  it.each(files.map((f) => [path.relative(srcDir, f), f]))('%s imports only node:*, modules of the public surface, siblings, cors (through the on-demand loader) and (lazily) redis', (name, file) => {
    for (const { specifier, dynamic } of importsOf(file)) {
      if (specifier === 'redis') {
        expect(name, 'only src/redis/index.ts loads redis').toBe(path.join('redis', 'index.ts'));
        expect(dynamic, 'redis must be loaded with import(), at run time').toBe(true);
        continue;
      }
      expect(specifier, `${name} must not import the public barrel, which exports it`).not.toBe('../index.js');
      // ../http-headers.js: stateless header helpers shared with the core rather than copied;
      // ../load-on-demand.js: the require that loads cors when first used;
      // ../digests.js: stateless digests (node:crypto only), the keys' SHA-256 made as the core makes it.
      const allowed =
        specifier.startsWith('node:') ||
        publicModules.has(specifier) ||
        specifier === '../http-headers.js' ||
        specifier === '../load-on-demand.js' ||
        specifier === '../digests.js' ||
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

/** src/ as a graph: each file to the src files it imports (type-only and dynamic imports included). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(srcDir)) {
    const targets = importsOf(file)
      .filter(({ specifier }) => specifier.startsWith('.'))
      .map(({ specifier }) => {
        const target = path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts');
        if (!existsSync(target)) throw new Error(`${path.relative(srcDir, file)}: cannot resolve ${specifier}`);
        return path.relative(srcDir, target);
      });
    graph.set(path.relative(srcDir, file), [...new Set(targets)]);
  }
  return graph;
}

/** Every circle reachable in `graph`, each as the path that closes it (`a → b → a`). */
function findCircles(graph: Map<string, string[]>): string[] {
  const circles: string[] = [];
  const done = new Set<string>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    const open = stack.indexOf(node);
    if (open !== -1) {
      circles.push([...stack.slice(open), node].join(' → '));
      return;
    }
    if (done.has(node)) return;
    stack.push(node);
    for (const next of graph.get(node) ?? []) visit(next);
    stack.pop();
    done.add(node);
  };
  for (const node of [...graph.keys()].sort()) visit(node);
  return circles;
}

describe('the import graph of src/', () => {
  const graph = importGraph();

  it('finds the circles it is meant to find', () => {
    const sample = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(findCircles(sample)).toEqual(['a.ts → b.ts → c.ts → a.ts']);
    expect(findCircles(new Map([['a.ts', ['b.ts']], ['b.ts', []]]))).toEqual([]);
  });

  it('covers every module', () => {
    expect(graph.size).toBeGreaterThan(50);
    expect(graph.get('index.ts')).toContain('create-flag-proxy.ts');
  });

  // No exceptions: shared types live below the modules that use them.
  it('has no import circle', () => {
    expect(findCircles(graph)).toEqual([]);
  });

  it('has core/ import no surface, no documentation and no adapter (surfaces stand on the core)', () => {
    const upward = [...graph].flatMap(([file, targets]) =>
      file.startsWith(`core${path.sep}`)
        ? targets.filter((t) => /^(surfaces|openapi|adapters)[\\/]/.test(t) || t === 'create-flag-proxy.ts').map((t) => `${file} → ${t}`)
        : [],
    );
    expect(upward).toEqual([]);
  });

  it('has config/ import nothing from core/ (the core is built on the config, not the other way round)', () => {
    const upward = [...graph].flatMap(([file, targets]) =>
      file.startsWith(`config${path.sep}`) ? targets.filter((t) => t.startsWith(`core${path.sep}`)).map((t) => `${file} → ${t}`) : [],
    );
    expect(upward).toEqual([]);
  });
});
