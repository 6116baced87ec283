/**
 * IPv4 and MAC address arithmetic for the dev NAPI. The dev headnode serves IPv4 networks
 * only (as the admin and external networks of a fresh DC are), so an address is a uint32
 * and a MAC a 48-bit integer; both are safe JavaScript numbers.
 */
import { randomInt } from 'node:crypto';

const IPV4_RE = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** A dotted quad (or, as NAPI accepts, a decimal number) as a uint32; undefined if invalid. */
export function parseIpv4(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 && value <= 0xffffffff ? value : undefined;
  if (typeof value !== 'string') return undefined;
  if (/^[0-9]+$/.test(value)) return parseIpv4(Number(value));
  const m = IPV4_RE.exec(value);
  if (!m) return undefined;
  let n = 0;
  for (let i = 1; i <= 4; i++) {
    const octet = Number(m[i]);
    if (octet > 255) return undefined;
    n = n * 256 + octet;
  }
  return n;
}

/** Is it an IPv6 address (so NAPI would answer "must be IPv4" rather than "invalid")? */
export function looksLikeIpv6(value: unknown): boolean {
  return typeof value === 'string' && value.includes(':') && /^[0-9a-fA-F:.]+$/.test(value);
}

export function formatIpv4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

export interface Cidr {
  start: number;
  bits: number;
}

export function parseCidr(value: string): Cidr | undefined {
  const [ip, bitsText, ...rest] = value.split('/');
  if (rest.length > 0 || bitsText === undefined || !/^\d{1,2}$/.test(bitsText)) return undefined;
  const start = parseIpv4(ip);
  const bits = Number(bitsText);
  if (start === undefined || bits < 8 || bits > 32) return undefined;
  if (start !== networkAddress(start, bits)) return undefined;
  return { start, bits };
}

export function networkAddress(ip: number, bits: number): number {
  if (bits === 0) return 0;
  const mask = (0xffffffff << (32 - bits)) >>> 0;
  return (ip & mask) >>> 0;
}

export function broadcastAddress(c: Cidr): number {
  return c.start + 2 ** (32 - c.bits) - 1;
}

export function cidrContains(c: Cidr, ip: number): boolean {
  return ip >= c.start && ip <= broadcastAddress(c);
}

export function netmask(bits: number): string {
  return formatIpv4(bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0);
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
