/**
 * `enableOAS`: the OpenAPI document at `<base>/docs/openapi.json`, generated from the zod schemas
 * that validate requests and checked with a real OpenAPI validator, and the interactive page at
 * `<base>/docs/openapi` whose every asset is served by the proxy from swagger-ui-dist.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterEach, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { requestSchemas } from '../../src/core/schemas.js';
import { zod } from '../../src/load-on-demand.js';
import { swaggerUiDistDir } from '../../src/openapi/swagger-ui.js';
import { createOpenApiDocument } from '../../src/openapi/document.js';
import { resolveConfig } from '../../src/config/resolve.js';
import { routeTable } from '../../src/surfaces/index.js';
import { feature, startHarness, type Harness } from '../support/harness.js';
import { sample } from './support.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function documentOf(harness: Harness): Promise<any> {
  const res = await harness.request('/docs/openapi.json', { key: null });
  expect(res.status).toBe(200);
  return res.json();
}

describe('GET <base>/docs/openapi.json', () => {
  it('is a valid OpenAPI 3 document (swagger-parser) listing every route, with the client key header as apiKey', async () => {
    h = await startHarness({ features: [feature('a')], options: { enableOAS: true } });
    const document = await documentOf(h);
    await expect(SwaggerParser.validate(structuredClone(document))).resolves.toBeTruthy();
    expect(document.openapi).toMatch(/^3\.0\.\d$/);
    expect(document.servers).toEqual([]);
    expect(Object.keys(document.paths).sort()).toEqual(
      [
        '/proxy',
        '/proxy/all',
        '/proxy/all/client/metrics',
        '/proxy/client/features',
        '/proxy/client/metrics',
        '/proxy/client/register',
        '/proxy/health',
        '/proxy/internal-backstage/prometheus',
        ...['/api/frontend', '/api/proxy'].flatMap((prefix) =>
          ['', '/all', '/features/{name}', '/client/metrics', '/all/client/metrics', '/client/register', '/all/client/register'].map((p) => `${prefix}${p}`),
        ),
        '/api/client/features',
        '/api/client/features/{name}',
        '/api/client/metrics',
        '/api/client/register',
        '/internal-backstage/health',
        '/internal-backstage/ready',
        '/ofrep/v1/evaluate/flags',
        '/ofrep/v1/evaluate/flags/{key}',
        '/ofrep/v1/sse',
        '/api/client/streaming',
        '/api/client/delta',
      ].sort(),
    );
    expect(document.paths['/api/frontend/features/{name}'].get.responses['404']).toBeDefined();
    expect(document.paths['/api/client/features'].get.security).toEqual([{ serverSideToken: [] }]);
    expect(document.paths['/api/frontend/client/metrics'].post.responses['202']).toBeDefined();
    // A POST poll is answered 304 on the frontend API (as by Edge), never on /proxy (as by its predecessor).
    expect(document.paths['/api/frontend'].post.responses['304'].description).toMatch(/POST/);
    expect(document.paths['/api/proxy/all'].post.responses['304']).toBeDefined();
    expect(document.paths['/proxy'].post.responses['304']).toBeUndefined();
    const bulk = document.paths['/ofrep/v1/evaluate/flags'].post;
    expect(bulk.security).toEqual([{ ofrepApiKey: [] }, { ofrepBearer: [] }, { clientKey: [] }]);
    expect(Object.keys(bulk.responses).sort()).toEqual(['200', '304', '400', '401', '403', '503']);
    expect(document.paths['/ofrep/v1/evaluate/flags/{key}'].post.responses['404'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/OfrepKeyedError',
    });
    expect(document.paths['/ofrep/v1/sse'].get.security).toEqual([]);
    expect(document.components.securitySchemes.clientKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'authorization' });
    expect(document.paths['/proxy'].get.security).toEqual([{ clientKey: [] }]);
    expect(document.paths['/proxy/health'].get.security).toEqual([]);
  });

  it('documents exactly the routes of the route table, for every combination of surfaces', async () => {
    const base = { flagUrl: 'http://127.0.0.1:1/api/', flagApiToken: 't', clientKeys: ['k'], enableOAS: true };
    for (const surfaces of [{}, { frontendApi: false }, { clientApi: false, backstageProbes: false }, { proxyApi: false }, { ofrepApi: false }]) {
      const config = resolveConfig({ ...base, ...surfaces });
      const routes = routeTable(config)
        .flatMap((surface) => surface.routes)
        .map((route) => route.path.replace(/:([a-z]+)$/, '{$1}'))
        .filter((path) => !path.startsWith('/docs/'));
      const document = createOpenApiDocument({
        basePath: '',
        clientKeysHeaderName: 'authorization',
        enableAllEndpoint: false,
        serverSideTokens: false,
        version: '0.0.0',
        proxyApi: config.proxyApi,
        frontendApi: config.frontendApi,
        clientApi: config.clientApi,
        backstageProbes: config.backstageProbes,
        ofrepApi: config.ofrepApi,
        clientStreaming: config.clientStreaming,
      }) as { paths: Record<string, unknown> };
      expect(Object.keys(document.paths).sort(), JSON.stringify(surfaces)).toEqual([...new Set(routes)].sort());
      await SwaggerParser.validate(structuredClone(document) as never);
    }
  });

  it('documents the streaming and delta routes for server-side tokens only while clientStreaming is on', async () => {
    h = await startHarness({ features: [feature('a')], options: { enableOAS: true } });
    const document = await documentOf(h);
    expect(document.paths['/api/client/streaming'].get.security).toEqual([{ serverSideToken: [] }]);
    expect(Object.keys(document.paths['/api/client/streaming'].get.responses['200'].content)).toEqual(['text/event-stream']);
    expect(document.paths['/api/client/delta'].get.responses['304']).toBeDefined();
    await h.close();
    h = await startHarness({ features: [feature('a')], options: { enableOAS: true, clientStreaming: false } });
    const off = await documentOf(h);
    expect(Object.keys(off.paths).filter((path) => path === '/api/client/streaming' || path === '/api/client/delta')).toEqual([]);
  });

  it('names the configured header and serves from the base path', async () => {
    h = await startHarness({ options: { enableOAS: true, proxyBasePath: 'flags/v1', clientKeysHeaderName: 'X-Client-Key' } });
    expect(h.base.endsWith('/flags/v1')).toBe(true);
    const document = await documentOf(h);
    await SwaggerParser.validate(structuredClone(document));
    expect(document.servers).toEqual([{ url: '/flags/v1' }]);
    expect(document.components.securitySchemes.clientKey.name).toBe('x-client-key');
    expect(document.components.securitySchemes.serverSideToken.name).toBe('x-client-key');
    // Not at the root: the docs live under the base path.
    expect((await fetch(`${new URL(h.base).origin}/docs/openapi.json`)).status).toBe(404);
  });

  it('carries the very schemas that validate requests (so the two cannot drift)', async () => {
    h = await startHarness({ options: { enableOAS: true } });
    const document = await documentOf(h);
    // The schemas and zod the proxy itself loaded (on demand, through require).
    const { clientMetricsSchema, lookupSchema, querySchema, registerSchema, schemaDocs } = requestSchemas();
    const asOpenApi = (schema: z.ZodType) => JSON.parse(JSON.stringify(zod().toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', metadata: schemaDocs, unrepresentable: 'any' })));
    expect(document.components.schemas.LookupRequest).toEqual(asOpenApi(lookupSchema));
    expect(document.components.schemas.ClientMetrics).toEqual(asOpenApi(clientMetricsSchema));
    expect(document.components.schemas.ClientRegistration).toEqual(asOpenApi(registerSchema));
    const parameters = document.paths['/proxy'].get.parameters.map((p: { name: string }) => p.name);
    expect(parameters).toEqual(Object.keys(querySchema.shape));
    // And what the document says is what the proxy enforces: a count above its maximum is refused.
    const max = document.components.schemas.ClientMetrics.properties.bucket.properties.toggles.additionalProperties.properties.yes.maximum;
    const report = (yes: number) => ({
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ appName: 'a', instanceId: 'i', bucket: { start: new Date().toISOString(), stop: new Date().toISOString(), toggles: { t: { yes, no: 0 } } } }),
    });
    expect((await h.request('/proxy/client/metrics', report(max))).status).toBe(200);
    expect((await h.request('/proxy/client/metrics', report(max + 1))).status).toBe(400);
  });

  it('needs no key, carries no CORS headers, answers HEAD and If-None-Match, and matches paths case-insensitively', async () => {
    h = await startHarness({ options: { enableOAS: true } });
    const res = await h.raw('/docs/openapi.json', { headers: { origin: 'https://app.example', authorization: 'not-a-key' } });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const etag = res.headers.etag!;
    expect((await h.raw('/docs/openapi.json', { headers: { 'if-none-match': etag } })).status).toBe(304);
    const head = await h.raw('/docs/openapi.json', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect((await h.raw('/DOCS/OpenAPI.json')).status).toBe(200);
    expect((await h.raw('/docs/openapi.json', { method: 'POST' })).status).toBe(404);
    const text = await h.proxy.metrics();
    expect(sample(text, 'flag_proxy_http_requests_total', { route: '/docs/openapi.json', method: 'GET', status: '200' })).toBe(2);
    expect(sample(text, 'flag_proxy_http_requests_total', { route: '/docs/openapi.json', method: 'GET', status: '304' })).toBe(1);
  });
});

describe('GET <base>/docs/openapi (the interactive page)', () => {
  it.each(['/docs/openapi', '/docs/openapi/'])('serves %s with every asset from the proxy itself (no CDN)', async (pagePath) => {
    h = await startHarness({ options: { enableOAS: true, proxyBasePath: '/base' } });
    const pageUrl = `${h.base}${pagePath}`;
    const page = await fetch(pageUrl);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('access-control-allow-origin')).toBeNull();
    const html = await page.text();
    expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    const references = [...html.matchAll(/(?:src|href|data-openapi-url)="([^"]+)"/g)].map((m) => m[1]!);
    expect(references.length).toBeGreaterThanOrEqual(5);
    const dist = swaggerUiDistDir() as string;
    for (const reference of references) {
      const url = new URL(reference, pageUrl);
      expect(url.origin).toBe(new URL(h.base).origin);
      const res = await fetch(url, { headers: { 'accept-encoding': 'identity' } });
      expect(res.status, url.pathname).toBe(200);
      const name = path.basename(url.pathname);
      if (name === 'openapi.json') expect(((await res.json()) as { openapi?: string }).openapi).toBeDefined();
      else if (name.startsWith('swagger-ui') || name.startsWith('favicon')) expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(path.join(dist, name)))).toBe(true);
      else expect(await res.text()).toContain('SwaggerUIBundle(');
    }
  });

  it('gzips the bundle for clients that accept it, with types and caching headers', async () => {
    h = await startHarness({ options: { enableOAS: true } });
    const res = await h.raw('/docs/openapi/swagger-ui-bundle.js', { headers: { 'accept-encoding': 'gzip' } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.headers['cache-control']).toBe('public, max-age=3600');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    const css = await h.raw('/docs/openapi/swagger-ui.css');
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    const raw = await new Promise<Buffer>((resolve, reject) => {
      http
        .get(`${h!.base}/docs/openapi/swagger-ui-bundle.js`, { headers: { 'accept-encoding': 'gzip' } }, (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => resolve(Buffer.concat(chunks)));
        })
        .on('error', reject);
    });
    expect(gunzipSync(raw).equals(readFileSync(path.join(swaggerUiDistDir() as string, 'swagger-ui-bundle.js')))).toBe(true);
  });

  it('serves nothing else under /docs/openapi/, and no docs route at all when enableOAS is off', async () => {
    h = await startHarness({ options: { enableOAS: true } });
    expect((await h.raw('/docs/openapi/index.html')).status).toBe(404);
    expect((await h.raw('/docs/openapi/../../package.json')).status).toBe(404);
    expect((await h.raw('/docs/openapi/swagger-ui-bundle.js.map')).status).toBe(404);
    await h.close();
    h = await startHarness({});
    for (const docsPath of ['/docs/openapi.json', '/docs/openapi', '/docs/openapi/swagger-ui-bundle.js']) expect((await h.raw(docsPath)).status).toBe(404);
  });
});
