/**
 * Loads a CommonJS dependency the first time a configuration needs it, not at import: unleash-client
 * (custom strategies, toggles the compiled evaluator leaves to it, bootstrap sources), prom-client
 * (an injected registry, or the first scrape), the proxy agents (an HTTP(S)_PROXY that applies to
 * the upstream), qs (the first GET query not in the SDKs' shape), zod (options, flag sets and
 * requests that the hand-written checks do not accept outright, and the OpenAPI document), and
 * cors, proxy-addr and proxy-from-env (when the proxy is created or first fetches: required rather
 * than imported, since an ES import of a CommonJS package also costs Node's scan of its exports).
 * A proxy that uses none of them does not pay their memory (tens of MB of RSS).
 *
 * Node caches what it loads, so a second call costs a lookup. `import.meta.url` also works in the
 * CJS build (tsup's shim), in a bundle that keeps packages external (bench/build.ts), and in a
 * webpack server bundle (Next.js), where Node's own require loads them from `node_modules` at run time.
 */
import * as nodeModule from 'node:module';

// Found by a name no bundler follows: webpack (a Next.js server build) turns a literal
// `createRequire(import.meta.url)` into a require of its own, and left this export undefined.
const CREATE_REQUIRE = Object.keys({ createRequire: 0 })[0] as 'createRequire';

/** `require`, resolved from this package. Callers cast the result with `typeof import('…')`. */
export const loadOnDemand: NodeJS.Require = nodeModule[CREATE_REQUIRE](import.meta.url);

/**
 * zod, loaded on first use (about 10 MB of RSS). Every schema is built from it inside a function,
 * never at import: common options, flag sets and SDK-shaped requests are accepted by hand-written
 * checks, and zod is consulted for the rest (and for the message of what is refused).
 */
export function zod(): typeof import('zod').z {
  return (loadOnDemand('zod') as typeof import('zod')).z;
}
