import { defineConfig } from 'tsup';
import { buildEntries } from './scripts/package-entries.js';

// The entries come from package.json's exports map (and `bin` for the CLI): one list of subpaths.
const entries = buildEntries();

// One build, shared chunks, so `flag-proxy` and its subpaths share one core (and one error class).
export default defineConfig({
  entry: entries.all,
  format: ['esm', 'cjs'],
  dts: { entry: entries.withTypes },
  splitting: true,
  // `import.meta.url` in the CJS build too (src/openapi/swagger-ui.ts resolves from its own location).
  shims: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  platform: 'node',
});
