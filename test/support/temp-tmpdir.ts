/**
 * A temporary directory of its own for each test, set as TMPDIR (which `os.tmpdir()` follows) and
 * removed after it: for tests of what a proxy writes there, such as its default file backup.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';

/** Registers the hooks in the calling file or `describe`; the returned function gives this test's directory. */
export function useTempTmpdir(prefix: string): () => string {
  let temp = '';
  let savedTmpdir: string | undefined;
  beforeEach(async () => {
    temp = await mkdtemp(path.join(tmpdir(), prefix));
    savedTmpdir = process.env.TMPDIR;
    process.env.TMPDIR = temp;
  });
  afterEach(async () => {
    if (savedTmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmpdir;
    await rm(temp, { recursive: true, force: true });
  });
  return () => temp;
}
