import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(`./src/${p}`, import.meta.url));
const ADAPTER_MOUNTS = ['express', 'koa', 'fastify', 'fetch'];

// Tests import the package name, so the public surface is what they exercise.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^flag-proxy\/testing$/, replacement: src('testing/index.ts') },
      { find: /^flag-proxy\/admin-events$/, replacement: src('admin-events/index.ts') },
      { find: /^flag-proxy\/redis$/, replacement: src('redis/index.ts') },
      { find: /^flag-proxy\/openfeature$/, replacement: src('openfeature/index.ts') },
      { find: /^flag-proxy\/(express|koa|fastify|fetch)$/, replacement: src('adapters/$1.ts') },
      { find: /^flag-proxy$/, replacement: src('index.ts') },
    ],
  },
  test: {
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    projects: [
      // test/browser needs Chromium: run by `npm run test:browser` (vitest.browser.config.ts), not here.
      { extends: true, test: { name: 'node', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, 'test/browser/**'] } },
      // The contract suite again through every adapter, each mounted under /api/flags in its host
      // (test/support/harness.ts). The 279-case client specification runs once more, through the
      // fetch bridge: the one adapter that re-serialises requests.
      ...ADAPTER_MOUNTS.map((mount) => ({
        extends: true as const,
        test: {
          name: `contract:${mount}`,
          include: ['test/contract/**/*.test.ts'],
          exclude: mount === 'fetch' ? [] : ['test/contract/client-specification.test.ts'],
          env: { FLAG_PROXY_TEST_MOUNT: mount },
        },
      })),
    ],
  },
});
