/**
 * What a company checks before adopting the package: the licence text, where the project lives,
 * a changelog whose versions link somewhere, and a README that renders on the registry's page
 * (which shows README.md alone: a relative link or image there points nowhere).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readPackageJson, ROOT } from '../../scripts/package-entries.js';

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const pkg = readPackageJson();

describe('package metadata', () => {
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
