/**
 * Builds what the target processes run, so that no target runs under tsx: the three target
 * entries, and (unless `dist` is chosen) flag-proxy itself, bundled from src/ with esbuild — the
 * compiler tsup uses for dist/ — into bench/.build/, leaving the shared dist/ untouched.
 * `git:<rev>` bundles src/ as it was at that revision instead, to compare before and after.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

export interface BuiltTargets {
  /** Absolute path of each target entry, by target name. */
  entries: Record<'flag-proxy' | 'unleash-proxy' | 'bare-node', string>;
  /** Absolute path of the module that exports `createFlagProxy`. */
  flagProxyModule: string;
}

/** Extracts src/ of a git revision under `dir` (so its package imports still resolve from the repo). */
function extractRevision(root: string, revision: string, dir: string): void {
  const archive = spawnSync('git', ['archive', '--format=tar', revision, 'src'], { cwd: root, maxBuffer: 256 * 1024 * 1024 });
  if (archive.status !== 0) throw new Error(`git archive ${revision} failed: ${archive.stderr.toString().trim()}`);
  const untar = spawnSync('tar', ['-x', '-C', dir], { input: archive.stdout });
  if (untar.status !== 0) throw new Error(`tar failed: ${untar.stderr.toString().trim()}`);
}

export async function buildTargets(root: string, flagProxyFrom: string): Promise<BuiltTargets> {
  const outdir = path.join(root, 'bench', '.build');
  await rm(outdir, { recursive: true, force: true });
  const common = {
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: true,
    outdir,
    outExtension: { '.js': '.mjs' },
    logLevel: 'warning',
  } as const;
  const targets = path.join(root, 'bench', 'targets');
  await build({
    ...common,
    entryPoints: {
      'flag-proxy': path.join(targets, 'flag-proxy.ts'),
      'unleash-proxy': path.join(targets, 'unleash-proxy.ts'),
      'bare-node': path.join(targets, 'bare-node.ts'),
    },
  });
  let flagProxyModule: string;
  if (flagProxyFrom === 'dist') {
    flagProxyModule = path.join(root, 'dist', 'index.js');
    if (!existsSync(flagProxyModule)) throw new Error(`${flagProxyModule} does not exist: run \`npm run build\` first, or use the default BENCH_FLAG_PROXY=src`);
  } else {
    let entry = path.join(root, 'src', 'index.ts');
    if (flagProxyFrom.startsWith('git:')) {
      const dir = path.join(outdir, 'revision');
      await mkdir(dir, { recursive: true });
      extractRevision(root, flagProxyFrom.slice(4), dir);
      entry = path.join(dir, 'src', 'index.ts');
    }
    await build({ ...common, entryPoints: { 'flag-proxy-lib': entry } });
    flagProxyModule = path.join(outdir, 'flag-proxy-lib.mjs');
  }
  return {
    entries: {
      'flag-proxy': path.join(outdir, 'flag-proxy.mjs'),
      'unleash-proxy': path.join(outdir, 'unleash-proxy.mjs'),
      'bare-node': path.join(outdir, 'bare-node.mjs'),
    },
    flagProxyModule,
  };
}
