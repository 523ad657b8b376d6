// @ts-check
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repository = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The directory Turbopack may compile from: the repository (this example imports its `src/` and
 * `examples/demo.ts`), widened to hold `node_modules` when that is a link to elsewhere.
 */
function workspaceRoot() {
  const modules = path.dirname(realpathSync(path.join(repository, 'node_modules')));
  let root = repository;
  while (path.relative(root, modules).startsWith('..')) root = path.dirname(root);
  return root;
}

/** @type {import('next').NextConfig} */
const config = {
  // The proxy reads node built-ins and unleash-client: keep those as Node modules on the server.
  serverExternalPackages: ['unleash-client', 'prom-client', 'esbuild'],
  turbopack: { root: workspaceRoot() },
  // The repository's sources import each other as `./x.js` (Node ESM); the files are `./x.ts`.
  webpack(webpackConfig) {
    webpackConfig.resolve.extensionAlias = { ...webpackConfig.resolve.extensionAlias, '.js': ['.ts', '.js'] };
    return webpackConfig;
  },
};
export default config;
