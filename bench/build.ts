/**
 * Builds what the target processes run, so that no target runs under tsx: the three target
 * entries, the in-process measurement, and (unless `dist` is chosen) flag-proxy itself (and its CLI, for the cluster rows), bundled from src/ with esbuild — the
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
  /** The in-process measurement (bench/in-process.ts), bundled. */
  inProcess: string;
  /** The refresh measurement (bench/refresh.ts), bundled. */
  refresh: string;
  /** flag-proxy's CLI from the same source, and the guard preloaded into it (only when asked for). */
  cli?: { entry: string; guard: string };
}

/** Extracts src/ of a git revision under `dir` (so its package imports still resolve from the repo). */
function extractRevision(root: string, revision: string, dir: string): void {
  const archive = spawnSync('git', ['archive', '--format=tar', revision, 'src'], { cwd: root, maxBuffer: 256 * 1024 * 1024 });
  if (archive.status !== 0) throw new Error(`git archive ${revision} failed: ${archive.stderr.toString().trim()}`);
  const untar = spawnSync('tar', ['-x', '-C', dir], { input: archive.stdout });
  if (untar.status !== 0) throw new Error(`tar failed: ${untar.stderr.toString().trim()}`);
}

/**
 * @param withCli also build flag-proxy's CLI (src/cli.ts, or dist/cli.js as built) for the cluster
 * comparison; left out otherwise, so a run without it does not depend on the CLI compiling.
 * @param outdir where the bundles go (emptied first); bench/.build by default.
 */
export async function buildTargets(root: string, flagProxyFrom: string, withCli: boolean, outdir = path.join(root, 'bench', '.build')): Promise<BuiltTargets> {
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
      'in-process': path.join(root, 'bench', 'in-process.ts'),
      refresh: path.join(root, 'bench', 'refresh.ts'),
      ...(withCli ? { 'cli-guard': path.join(targets, 'cli-guard.ts') } : {}),
    },
  });
  let flagProxyModule: string;
  let cliEntry: string | undefined;
  if (flagProxyFrom === 'dist') {
    flagProxyModule = path.join(root, 'dist', 'index.js');
    cliEntry = path.join(root, 'dist', 'cli.js');
    for (const file of withCli ? [flagProxyModule, cliEntry] : [flagProxyModule]) {
      if (!existsSync(file)) throw new Error(`${file} does not exist: run \`npm run build\` first, or use the default BENCH_FLAG_PROXY=src`);
    }
  } else {
    let srcDir = path.join(root, 'src');
    if (flagProxyFrom.startsWith('git:')) {
      const dir = path.join(outdir, 'revision');
      await mkdir(dir, { recursive: true });
      extractRevision(root, flagProxyFrom.slice(4), dir);
      srcDir = path.join(dir, 'src');
    }
    // Two separate bundles: the library the in-process target imports, and the CLI as a whole.
    await build({ ...common, entryPoints: { 'flag-proxy-lib': path.join(srcDir, 'index.ts') } });
    flagProxyModule = path.join(outdir, 'flag-proxy-lib.mjs');
    if (withCli) {
      // Split as tsup splits dist/: what the CLI imports on demand (the `events` subcommand, and zod
      // with it) stays out until used. In one bundle esbuild hoists those modules' package imports
      // to the top, and the CLI loaded zod at start (about 9 MB of idle RSS) where dist/cli.js does not.
      await build({ ...common, splitting: true, entryPoints: { 'flag-proxy-cli': path.join(srcDir, 'cli.ts') } });
      cliEntry = path.join(outdir, 'flag-proxy-cli.mjs');
    }
  }
  return {
    entries: {
      'flag-proxy': path.join(outdir, 'flag-proxy.mjs'),
      'unleash-proxy': path.join(outdir, 'unleash-proxy.mjs'),
      'bare-node': path.join(outdir, 'bare-node.mjs'),
    },
    flagProxyModule,
    inProcess: path.join(outdir, 'in-process.mjs'),
    refresh: path.join(outdir, 'refresh.mjs'),
    ...(withCli && cliEntry ? { cli: { entry: cliEntry, guard: path.join(outdir, 'cli-guard.mjs') } } : {}),
  };
}
