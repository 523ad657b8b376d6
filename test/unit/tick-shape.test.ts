import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);

describe('holdTickShape', () => {
  it('holds a tick object of the class later ticks get, from the next tick until released', async () => {
    const { stdout } = await run(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', 'test/fixtures/tick-shape-child.ts'], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '' },
      timeout: 20_000,
    });
    expect(JSON.parse(stdout)).toEqual({ heldBeforeTick: false, heldKeys: ['callback', 'args'], sameClass: true, heldAfterRelease: false });
  }, 30_000);
});
