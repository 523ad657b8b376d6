/**
 * The example's browser pages, shared by the Express and Koa examples:
 *
 * - `GET /`: a demo page that shows the flags the proxy answers for a context you choose;
 * - `GET /sdk`: a bare page that starts the SDK and records its events (for the browser tests,
 *   and for poking at `sdkPage.client` in devtools);
 * - `GET /assets/<page>.js`: each page's script, bundled with `unleash-proxy-client` (the Unleash
 *   browser SDK) by esbuild on first request: served from here, never from a CDN, no build step.
 *
 * The pages get their settings from a JSON island the server writes into the HTML. A page opened
 * with `?proxy=<url>` talks to that proxy instead (say the one `npm start` runs), with `?key=` or
 * the demo key, never with this app's own key.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEMO_CLIENT_KEY } from '../../demo.js';

/** The pages there are. */
export const PAGE_NAMES = ['demo', 'sdk'] as const;
export type PageName = (typeof PAGE_NAMES)[number];

/** Where the pages find the proxy. */
export interface PageSettings {
  /** Path of the proxy's routes on this app, e.g. `/api/flags/proxy`. */
  proxyPath: string;
  /**
   * The frontend client key the pages send to that proxy. Frontend keys are public by design:
   * every browser that evaluates flags holds one. Never put a server-side token here.
   */
  clientKey: string | undefined;
}

/** Renders the pages and bundles their scripts. */
export interface BrowserPages {
  /** The HTML of one page. */
  html(name: PageName): string;
  /** The bundled script `file` (`demo.js`, `sdk.js`), or `undefined` when there is no such script. */
  script(file: string): Promise<string | undefined>;
}

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));

/** JSON safe to put inside a `<script>` element (no `</script>`, no `<!--`). */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

/** Bundles are built once per process and kept; a failed build is retried on the next request. */
const bundles = new Map<string, Promise<string>>();

async function bundle(entry: string): Promise<string> {
  // Imported on first use, so an app that never serves a page never loads esbuild.
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: ['es2020'],
    minify: true,
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

export function browserPages(settings: PageSettings): BrowserPages {
  const config = scriptJson({ proxyPath: settings.proxyPath, clientKey: settings.clientKey ?? null, demoKey: DEMO_CLIENT_KEY });
  const templates = new Map(PAGE_NAMES.map((name) => [name, readFileSync(here(`./${name}.html`), 'utf8').replace('__PAGE_CONFIG__', () => config)]));
  return {
    html: (name) => templates.get(name)!,
    async script(file) {
      const name = /^([a-z]+)\.js$/.exec(file)?.[1];
      if (!name || !(PAGE_NAMES as readonly string[]).includes(name)) return undefined;
      let built = bundles.get(name);
      if (!built) {
        built = bundle(here(`./${name}.js`));
        bundles.set(name, built);
        built.catch(() => bundles.delete(name));
      }
      return built;
    },
  };
}
