/**
 * swagger-ui-dist is an optional peer dependency: located from flag-proxy's own location, and
 * missing (not an error) when it cannot be resolved. What a proxy with `enableOAS` then does is
 * tested on the packed package (test/package/exports.test.ts), where it can really be absent.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { swaggerUiDistDir } from '../../src/openapi/swagger-ui.js';

describe('swaggerUiDistDir', () => {
  it('finds the installed swagger-ui-dist directory, with the files the page serves', () => {
    const dir = swaggerUiDistDir();
    expect(dir).toBeDefined();
    expect(existsSync(path.join(dir as string, 'swagger-ui-bundle.js'))).toBe(true);
  });

  it('answers undefined when the package cannot be resolved', () => {
    const asked: string[] = [];
    const missing = (specifier: string): string => {
      asked.push(specifier);
      throw Object.assign(new Error(`Cannot find module '${specifier}'`), { code: 'MODULE_NOT_FOUND' });
    };
    expect(swaggerUiDistDir(missing)).toBeUndefined();
    expect(asked).toEqual(['swagger-ui-dist/absolute-path.js']);
  });
});
