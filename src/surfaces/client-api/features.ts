/**
 * `GET /api/client/features`: the flag set the proxy holds, as the flag server's client API serves
 * it to server SDKs and to other proxies — `{ version, features, query, segments }`, filtered by the
 * `project` and `namePrefix` parameters SDKs send. Each (flag-set revision, filter) is serialized
 * once, with its ETag and gzip, and kept until the flag set changes: a poll whose `If-None-Match`
 * matches is answered 304 from the kept ETag, serializing nothing.
 *
 * Unlike the evaluation routes (Express's freshness rule, as the predecessor), a request's
 * `Cache-Control: no-cache` does not rule out the 304 here: `fetch` adds it to every request that
 * carries `If-None-Match` (the Fetch standard turns such a request's cache mode to no-store), so
 * fetch-based SDKs (`@unleash/nextjs`'s `getDefinitions`) would never be answered 304. A 304 after
 * revalidation with the origin is what `no-cache` asks for.
 */
import { gzipSync } from 'node:zlib';
import type { Snapshot } from '../../evaluation/engine.js';
import { APPLICATION_JSON, etagMatches, weakEtag, type ProxyResponse } from '../../core/http.js';

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
  gzipped?: Buffer;
}

/** The answer for one filter of one flag set. */
function build(snapshot: Snapshot, filter: DefinitionsFilter): Built {
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
  const body = Buffer.from(JSON.stringify({ version: 2, features, query, segments }));
  return { body, etag: weakEtag(body) };
}

/** The kept answers of one proxy's client API. */
export interface DefinitionsCache {
  /**
   * The answer for `filter` on `snapshot`: kept, or built (and kept while there is room); 304
   * without a body when `ifNoneMatch` names its ETag.
   */
  answer(snapshot: Snapshot, filter: DefinitionsFilter, ifNoneMatch?: string): ProxyResponse;
}

export function createDefinitionsCache(): DefinitionsCache {
  let revision = -1;
  let kept = new Map<string, Built>();
  return {
    answer(snapshot, filter, ifNoneMatch) {
      if (snapshot.revision !== revision) {
        revision = snapshot.revision;
        kept = new Map();
      }
      const key = JSON.stringify([[...filter.projects].sort(), filter.namePrefix ?? null]);
      let built = kept.get(key);
      if (built === undefined) {
        built = build(snapshot, filter);
        if (kept.size < MAX_KEPT_FILTERS) kept.set(key, built);
      }
      const answer = built;
      const headers = { 'Content-Type': APPLICATION_JSON, 'Cache-Control': DEFINITIONS_CACHE_CONTROL };
      if (etagMatches(ifNoneMatch, answer.etag)) return { status: 304, headers: { 'Cache-Control': DEFINITIONS_CACHE_CONTROL }, etag: answer.etag };
      return {
        status: 200,
        headers,
        body: answer.body,
        etag: answer.etag,
        compress: () => (answer.gzipped ??= gzipSync(answer.body)),
      };
    },
  };
}
