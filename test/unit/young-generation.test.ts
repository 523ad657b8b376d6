import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);
const MiB = 2 ** 20;

/** Runs the workload fixture in a fresh node process set up by `env` (test/fixtures/young-generation-cap.ts); the young generation's bytes after it. */
async function youngGenerationAfterLoad(env: Record<string, string>): Promise<number> {
  const { stderr } = await run(
    process.execPath,
    ['--import', 'tsx', '--import', './test/fixtures/young-generation-workload.mjs', 'test/fixtures/young-generation-cap.ts'],
    { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 20_000 },
  );
  const match = /young generation: (\d+)/.exec(stderr);
  if (!match) throw new Error(`no size printed: ${stderr}`);
  return Number(match[1]);
}

describe('capYoungGeneration and holdYoungGeneration', () => {
  it('let the young generation grow to the cap and no further, or hold it, where V8 alone grows it to its maximum', async () => {
    const [uncapped, four, sixteen, held] = await Promise.all([
      youngGenerationAfterLoad({ YG_CAP_MB: '0' }),
      youngGenerationAfterLoad({ YG_CAP_MB: '4' }),
      youngGenerationAfterLoad({ YG_CAP_MB: '16' }),
      youngGenerationAfterLoad({ YG_HOLD: '1' }),
    ]);
    expect(uncapped).toBeGreaterThan(16 * MiB);
    expect(four).toBeLessThanOrEqual(4 * MiB);
    expect(sixteen).toBeGreaterThan(4 * MiB);
    expect(sixteen).toBeLessThanOrEqual(16 * MiB);
    expect(held).toBeLessThanOrEqual(4 * MiB);
  }, 30_000);
});
