/**
 * Idle memory: a proxy loads unleash-client, prom-client, the proxy agents, re2js and ip-address
 * (qs, for a GET query not in the SDKs' shape; zod, for options, flag sets and requests the
 * hand-written checks leave to the schema) only when their configuration uses them (custom strategies or a toggle the compiled evaluator
 * leaves to unleash-client; a scrape or an injected registry; an HTTP(S)_PROXY that applies; a
 * REGEX constraint; a remoteAddress strategy or an IN_CIDR constraint). Each scenario
 * runs in a fresh process (test/unit/fixtures/loaded-packages.ts), so nothing loaded earlier hides
 * a load.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { importsOf, srcDir } from '../support/imports.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);

interface Loaded {
  atImport: string[];
  beforeScrape: string[];
  afterScrape: string[];
  answer: { status: number; toggles?: string[]; problem?: string };
  metrics?: string;
}

async function scenario(name: string): Promise<Loaded> {
  const env = { ...process.env };
  for (const key of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'NO_PROXY', 'no_proxy']) delete env[key];
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'test/unit/fixtures/loaded-packages.ts', name], { cwd: root, env, timeout: 20_000 });
  return JSON.parse(stdout) as Loaded;
}

/** The packages `import 'flag-proxy'` loads as it is imported: static value imports from src/index.ts on. */
function packagesLoadedAtImport(): string[] {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const { specifier, typeOnly, dynamic } of importsOf(file)) {
      if (typeOnly || dynamic || specifier.startsWith('node:')) continue;
      if (specifier.startsWith('.')) visit(path.resolve(path.dirname(file), specifier.replace(/\.js$/, '.ts')));
      else packages.add(specifier);
    }
  };
  visit(path.join(srcDir, 'index.ts'));
  return [...packages];
}

describe('packages loaded on demand', () => {
  it('imports no package at all with flag-proxy: each is required when first used (zod and the CJS ones included)', () => {
    // An ESM import of a CommonJS package also costs Node's scan of its exports (about 5 MB of RSS).
    expect(packagesLoadedAtImport()).toEqual([]);
  });

  it('loads none of them for a proxy with built-in strategies, direct to its upstream, not scraped', async () => {
    const result = await scenario('idle');
    expect(result.answer).toEqual({ status: 200, toggles: ['on'] });
    // zod included: the options, the flag set and the SDK query passed the hand-written checks.
    expect(result.atImport).toEqual([]);
    expect(result.afterScrape).toEqual([]);
  });

  it('loads prom-client at the first scrape, and the metrics are all there', async () => {
    const result = await scenario('scrape');
    expect(result.beforeScrape).toEqual([]);
    expect(result.afterScrape).toEqual(['prom-client']);
    expect(result.metrics).toBe('flag_proxy_up 1');
  });

  it('loads unleash-client for custom strategies (subclassing Strategy loads it)', async () => {
    const result = await scenario('custom-strategy');
    expect(result.atImport).toEqual([]);
    expect(result.beforeScrape).toEqual(expect.arrayContaining(['unleash-client', 'semver']));
    expect(result.answer).toEqual({ status: 200, toggles: ['on'] });
  });

  it('loads unleash-client once a flag set has a toggle the compiled evaluator leaves to it', async () => {
    const result = await scenario('unknown-strategy');
    expect(result.beforeScrape).toEqual(expect.arrayContaining(['unleash-client']));
    expect(result.beforeScrape).not.toContain('prom-client');
  });

  it('loads re2js and ip-address once a flag set has a REGEX or IN_CIDR constraint, and still not unleash-client', async () => {
    const result = await scenario('regex-cidr');
    expect(result.answer).toEqual({ status: 200, toggles: ['on', 'office'] });
    expect(result.beforeScrape).toEqual(['re2js', 'ip-address']);
  });

  it('loads qs for the first GET query not in the SDKs\' shape, and answers it', async () => {
    const result = await scenario('list-query');
    expect(result.atImport).toEqual([]);
    // The query qs parses is then validated by the schema: zod comes with it.
    expect(result.beforeScrape).toEqual(['qs', 'zod']);
    expect(result.answer).toEqual({ status: 200, toggles: ['on'] });
  });

  it('answers a POST lookup in the SDKs\' shape without zod, and loads it for one the schema must judge', async () => {
    const plain = await scenario('post');
    expect(plain.answer).toEqual({ status: 200, toggles: ['on', 'office', 'missing'] });
    expect(plain.afterScrape).toEqual([]);
    const invalid = await scenario('invalid-post');
    expect(invalid.atImport).toEqual([]);
    expect(invalid.answer).toEqual({ status: 400, problem: 'must be array' });
    expect(invalid.beforeScrape).toEqual(['zod']);
  });

  it('takes a browser SDK\'s usage report and a server SDK\'s registration without zod, and loads it for a report the schema must judge', async () => {
    // Every browser sends one every 30 s: were each judged by the schema, every proxy in front of
    // a web app would load zod (about 10 MB) and run it on half its requests.
    const plain = await scenario('usage-report');
    expect(plain.answer).toEqual({ status: 200 });
    expect(plain.afterScrape).toEqual([]);
    const invalid = await scenario('invalid-usage-report');
    expect(invalid.answer).toEqual({ status: 400, problem: 'must match format "date-time"' });
    expect(invalid.beforeScrape).toEqual(['zod']);
    const registration = await scenario('registration');
    expect(registration.answer).toEqual({ status: 200 });
    expect(registration.afterScrape).toEqual([]);
  });

  it('loads the HTTP proxy agent when HTTP_PROXY applies to the upstream, and not the HTTPS one', async () => {
    const result = await scenario('http-proxy');
    expect(result.beforeScrape).toContain('http-proxy-agent');
    expect(result.beforeScrape).not.toContain('https-proxy-agent');
    expect(result.beforeScrape).not.toContain('unleash-client');
  });
});
