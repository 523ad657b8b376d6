// @ts-check
/**
 * Build with `next build --webpack`: this example imports the repository's TypeScript sources,
 * which import each other as `./x.js` (Node ESM) while the files are `./x.ts`; webpack maps that
 * (`extensionAlias`), Turbopack does not. An app importing the published package (built JavaScript)
 * has no such imports.
 *
 * @type {import('next').NextConfig}
 */
const config = {
  // The proxy reads node built-ins and unleash-client: keep those as Node modules on the server.
  serverExternalPackages: ['unleash-client', 'prom-client', 'esbuild'],
  webpack(webpackConfig) {
    webpackConfig.resolve.extensionAlias = { ...webpackConfig.resolve.extensionAlias, '.js': ['.ts', '.js'] };
    return webpackConfig;
  },
};
export default config;
