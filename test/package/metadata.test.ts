/**
 * What a company checks before adopting the package: an install that runs no scripts, the licence
 * text, where the project lives, a changelog whose versions link somewhere, and a README that
 * renders on the registry's page (which shows README.md alone: a relative link or image there
 * points nowhere).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { readPackageJson, ROOT } from '../../scripts/package-entries.js';

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const pkg = readPackageJson();

interface LockedPackage {
  version?: string;
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  hasInstallScript?: boolean;
}

/** Every package of our lockfile, by its path (`node_modules/…`; the project itself under ''). */
function lockedPackages(): Record<string, LockedPackage> {
  return (JSON.parse(read('package-lock.json')) as { packages: Record<string, LockedPackage> }).packages;
}

/**
 * The oldest Node this repository is developed and tested on (docs/development.md): what its
 * development tools need (vite, which vitest runs on, needs 20.19).
 */
const DEVELOPMENT_NODE = '20.19.0';

/**
 * Locked packages that declare a newer Node than {@link DEVELOPMENT_NODE} and run on it all the
 * same, each with why it is kept.
 */
const NEWER_NODE_DECLARED: Record<string, string> = {
  // The predecessor this project measures and tests itself against (1.4.19, its last release,
  // declares Node 22); its tests and the benchmark run it on Node 20.
  'node_modules/@unleash/proxy': 'the predecessor, compared against',
};

/**
 * Every package a consumer's `npm install flag-proxy` brings in, found in our lockfile from the
 * `dependencies` of package.json (as npm resolves a name: the nearest `node_modules` up the tree).
 */
function installedWithUs(): Map<string, LockedPackage> {
  const packages = lockedPackages();
  const found = new Map<string, LockedPackage>();
  const visit = (from: string, name: string): void => {
    for (let dir = from; ; dir = dir.includes('/node_modules/') ? dir.slice(0, dir.lastIndexOf('/node_modules/')) : '') {
      const key = `${dir === '' ? '' : `${dir}/`}node_modules/${name}`;
      const locked = packages[key];
      if (locked) {
        if (found.has(key)) return;
        found.set(key, locked);
        const required = { ...locked.dependencies, ...locked.optionalDependencies };
        for (const [peer] of Object.entries(locked.peerDependencies ?? {})) {
          if (!locked.peerDependenciesMeta?.[peer]?.optional) required[peer] = '*';
        }
        for (const dependency of Object.keys(required)) visit(key, dependency);
        return;
      }
      if (dir === '') throw new Error(`package-lock.json has no ${name} (needed by ${from || 'flag-proxy'}): refresh it`);
    }
  };
  for (const name of Object.keys((pkg.dependencies ?? {}) as Record<string, string>)) visit('', name);
  return found;
}

describe('package metadata', () => {
  it('brings in no package with an install script, and only optional peers', () => {
    const installed = installedWithUs();
    expect(installed.size).toBeGreaterThan(5);
    expect([...installed].filter(([, locked]) => locked.hasInstallScript).map(([key]) => key)).toEqual([]);
    const peers = Object.keys((pkg.peerDependencies ?? {}) as Record<string, string>);
    const meta = (pkg.peerDependenciesMeta ?? {}) as Record<string, { optional?: boolean }>;
    expect(peers.filter((peer) => meta[peer]?.optional !== true)).toEqual([]);
    expect(peers).toContain('swagger-ui-dist');
  });

  it('declares only Node versions that every package it brings in supports', () => {
    const ours = (pkg.engines as { node?: string } | undefined)?.node;
    expect(ours, 'engines.node of package.json').toBeDefined();
    const narrower = [...installedWithUs()]
      .filter(([, locked]) => locked.engines?.node !== undefined && !semver.subset(ours as string, locked.engines.node))
      .map(([key, locked]) => `${key}@${locked.version} needs ${locked.engines?.node}`);
    expect(narrower).toEqual([]);
  });

  it('locks only packages that run on the Node it is developed on', () => {
    const newer = Object.entries(lockedPackages())
      .filter(([key, locked]) => key !== '' && locked.engines?.node !== undefined && !(key in NEWER_NODE_DECLARED))
      .filter(([, locked]) => !semver.satisfies(DEVELOPMENT_NODE, locked.engines?.node as string))
      .map(([key, locked]) => `${key}@${locked.version} needs ${locked.engines?.node}`);
    expect(newer).toEqual([]);
    // Each exception still names a locked package that declares a newer Node.
    for (const key of Object.keys(NEWER_NODE_DECLARED)) {
      const declared = lockedPackages()[key]?.engines?.node;
      expect(declared !== undefined && !semver.satisfies(DEVELOPMENT_NODE, declared), key).toBe(true);
    }
  });

  it('carries the full Apache-2.0 licence text, as package.json declares', () => {
    const license = read('LICENSE');
    expect(pkg.license).toBe('Apache-2.0');
    expect(license.trimStart().startsWith('Apache License\n                           Version 2.0, January 2004')).toBe(true);
    // All nine sections and the appendix, not a summary.
    for (let n = 1; n <= 9; n += 1) expect(license).toMatch(new RegExp(`^   ${n}\\. [A-Z]`, 'm'));
    expect(license).toContain('END OF TERMS AND CONDITIONS');
    expect(license).toContain('APPENDIX: How to apply the Apache License to your work.');
  });

  it('names its repository, homepage and issue tracker', () => {
    expect(pkg.repository).toEqual({ type: 'git', url: expect.stringMatching(/^git\+https:\/\/github\.com\/[^/]+\/[^/]+\.git$/) });
    expect(pkg.homepage).toMatch(/^https:\/\/github\.com\/[^/]+\/[^/]+#readme$/);
    expect(pkg.bugs).toEqual({ url: expect.stringMatching(/^https:\/\/github\.com\/[^/]+\/[^/]+\/issues$/) });
    expect(pkg.files).toEqual(expect.arrayContaining(['dist', 'CHANGELOG.md', 'LICENSE']));
  });

  it('uses only absolute URLs for images and links in the README', () => {
    const readme = read('README.md');
    const targets = [...readme.matchAll(/!?\[[^\]]*\]\(([^)\s]+)[^)]*\)/g)].map((m) => m[1]!);
    expect(targets.length).toBeGreaterThan(0);
    expect(targets.filter((target) => !/^(https:\/\/|#)/.test(target))).toEqual([]);
    expect(readme).not.toMatch(/<img\s[^>]*src="(?!https:\/\/)/);
  });

  it('keeps a changelog whose every version heading has a link definition at the bottom', () => {
    const changelog = read('CHANGELOG.md');
    const headings = [...changelog.matchAll(/^## \[([^\]]+)\](.*)$/gm)];
    expect(headings[0]?.[1]).toBe('Unreleased');
    for (const [, version, rest] of headings) {
      if (version !== 'Unreleased') expect(`${version}${rest}`, 'a release heading').toMatch(/^\d+\.\d+\.\d+ - \d{4}-\d{2}-\d{2}$/);
      expect(changelog).toMatch(new RegExp(`^\\[${version!.replace(/\./g, '\\.')}\\]: https://\\S+$`, 'm'));
    }
    // The definitions close the file: nothing but definitions after the first one.
    const tail = changelog.slice(changelog.search(/^\[[^\]]+\]: /m)).trim().split('\n');
    expect(tail.every((line) => /^\[[^\]]+\]: https:\/\/\S+$/.test(line))).toBe(true);
  });
});
