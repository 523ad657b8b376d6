/**
 * IP addresses for the remoteAddress strategy and the IN_CIDR operator. unleash-client parses both
 * sides with the `ip-address` package on every call; here the ranges are parsed once (by that same
 * package, so what counts as a valid range is identical) and a plain dotted-quad IPv4 address is
 * matched with integer arithmetic. Anything else (IPv6, an address with a suffix, a non-string)
 * takes the package's own path, call for call as unleash-client does. The package is loaded when
 * a flag set first has such a strategy or operator.
 */
import type { Address4 } from 'ip-address';
import { loadOnDemand } from '../../load-on-demand.js';
import { exactList, lookupHas, lookupOf } from './shared.js';

type IpAddress = typeof import('ip-address');
const ipAddress = (): IpAddress => loadOnDemand('ip-address') as IpAddress;

/** An IPv4 range as `ip-address` parsed it: the address as an integer and the prefix length. */
interface V4Range {
  base: number;
  bits: number;
  parsed: Address4;
}

/**
 * The integer value of a string `ip-address` accepts as a plain IPv4 address (exactly its
 * RE_ADDRESS: four decimal octets 0–255 without leading zeros, and no suffix), or -1 for any other
 * string (which may still be valid for `ip-address`, e.g. with a `/n` suffix: the caller then asks it).
 */
export function plainIPv4(s: string): number {
  const n = s.length;
  if (n < 7 || n > 15) return -1;
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < n; i += 1) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots += 1;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return -1; // a leading zero
      octet = octet * 10 + (c - 48);
      digits += 1;
      if (octet > 255) return -1;
    } else {
      return -1;
    }
  }
  if (digits === 0 || dots !== 3) return -1;
  return value * 256 + octet;
}

/** Whether the plain IPv4 address `ip` is inside `range` (its first `bits` bits are equal). */
function inV4Range(ip: number, range: V4Range): boolean {
  // `>>> 32` would shift by 0, hence the /0 case apart.
  return range.bits === 0 || ((ip ^ range.base) >>> (32 - range.bits)) === 0;
}

function parseV4Range({ Address4 }: IpAddress, range: string): V4Range | undefined {
  if (!Address4.isValid(range)) return undefined;
  const parsed = new Address4(range);
  return { base: Number(parsed.bigInt()), bits: parsed.subnetMask, parsed };
}

/**
 * The remoteAddress strategy's check for its `IPs` parameter: true when the context's
 * `remoteAddress` equals one of the comma-separated entries (as written), or is an IPv4 address
 * inside one that `ip-address` reads as an IPv4 address or range.
 */
export function compileRemoteAddress(ips: string): (remoteAddress: unknown) => boolean {
  const ip4 = ipAddress();
  const entries = ips.split(/\s*,\s*/);
  const exact = lookupOf(entries);
  const ranges = exactList(entries.map((entry) => parseV4Range(ip4, entry)).filter((r): r is V4Range => r !== undefined));
  return (remoteAddress) => {
    if (typeof remoteAddress !== 'string') {
      // new Address4() of anything but a string (or a String object) throws: not in any range.
      return remoteAddress instanceof String && ranges.length > 0 && inRangesSlow(ip4, ranges, String(remoteAddress));
    }
    if (lookupHas(exact, remoteAddress)) return true;
    const ip = plainIPv4(remoteAddress);
    if (ip >= 0) {
      for (const range of ranges) if (inV4Range(ip, range)) return true;
      return false;
    }
    // Not a plain address: ip-address accepts it only with a /n suffix (throwing costs, so ask only then).
    return remoteAddress.includes('/') && inRangesSlow(ip4, ranges, remoteAddress);
  };
}

/** unleash-client's way, for an address with a suffix: `new Address4(it).isInSubnet(range)`, a throw meaning no. */
function inRangesSlow({ Address4 }: IpAddress, ranges: readonly V4Range[], remoteAddress: string): boolean {
  let remote: Address4;
  try {
    remote = new Address4(remoteAddress);
  } catch {
    return false;
  }
  return ranges.some((range) => remote.isInSubnet(range.parsed));
}

/**
 * The IN_CIDR operator's check for its (cleaned) values, given the context value as a string:
 * whether it is an IPv4 (or IPv6) address equal to, or inside, one of the ranges of its family.
 */
export function compileCidr(values: readonly string[]): (value: string) => boolean {
  const ip = ipAddress();
  const { Address4, Address6 } = ip;
  const v4 = exactList(values.map((range) => parseV4Range(ip, range)).filter((r): r is V4Range => r !== undefined));
  const v6 = values.filter((range) => Address6.isValid(range)).map((range) => new Address6(range));
  return (value) => {
    const ip = plainIPv4(value);
    if (ip >= 0) {
      for (const range of v4) if (inV4Range(ip, range)) return true;
      return false;
    }
    // Without a `/`, the plain check above is all ip-address accepts as IPv4; IPv6 needs a `:`.
    if (value.includes('/') && Address4.isValid(value)) {
      const remote = new Address4(value);
      return v4.some(({ parsed }) => remote.correctForm() === parsed.correctForm() || remote.isInSubnet(parsed));
    }
    if (value.includes(':') && Address6.isValid(value)) {
      const remote = new Address6(value);
      return v6.some((parsed) => remote.correctForm() === parsed.correctForm() || remote.isInSubnet(parsed));
    }
    return false;
  };
}
