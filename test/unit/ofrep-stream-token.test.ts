/** The signed token in OFREP event-stream URLs (src/surfaces/ofrep/stream-token.ts). */
import { describe, expect, it } from 'vitest';
import { createStreamTokens, TOKEN_WINDOW_MS } from '../../src/surfaces/ofrep/stream-token.js';

const settings = { apiToken: 'upstream-token', clientKeys: ['key-a', 'key-b'] };

describe('OFREP stream tokens', () => {
  const tokens = createStreamTokens(settings);
  const now = 10 * TOKEN_WINDOW_MS + 123;

  it('carries a hash of the key, never the key, and verifies to that scope', () => {
    const scope = tokens.scopeOf('key-a');
    const token = tokens.mint(scope, now);
    expect(token).not.toContain('key-a');
    expect(tokens.verify(token, now)).toBe(scope);
    expect(scope).not.toBe(tokens.scopeOf('key-b'));
  });

  it('is good until the end of the next window, and no longer', () => {
    const token = tokens.mint(tokens.scopeOf('key-a'), now);
    expect(tokens.verify(token, 12 * TOKEN_WINDOW_MS - 1)).toBeDefined();
    expect(tokens.verify(token, 12 * TOKEN_WINDOW_MS)).toBeUndefined();
  });

  it('refuses a changed expiry, scope or signature, and a scope no configured key has', () => {
    const token = tokens.mint(tokens.scopeOf('key-a'), now);
    const [expires, scope, signature] = token.split('.') as [string, string, string];
    expect(tokens.verify(`${Number(expires) + 3600}.${scope}.${signature}`, now)).toBeUndefined();
    expect(tokens.verify(`${expires}.${tokens.scopeOf('key-b')}.${signature}`, now)).toBeUndefined();
    expect(tokens.verify(`${expires}.${scope}.${signature.slice(1)}A`, now)).toBeUndefined();
    expect(tokens.verify(tokens.mint(tokens.scopeOf('removed-key'), now), now)).toBeUndefined();
    expect(tokens.verify('', now)).toBeUndefined();
  });

  it('is accepted by a proxy with the same configuration, and not by one with other keys', () => {
    const token = tokens.mint(tokens.scopeOf('key-a'), now);
    expect(createStreamTokens(settings).verify(token, now)).toBeDefined();
    expect(createStreamTokens({ ...settings, clientKeys: ['key-a'] }).verify(token, now)).toBeUndefined();
  });
});
