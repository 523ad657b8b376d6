/**
 * Which environment an OFREP event stream belongs to: a browser's stream sends no key, only the
 * token its URL carries, which names a hash of the key that fetched it.
 *
 * The hash must be the one src/surfaces/ofrep/stream-token.ts puts in tokens (this module may not
 * import it: see test/scale/boundaries.test.ts); test/scale/multi-env.test.ts opens a stream
 * through here, so the two cannot drift apart unnoticed.
 */
import { createHash } from 'node:crypto';

/** The scope stream tokens of `clientKey` name. */
export function streamScopeOf(clientKey: string): string {
  return createHash('sha256').update(`scope\0${clientKey}`).digest('base64url').slice(0, 22);
}

/** The scope named by the token in an event-stream query (`t=<expiry>.<scope>.<signature>`), unverified. */
export function tokenScopeOf(search: string): string {
  return (new URLSearchParams(search).get('t') ?? '').split('.')[1] ?? '';
}
