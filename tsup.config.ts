import { defineConfig } from 'tsup';

// One build, shared chunks, so `flag-proxy` and its subpaths share one core (and one error class).
export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'testing/index': 'src/testing/index.ts',
    'admin-events/index': 'src/admin-events/index.ts',
    cli: 'src/cli.ts',
  },
  format: ['esm', 'cjs'],
  dts: {
    entry: { index: 'src/index.ts', 'testing/index': 'src/testing/index.ts', 'admin-events/index': 'src/admin-events/index.ts' },
  },
  splitting: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  platform: 'node',
});
