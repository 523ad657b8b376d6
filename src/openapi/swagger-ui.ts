/**
 * The interactive OpenAPI page: Swagger UI, served from the installed `swagger-ui-dist` package
 * (never a CDN: the page must work offline and behind firewalls). The only module that knows
 * swagger-ui-dist, an optional peer dependency: it is located (never loaded) when a proxy with
 * `enableOAS` is created, and its files are read from disk on the first request for them.
 *
 * Every URL in the page is relative, so it works wherever the proxy is mounted: the page is
 * written for the path it is served at (`…/docs/openapi` or `…/docs/openapi/`).
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
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

/** The optional peer dependency the page is served from. */
export const SWAGGER_UI_PACKAGE = 'swagger-ui-dist';

/** Resolves a module specifier to a file path, as `require.resolve` does. */
export type ModuleResolver = (specifier: string) => string;

/**
 * Resolves from this module's own location (in the CJS build, tsup's shim gives `import.meta.url`),
 * so the package is found where the proxy is installed, whatever the process's working directory.
 */
const resolveFromHere: ModuleResolver = (specifier) => createRequire(import.meta.url).resolve(specifier);

/**
 * The directory of the installed swagger-ui-dist package (the one of its `absolute-path.js`), or
 * `undefined` when it is not installed.
 */
export function swaggerUiDistDir(resolve: ModuleResolver = resolveFromHere): string | undefined {
  try {
    return path.dirname(resolve(`${SWAGGER_UI_PACKAGE}/absolute-path.js`));
  } catch {
    return undefined;
  }
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
  const dir = swaggerUiDistDir();
  if (dir === undefined) throw new Error(`${SWAGGER_UI_PACKAGE} is not installed`);
  return { contentType, body: await readFile(path.join(dir, name)) };
}
