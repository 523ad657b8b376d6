import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// `npm run test:browser`: the tests under test/browser, in headless Chromium (playwright-core).
// Kept out of `npm test`, which has no browser; same aliases as the main config.
export default defineConfig({
  resolve: base.resolve,
  test: {
    name: 'browser',
    include: ['test/browser/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One browser at a time: Chromium is heavy, and the screenshots must not race.
    fileParallelism: false,
  },
});
