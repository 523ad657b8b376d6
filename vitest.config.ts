import { configDefaults, defineConfig } from 'vitest/config';
import { sourceAliases } from './scripts/package-entries.js';

const ADAPTER_MOUNTS = ['express', 'koa', 'fastify', 'fetch'];

// Tests import the package name, so the public surface is what they exercise: each specifier of
// package.json's exports map is aliased to its source (scripts/package-entries.ts).
export default defineConfig({
  resolve: { alias: sourceAliases() },
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
