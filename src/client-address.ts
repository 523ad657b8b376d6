/**
 * Client addresses as IP lists name them (stateless; shared by the core and the adapters, which
 * reach it through the public surface).
 */

const IPV4_MAPPED = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;

/**
 * The IPv4 form of an IPv4-mapped IPv6 address (`::ffff:192.0.2.7` → `192.0.2.7`); any other
 * address, or `undefined`, as given. A server listening on `::` (Node's default) sees its IPv4
 * clients in the mapped form, and so do frameworks that report the socket's or a forwarded
 * address (`req.ip`, `ctx.ip`, `request.ip`); `remoteAddress` strategies list the IPv4 form.
 *
 * @example
 * ```ts
 * import { unmapIpv4 } from 'flag-proxy';
 *
 * const proxy = createFlagProxy({ ...options, context: (req) => ({ remoteAddress: unmapIpv4(req.socket.remoteAddress) }) });
 * ```
 */
export function unmapIpv4(address: string | undefined): string | undefined {
  // Runs on every request: an IPv4 address (no leading colon) skips the pattern.
  if (address === undefined || address.charCodeAt(0) !== 58 /* ':' */) return address;
  return IPV4_MAPPED.exec(address)?.[1] ?? address;
}
