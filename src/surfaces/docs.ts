/**
 * `GET <base>/docs/openapi.json` and the interactive page at `GET <base>/docs/openapi` (and
 * `/docs/openapi/`, with its assets below it), served when `enableOAS` is on. No key and no CORS
 * headers, as the predecessor (its docs routes came before its CORS middleware).
 */
import { gzipSync } from 'node:zlib';
import type { FlagProxyConfig } from '../config/resolve.js';
import { APPLICATION_JSON, TEXT_HTML, weakEtag, type ProxyResponse } from '../core/http.js';
import type { Route, Surface } from '../core/route.js';
import { createOpenApiDocument } from '../openapi/document.js';
import { PAGE_ASSET_NAMES, pageHtml, readPageAsset } from '../openapi/swagger-ui.js';
import { VERSION } from '../version.js';

/** The docs routes of one proxy. */
interface DocsRoutes {
  /** The OpenAPI document. */
  document(): ProxyResponse;
  /** The page, as served at `…/docs/openapi/` (`trailingSlash`) or `…/docs/openapi`. */
  page(trailingSlash: boolean): ProxyResponse;
  /** One of the page's assets (a name from `PAGE_ASSET_NAMES`). */
  asset(name: string): Promise<ProxyResponse>;
}

/** Static assets may be cached for an hour; their ETag revalidates after that. */
const ASSET_CACHE_CONTROL = 'public, max-age=3600';

/** A fixed answer: body encoded, ETag computed and gzip done once. */
function fixed(contentType: string, body: Buffer, extra: Record<string, string> = {}): ProxyResponse {
  let gzipped: Buffer | undefined;
  return {
    status: 200,
    headers: { 'Content-Type': contentType, 'X-Content-Type-Options': 'nosniff', ...extra },
    body,
    etag: weakEtag(body),
    compress: () => (gzipped ??= gzipSync(body)),
  };
}

/** Builds the docs routes; the document is generated here, once, from the request schemas. */
function createDocsRoutes(config: FlagProxyConfig): DocsRoutes {
  const document = fixed(
    APPLICATION_JSON,
    Buffer.from(
      JSON.stringify(
        createOpenApiDocument({
          basePath: config.basePath,
          clientKeysHeaderName: config.clientKeysHeaderName,
          enableAllEndpoint: config.enableAllEndpoint,
          serverSideTokens: config.serverSideTokens.length > 0,
          proxyApi: config.proxyApi,
          frontendApi: config.frontendApi,
          clientApi: config.clientApi,
          backstageProbes: config.backstageProbes,
          ofrepApi: config.ofrepApi,
          clientStreaming: config.clientStreaming,
          version: VERSION,
        }),
      ),
    ),
  );
  const pages = [fixed(TEXT_HTML, Buffer.from(pageHtml(false))), fixed(TEXT_HTML, Buffer.from(pageHtml(true)))] as const;
  // Read on first request and kept (about 2 MB); a failed read is retried by the next request.
  const assets = new Map<string, Promise<ProxyResponse>>();
  return {
    document: () => document,
    page: (trailingSlash) => pages[trailingSlash ? 1 : 0],
    asset(name) {
      let found = assets.get(name);
      if (found === undefined) {
        found = readPageAsset(name).then((asset) => {
          if (asset === undefined) throw new Error(`Unknown docs asset ${name}`);
          return fixed(asset.contentType, asset.body, { 'Cache-Control': ASSET_CACHE_CONTROL });
        });
        found.catch(() => assets.delete(name));
        assets.set(name, found);
      }
      return found;
    },
  };
}

const READ = ['GET', 'HEAD'] as const;

/**
 * The docs surface of one proxy (registered only with `enableOAS`). Both page paths answer
 * (relative asset URLs are written for each), rather than redirect.
 */
export function createDocsSurface(config: FlagProxyConfig): Surface {
  const docs = createDocsRoutes(config);
  const page = '/docs/openapi';
  const routes: Route[] = [
    { path: '/docs/openapi.json', methods: READ, cors: false, handle: () => docs.document() },
    {
      path: page,
      methods: READ,
      cors: false,
      handle: (_service, { req }) => docs.page((req.url ?? '').split('?')[0]?.endsWith('/') === true),
    },
    ...[...PAGE_ASSET_NAMES].map(
      (name): Route => ({ path: `${page}/${name.toLowerCase()}`, methods: READ, cors: false, label: page, handle: () => docs.asset(name) }),
    ),
  ];
  return { name: 'docs', prefixes: [], routes };
}
