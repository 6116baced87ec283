/**
 * Addresses as the dev NAPI reads them: IPv4 addresses and subnets in the forms sdc-napi
 * accepts (the arithmetic itself is src/common/ipv4.ts), and MAC arithmetic. The dev headnode
 * serves IPv4 networks only (as the admin and external networks of a fresh DC are), so an
 * address is a uint32 and a MAC a 48-bit integer; both are safe JavaScript numbers.
 */
import { randomInt } from 'node:crypto';
import { parseCidr, parseIpv4, type Cidr } from '../../common/ipv4.js';

/**
 * An IPv4 address as NAPI reads one: a dotted quad, or the uint32 itself as a number or
 * decimal text (sdc-napi takes both); undefined if neither.
 */
export function napiIpv4(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 && value <= 0xffffffff ? value : undefined;
  if (typeof value === 'string' && /^[0-9]+$/.test(value)) return napiIpv4(Number(value));
  return parseIpv4(value);
}

/** Is it an IPv6 address (so NAPI would answer "must be IPv4" rather than "invalid")? */
export function looksLikeIpv6(value: unknown): boolean {
  return typeof value === 'string' && value.includes(':') && /^[0-9a-fA-F:.]+$/.test(value);
}

/** A subnet as NAPI takes one: `address/bits` with 8 to 32 bits, the address its network's. */
export function napiSubnet(value: string): Cidr | undefined {
  const c = parseCidr(value, napiIpv4);
  return c && c.bits >= 8 ? c : undefined;
}

// --- MAC addresses

const MAC_MAX = 2 ** 48 - 1;

/**
 * A MAC as NAPI's `macaddr.parse` accepts it: six 1–2 digit hex groups separated by colons
 * or dashes, twelve hex digits with no separators, or the 48-bit number.
 */
export function parseMac(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 && value <= MAC_MAX ? value : undefined;
  if (typeof value !== 'string') return undefined;
  let groups: string[];
  if (/^[0-9a-fA-F]{12}$/.test(value)) {
    groups = value.match(/../g) as string[];
  } else {
    groups = value.split(/[:-]/);
    if (groups.length !== 6 || !groups.every((g) => /^[0-9a-fA-F]{1,2}$/.test(g))) return undefined;
    // One separator style per address.
    if (value.includes(':') && value.includes('-')) return undefined;
  }
  let n = 0;
  for (const g of groups) n = n * 256 + parseInt(g, 16);
  return n;
}

/** Colon form, lower case, two digits per octet (NAPI's serialized `mac`). */
export function formatMac(n: number): string {
  const parts: string[] = [];
  let rest = n;
  for (let i = 0; i < 6; i++) {
    parts.unshift((rest % 256).toString(16).padStart(2, '0'));
    rest = Math.floor(rest / 256);
  }
  return parts.join(':');
}

/** NAPI's default `macOUI` (Joyent's 90:b8:d0). */
export const DEFAULT_MAC_OUI = '90b8d0';

/** A random MAC under the OUI: the OUI's three octets, then three random ones. */
export function randomMacInOui(oui: string = DEFAULT_MAC_OUI): number {
  return parseInt(oui, 16) * 2 ** 24 + randomInt(0, 2 ** 24);
}
