/**
 * `npm run test:browser` leaves the tree as it found it: the screenshots of docs/ are written only
 * with UPDATE_SCREENSHOTS=1, otherwise to a temporary folder (the pictures are still taken and checked).
 */
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { screenshotPath } from '../browser/screenshots.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const browserDir = path.join(root, 'test', 'browser');

describe('browser test screenshots', () => {
  it('go to a temporary folder unless UPDATE_SCREENSHOTS=1, then to docs/', () => {
    for (const env of [{}, { UPDATE_SCREENSHOTS: '0' }, { UPDATE_SCREENSHOTS: '' }]) {
      const file = screenshotPath('demo-page.png', env);
      expect(path.basename(file)).toBe('demo-page.png');
      expect(file.startsWith(os.tmpdir() + path.sep)).toBe(true);
      expect(file.startsWith(root + path.sep)).toBe(false);
    }
    expect(screenshotPath('demo-page.png', { UPDATE_SCREENSHOTS: '1' })).toBe(path.join(root, 'docs', 'demo-page.png'));
  });

  it('are all placed by screenshotPath: no browser test names docs/ itself', () => {
    const files = readdirSync(browserDir).filter((f) => f.endsWith('.ts') && f !== 'screenshots.ts');
    const takers = files.filter((f) => readFileSync(path.join(browserDir, f), 'utf8').includes('.screenshot('));
    expect(takers.sort()).toEqual(['demo-page.test.ts', 'openapi-page.test.ts']);
    for (const file of takers) expect(readFileSync(path.join(browserDir, file), 'utf8'), file).toContain('screenshotPath(');
    for (const file of files) expect(readFileSync(path.join(browserDir, file), 'utf8'), file).not.toMatch(/['"]docs['"/]/);
  });
});
