/**
 * The default backup of a proxy: a JSON file like unleash-client's own default, but named by a
 * scope too (unleash-client names it by app name alone, so proxies of different upstreams with
 * one app name would start from each other's flags). It holds every flag rule, so it is readable
 * by its owner only: the file is 0600, in a per-user directory 0700 under the OS temp directory.
 * Written to a temporary file first (0600 from its creation) and renamed, so a reader never sees
 * half a snapshot and a rewrite never widens the mode.
 */
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FeaturesResponse, StorageProvider } from './types.js';

const safe = (part: string): string => part.replace(/[^A-Za-z0-9_.-]/g, '_');

/** About how many characters {@link jsonPieces} puts in a piece. */
const PIECE_CHARS = 64 * 1024;

/**
 * The text `JSON.stringify(data)` makes, in pieces of about {@link PIECE_CHARS} characters: the
 * elements of a top-level array (the flags, the segments) are written one by one, so a large flag
 * set (3.3 MB of JSON at 5000 flags) never becomes one string, nor one Buffer as it is written.
 */
export function* jsonPieces(data: FeaturesResponse): Generator<string> {
  let piece = '{';
  let first = true;
  for (const [key, value] of Object.entries(data)) {
    const name = `${first ? '' : ','}${JSON.stringify(key)}:`;
    if (!Array.isArray(value)) {
      const text = JSON.stringify(value) as string | undefined;
      if (text === undefined) continue; // as JSON.stringify leaves out undefined and functions
      piece += name + text;
      first = false;
      continue;
    }
    piece += `${name}[`;
    first = false;
    for (let i = 0; i < value.length; i += 1) {
      piece += `${i === 0 ? '' : ','}${(JSON.stringify(value[i]) as string | undefined) ?? 'null'}`;
      if (piece.length >= PIECE_CHARS) {
        yield piece;
        piece = '';
      }
    }
    piece += ']';
  }
  yield `${piece}}`;
}

/** `<os temp directory>/flag-proxy-<uid>`: where backups go unless a directory is given. */
export function defaultBackupDirectory(): string {
  return path.join(tmpdir(), `flag-proxy-${process.getuid?.() ?? 'user'}`);
}

/**
 * Makes `directory` exist as a directory of ours that no one else can read or write (0700). A
 * shared temp directory lets anyone create that name first: a directory of another user, or a
 * link, is refused rather than trusted with (or read as) our flags.
 */
async function privateDirectory(directory: string): Promise<void> {
  await mkdir(directory, { recursive: true, mode: 0o700 });
  const info = await lstat(directory);
  const uid = process.getuid?.();
  if (!info.isDirectory() || (uid !== undefined && info.uid !== uid)) {
    throw new Error(`the backup directory ${directory} is not a directory owned by this user; remove it or choose another`);
  }
  if ((info.mode & 0o077) !== 0) await chmod(directory, 0o700);
}

/**
 * A storage provider writing `flag-proxy-backup-<scope>-<key>.json` files, atomically and
 * readable by their owner only (0600). Without `directory`, they go in a per-user directory
 * (0700) under the OS temp directory, `flag-proxy-<uid>`; a `directory` given is used as it is.
 *
 * @example
 * ```ts
 * createFlagProxy({ ...options, storageProvider: createFileStorageProvider('eu-prod', '/var/lib/flag-proxy') });
 * ```
 */
export function createFileStorageProvider(scope: string, directory?: string): StorageProvider<FeaturesResponse> {
  // Resolved per call, as `os.tmpdir()` follows TMPDIR.
  const where = async (): Promise<string> => {
    if (directory !== undefined) return directory;
    const own = defaultBackupDirectory();
    await privateDirectory(own);
    return own;
  };
  const file = (dir: string, key: string): string => path.join(dir, `flag-proxy-backup-${safe(scope)}-${safe(key)}.json`);
  return {
    async get(key) {
      try {
        const parsed = JSON.parse(await readFile(file(await where(), key), 'utf8')) as FeaturesResponse;
        return Array.isArray(parsed?.features) ? parsed : undefined;
      } catch {
        // Missing or unreadable: there is no backup to start from.
        return undefined;
      }
    },
    async set(key, data) {
      const target = file(await where(), key);
      const temporary = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      try {
        // `wx`: never write through a file (or link) someone placed at the temporary name.
        await writeFile(temporary, jsonPieces(data), { mode: 0o600, flag: 'wx' });
        await rename(temporary, target);
      } catch (error) {
        await unlink(temporary).catch(() => undefined);
        throw error;
      }
    },
  };
}

/** The storage of `backup: false`: nothing is read, nothing is written. */
export function createNoBackup(): StorageProvider<FeaturesResponse> {
  return {
    get: async () => undefined,
    set: async () => undefined,
  };
}
