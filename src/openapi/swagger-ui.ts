/**
 * The interactive OpenAPI page: Swagger UI, served from the installed `swagger-ui-dist` package
 * (never a CDN: the page must work offline and behind firewalls). The only importer of
 * swagger-ui-dist: of it, only the small `absolute-path.js` is loaded, to find its files on disk.
 *
 * Every URL in the page is relative, so it works wherever the proxy is mounted: the page is
 * written for the path it is served at (`…/docs/openapi` or `…/docs/openapi/`).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

/** One static file of the page. */
export interface PageAsset {
  contentType: string;
  body: Buffer;
}

/** The files below `…/docs/openapi/` that the page loads, by name, with their content types. */
const DIST_ASSETS: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

/** Our own initializer: reads the document URL from the page, so it needs no inline script. */
const INIT_SCRIPT = 'flag-proxy-openapi.js';
const INIT_SOURCE = `window.addEventListener('load', function () {
  var root = document.getElementById('swagger-ui');
  window.ui = SwaggerUIBundle({
    url: root.getAttribute('data-openapi-url'),
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout'
  });
});
`;

/** Names served below `…/docs/openapi/`. */
export const PAGE_ASSET_NAMES: ReadonlySet<string> = new Set([...Object.keys(DIST_ASSETS), INIT_SCRIPT]);

/**
 * The directory of the installed swagger-ui-dist package. Found through the package's own
 * `absolute-path.js` (its `__dirname`), imported dynamically: that resolves from this module in
 * the ESM build, the CJS build and the sources alike, without `import.meta` (absent in CJS).
 */
export async function swaggerUiDistDir(): Promise<string> {
  const { default: absolutePath } = await import('swagger-ui-dist/absolute-path.js');
  return absolutePath();
}

/**
 * The HTML page. `trailingSlash` tells which of the two paths it is served at: from
 * `…/docs/openapi/` the assets are siblings, from `…/docs/openapi` they are one level down.
 */
export function pageHtml(trailingSlash: boolean): string {
  const assets = trailingSlash ? '' : 'openapi/';
  const documentUrl = trailingSlash ? '../openapi.json' : 'openapi.json';
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>flag-proxy API</title>
<link rel="stylesheet" href="${assets}swagger-ui.css">
<link rel="icon" type="image/png" href="${assets}favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="${assets}favicon-16x16.png" sizes="16x16">
</head>
<body>
<div id="swagger-ui" data-openapi-url="${documentUrl}"></div>
<script src="${assets}swagger-ui-bundle.js" charset="utf-8"></script>
<script src="${assets}${INIT_SCRIPT}" charset="utf-8"></script>
</body>
</html>
`;
}

/** Reads one page asset (`name` from {@link PAGE_ASSET_NAMES}), or `undefined` for another name. */
export async function readPageAsset(name: string): Promise<PageAsset | undefined> {
  if (name === INIT_SCRIPT) return { contentType: 'text/javascript; charset=utf-8', body: Buffer.from(INIT_SOURCE) };
  if (!Object.hasOwn(DIST_ASSETS, name)) return undefined;
  const contentType = DIST_ASSETS[name] as string;
  return { contentType, body: await readFile(path.join(await swaggerUiDistDir(), name)) };
}
