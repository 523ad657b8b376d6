import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(`./src/${p}`, import.meta.url));

// Tests import the package name, so the public surface is what they exercise.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^flag-proxy\/testing$/, replacement: src('testing/index.ts') },
      { find: /^flag-proxy\/admin-events$/, replacement: src('admin-events/index.ts') },
      { find: /^flag-proxy$/, replacement: src('index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
  },
});
