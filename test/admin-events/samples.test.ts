import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { adminEventSchema } from 'flag-proxy/admin-events';
import { clientAnswering } from './helpers.js';

// Recorded answers of a real unleash-server 8.2.0 (test/fixtures/README.md says how).
const SAMPLES = fileURLToPath(new URL('../fixtures/unleash-server-8.2.0/', import.meta.url));

interface IndexEntry {
  file: string | null;
  request: string;
  status: number;
}

const index = JSON.parse(readFileSync(`${SAMPLES}INDEX.json`, 'utf8')) as IndexEntry[];
const ours = index.filter((e) => e.file !== null && /^GET \/api\/admin\/(search\/)?events(\/|\?|$)/.test(e.request));

/** The path and the decoded query of a request line or URL, comparable whatever the encoding. */
function requestKey(target: string): string {
  const url = new URL(target.replace(/^GET /, ''), 'http://flags.test');
  const params = [...url.searchParams].filter(([k]) => k !== 'limit' && k !== 'offset').sort();
  return `${url.pathname}?${new URLSearchParams(params).toString()}`;
}

describe('unleash-server 8.2.0 samples of the admin events endpoints', () => {
  it('covers every admin-events*.json and admin-search-events*.json file', () => {
    const files = readdirSync(SAMPLES).filter((f) => /^admin-(search-)?events.*\.json$/.test(f));
    expect(files.length).toBeGreaterThanOrEqual(9);
    expect(ours.map((e) => e.file).sort()).toEqual(files.sort());
  });

  it.each(ours.map((e) => [e.file!, e] as const))('%s parses through the client unchanged', async (file, entry) => {
    const text = readFileSync(`${SAMPLES}${file}`, 'utf8');
    const raw = JSON.parse(text) as { events: unknown[] };
    const { client, urls } = clientAnswering(
      'http://flags.test/api/',
      () => new Response(text, { status: 200, headers: { 'content-type': 'application/json; charset=utf-8' } }),
    );

    const target = new URL(entry.request.replace(/^GET /, ''), 'http://flags.test');
    let result: unknown;
    if (target.pathname === '/api/admin/search/events') {
      const filter = (name: string) => target.searchParams.get(name)?.replace(/^IS:/, '');
      const type = target.searchParams.get('type');
      result = await client.search({
        project: filter('project'),
        feature: filter('feature'),
        type: type?.startsWith('IS_ANY_OF:') ? type.slice('IS_ANY_OF:'.length).split(',') : undefined,
        ...(target.searchParams.has('limit') ? { limit: Number(target.searchParams.get('limit')) } : {}),
        ...(target.searchParams.has('offset') ? { offset: Number(target.searchParams.get('offset')) } : {}),
      });
      expect(urls[0] && new URL(urls[0]).searchParams.get('limit')).toBe(target.searchParams.get('limit') ?? '50');
    } else if (target.pathname.startsWith('/api/admin/events/')) {
      result = await client.forToggle(decodeURIComponent(target.pathname.slice('/api/admin/events/'.length)));
    } else {
      const project = target.searchParams.get('project');
      result = await client.list(project === null ? {} : { project });
    }

    // The client asked for what the recorded request asked for, and dropped nothing from the answer.
    expect(urls.map(requestKey)).toEqual([requestKey(entry.request)]);
    expect(result).toEqual(raw);
    for (const event of raw.events) expect(adminEventSchema.safeParse(event).success).toBe(true);
  });
});
