/**
 * `GET /api/client/features`: the flag set the proxy holds, as the flag server's client API serves
 * it to server SDKs and to other proxies — `{ version, features, query, segments }`, filtered by the
 * `project` and `namePrefix` parameters SDKs send. Each (flag-set revision, filter) is serialized
 * once, with its ETag and gzip, and kept until the flag set changes: a poll whose `If-None-Match`
 * matches is answered 304 from the kept ETag, serializing nothing. The first poll after a change
 * waits for the build, which runs in slices between which the event loop turns (one toggle per
 * step), and its gzip, which runs on libuv's thread pool: done at once, the 3.3 MB answer of 5000
 * flags held the event loop for about 45 ms.
 *
 * Unlike the evaluation routes (Express's freshness rule, as the predecessor), a request's
 * `Cache-Control: no-cache` does not rule out the 304 here: `fetch` adds it to every request that
 * carries `If-None-Match` (the Fetch standard turns such a request's cache mode to no-store), so
 * fetch-based SDKs (`@unleash/nextjs`'s `getDefinitions`) would never be answered 304. A 304 after
 * revalidation with the origin is what `no-cache` asks for.
 */
import { promisify } from 'node:util';
import { gzip, gzipSync } from 'node:zlib';
import type { Snapshot } from '../../evaluation/engine.js';
import { runInSlices, type Steps } from '../../evaluation/steps.js';
import { APPLICATION_JSON, etagMatches, weakEtag, type ProxyResponse } from '../../core/http.js';

const gzipAsync = promisify(gzip);

/** Definitions are for SDKs that hold a token: let no shared cache keep them, and revalidate each time. */
export const DEFINITIONS_CACHE_CONTROL = 'no-cache';

/** Most distinct filters kept per flag set; answers to further ones are built per request. */
const MAX_KEPT_FILTERS = 32;

/** What an SDK asked for: the flag server's filters (`tag` is not supported, as Edge does not). */
export interface DefinitionsFilter {
  /** `project=a&project=b` (or `project=a,b`); empty for every project. */
  projects: string[];
  namePrefix: string | undefined;
}

/** The filter of a query string. */
export function parseFilter(search: string): DefinitionsFilter {
  const params = new URLSearchParams(search);
  const projects = params
    .getAll('project')
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter((value) => value.length > 0);
  const namePrefix = params.get('namePrefix') ?? undefined;
  return { projects, namePrefix: namePrefix === '' ? undefined : namePrefix };
}

interface Built {
  body: Buffer;
  etag: string;
  /** The gzipping on the thread pool, started by the first client that accepts gzip. */
  gzipped?: Promise<unknown>;
  /** The body gzipped, once made (there, or on the spot should that have failed). */
  gzippedBytes?: Buffer;
}

/** The answer for one filter of one flag set, one toggle per step. */
function* build(snapshot: Snapshot, filter: DefinitionsFilter): Steps<Built> {
  const { projects, namePrefix } = filter;
  const features = snapshot.features.filter(
    (feature) =>
      (namePrefix === undefined || feature.name.startsWith(namePrefix)) &&
      (projects.length === 0 || projects.includes(feature.project ?? 'default')),
  );
  // Only the segments the answered definitions name.
  const used = new Set<number>();
  for (const feature of features) {
    for (const strategy of feature.strategies ?? []) for (const id of (strategy as { segments?: number[] }).segments ?? []) used.add(id);
  }
  const segments = snapshot.segments.filter((segment) => used.has(segment.id));
  const query: Record<string, unknown> = {};
  if (projects.length > 0) query.project = projects;
  if (namePrefix !== undefined) query.namePrefix = namePrefix;
  // The bytes of JSON.stringify({ version: 2, features, query, segments }), a toggle at a time.
  // Each toggle's JSON becomes bytes at once: kept as strings across the slices, they outlived
  // young collections and left 3.3 MB of old-generation garbage per change at 5000 flags.
  const parts: Buffer[] = [Buffer.from('{"version":2,"features":[')];
  for (const feature of features) {
    parts.push(Buffer.from(parts.length === 1 ? JSON.stringify(feature) : `,${JSON.stringify(feature)}`));
    yield;
  }
  parts.push(Buffer.from(`],"query":${JSON.stringify(query)},"segments":${JSON.stringify(segments)}}`));
  const body = Buffer.concat(parts);
  yield;
  return { body, etag: weakEtag(body) };
}

/**
 * Gzips the body of `built` once, off the main thread. Should that fail, the answer's `compress`
 * gzips on the spot instead, as before.
 */
async function gzipOf(built: Built): Promise<void> {
  built.gzipped ??= gzipAsync(built.body).then(
    (bytes) => (built.gzippedBytes ??= bytes),
    () => undefined,
  );
  await built.gzipped;
}

/** The kept answers of one proxy's client API. */
export interface DefinitionsCache {
  /**
   * The answer for `filter` on `snapshot`: kept, or built (and kept while there is room); 304
   * without a body when `ifNoneMatch` names its ETag. With `acceptsGzip`, the
   * answer's gzipped copy is made first, unless kept already.
   */
  answer(snapshot: Snapshot, filter: DefinitionsFilter, ifNoneMatch?: string, acceptsGzip?: boolean): Promise<ProxyResponse>;
}

export function createDefinitionsCache(): DefinitionsCache {
  let revision = -1;
  // Builds in progress too: the polls that come while one is made wait for that one.
  let kept = new Map<string, Promise<Built>>();
  return {
    async answer(snapshot, filter, ifNoneMatch, acceptsGzip = false) {
      if (snapshot.revision !== revision) {
        revision = snapshot.revision;
        kept = new Map();
      }
      const key = JSON.stringify([[...filter.projects].sort(), filter.namePrefix ?? null]);
      let building = kept.get(key);
      if (building === undefined) {
        // Not cancelled by close(): it holds nothing open and ends within a few slices.
        building = runInSlices(build(snapshot, filter), () => false);
        if (kept.size < MAX_KEPT_FILTERS) {
          const entries = kept;
          entries.set(key, building);
          building.catch(() => entries.delete(key));
        }
      }
      const answer = await building;
      if (etagMatches(ifNoneMatch, answer.etag)) return { status: 304, headers: { 'Cache-Control': DEFINITIONS_CACHE_CONTROL }, etag: answer.etag };
      if (acceptsGzip) await gzipOf(answer);
      return {
        status: 200,
        headers: { 'Content-Type': APPLICATION_JSON, 'Cache-Control': DEFINITIONS_CACHE_CONTROL },
        body: answer.body,
        etag: answer.etag,
        compress: () => (answer.gzippedBytes ??= gzipSync(answer.body)),
      };
    },
  };
}
