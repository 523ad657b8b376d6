/**
 * The token in an OFREP event-stream URL. A browser's `EventSource` cannot send headers, so the
 * stream is authorised by its URL, which must then never carry the client key: it carries a short
 * HMAC-signed token instead, `<expiry>.<scope>.<signature>`, where the scope is a hash of the
 * client key that fetched it (so removing a key from the config also ends its streams).
 *
 * Tokens are minted per time window: one minted in window `w` expires at the end of window
 * `w + 1`, so a URL handed out is good for at least one whole window. The window's number is part
 * of the bulk answer's ETag, so a client whose URL may have gone stale gets a fresh answer (and a
 * fresh URL) instead of a 304 that keeps the old one.
 *
 * The signing key is derived from the proxy's upstream token and client keys, so proxies with the
 * same configuration (a fleet behind a load balancer) accept each other's tokens, and a restart
 * does not invalidate the URLs browsers hold.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** Length of a token window. */
export const TOKEN_WINDOW_MS = 30 * 60 * 1000;

export interface StreamTokens {
  /** The scope of a client key: a short hash, never the key. */
  scopeOf(clientKey: string): string;
  /** The token window at `now`. */
  windowAt(now: number): number;
  /** A token for `scope`, minted in the window of `now`. */
  mint(scope: string, now: number): string;
  /** The scope of a valid, unexpired token for a configured key; `undefined` otherwise. */
  verify(token: string, now: number): string | undefined;
}

const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();

/**
 * The scope a client key's stream tokens name: a short hash, never the key (the same on every
 * proxy). src/multi-env/ofrep.ts computes the same to route a stream to its environment.
 */
export function streamScopeOf(clientKey: string): string {
  return sha256(`scope\0${clientKey}`).toString('base64url').slice(0, 22);
}

/** Creates the token minter and checker of one proxy. */
export function createStreamTokens(settings: { apiToken: string; clientKeys: readonly string[]; windowMs?: number }): StreamTokens {
  const windowMs = settings.windowMs ?? TOKEN_WINDOW_MS;
  const secret = sha256(['flag-proxy ofrep event streams', settings.apiToken, ...settings.clientKeys].join('\0'));
  const scopeOf = streamScopeOf;
  const scopes = new Set(settings.clientKeys.map(scopeOf));
  const sign = (payload: string): Buffer => createHmac('sha256', secret).update(payload).digest();
  return {
    scopeOf,
    windowAt: (now) => Math.floor(now / windowMs),
    mint(scope, now) {
      const expires = (Math.floor(now / windowMs) + 2) * windowMs;
      const payload = `${Math.floor(expires / 1000)}.${scope}`;
      return `${payload}.${sign(payload).toString('base64url')}`;
    },
    verify(token, now) {
      const parts = token.split('.');
      if (parts.length !== 3) return undefined;
      const [expires, scope, signature] = parts as [string, string, string];
      const expected = sign(`${expires}.${scope}`);
      const given = Buffer.from(signature, 'base64url');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      if (!/^\d+$/.test(expires) || Number(expires) * 1000 <= now) return undefined;
      return scopes.has(scope) ? scope : undefined;
    },
  };
}
