import { defineConfig } from 'tsup';

// One build, shared chunks, so `flag-proxy` and its subpaths share one core (and one error class).
export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'testing/index': 'src/testing/index.ts',
    'admin-events/index': 'src/admin-events/index.ts',
    'redis/index': 'src/redis/index.ts',
    'openfeature/index': 'src/openfeature/index.ts',
    'express/index': 'src/adapters/express.ts',
    'koa/index': 'src/adapters/koa.ts',
    'fastify/index': 'src/adapters/fastify.ts',
    'fetch/index': 'src/adapters/fetch.ts',
    cli: 'src/cli.ts',
  },
  format: ['esm', 'cjs'],
  dts: {
    entry: {
      index: 'src/index.ts',
      'testing/index': 'src/testing/index.ts',
      'admin-events/index': 'src/admin-events/index.ts',
      'redis/index': 'src/redis/index.ts',
    'openfeature/index': 'src/openfeature/index.ts',
      'express/index': 'src/adapters/express.ts',
      'koa/index': 'src/adapters/koa.ts',
      'fastify/index': 'src/adapters/fastify.ts',
      'fetch/index': 'src/adapters/fetch.ts',
    },
  },
  splitting: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  platform: 'node',
});
