/**
 * Where the browser tests put their screenshots: docs/ (tracked, shown in the README) only when
 * asked with UPDATE_SCREENSHOTS=1, otherwise a temporary folder, so a test run leaves the tree as
 * it found it (they go to the system temp folder's flag-proxy-screenshots/). The pictures are
 * taken and checked either way.
 */
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const docs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs');
/** One folder, overwritten by each run, rather than a new one per run left behind. */
const scratch = path.join(os.tmpdir(), 'flag-proxy-screenshots');

/** The file a screenshot named `name` (e.g. `demo-page.png`) is written to. */
export function screenshotPath(name: string, env: Readonly<Record<string, string | undefined>> = process.env): string {
  if (env.UPDATE_SCREENSHOTS === '1') return path.join(docs, name);
  mkdirSync(scratch, { recursive: true });
  return path.join(scratch, name);
}
