/**
 * The gates every surface shares: constant-time key checks, the key a request presents, the
 * not-ready message, and the caller's address.
 */
import * as crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { unmapIpv4 } from '../client-address.js';
import { digestBytes } from '../digests.js';
import type { FlagProxyConfig } from '../config/resolve.js';
import { FlagProxyError } from '../errors.js';
import { loadOnDemand } from '../load-on-demand.js';

/** Answers whether a presented key is configured, in time independent of the configured keys. */
export interface KeyChecker {
  isClientKey(presented: string | undefined): boolean;
  isServerSideToken(presented: string | undefined): boolean;
}

const digest = (value: string): Buffer => digestBytes('sha256', value);

function matcher(keys: readonly string[]): (presented: string | undefined) => boolean {
  const digests = keys.map(digest);
  return (presented) => {
    if (presented === undefined || digests.length === 0) return false;
    const candidate = digest(presented);
    let found = false;
    // Compare against every key, never stopping early, over fixed-length digests.
    for (const known of digests) found = crypto.timingSafeEqual(candidate, known) || found;
    return found;
  };
}

/** Builds the constant-time key checks of a config. */
export function createKeyChecker(config: FlagProxyConfig): KeyChecker {
  return { isClientKey: matcher(config.clientKeys), isServerSideToken: matcher(config.serverSideTokens) };
}

/** The key header's value, if sent once. */
export function presentedKey(req: IncomingMessage, config: FlagProxyConfig): string | undefined {
  const value = req.headers[config.clientKeysHeaderName];
  return typeof value === 'string' ? value : undefined;
}

export const NOT_READY_MESSAGE =
  'The flag proxy has not connected to the flag API and is not ready to accept requests yet.';

export function unauthorized(): FlagProxyError {
  return new FlagProxyError('UNAUTHORIZED', 'Unauthorized', { status: 401 });
}

let proxyAddr: typeof import('proxy-addr') | undefined;

/** The caller's address, honouring `trustProxy` for `X-Forwarded-For` (Express semantics). */
export function clientIp(req: IncomingMessage, config: FlagProxyConfig): string | undefined {
  if (config.trustProxy === false) return unmapIpv4(req.socket.remoteAddress);
  // Loaded once, through require: a CJS package imported from ESM costs Node's CJS-export scan.
  proxyAddr ??= loadOnDemand('proxy-addr') as typeof import('proxy-addr');
  return unmapIpv4(proxyAddr(req, config.trustProxy));
}
