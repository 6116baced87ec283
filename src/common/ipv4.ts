/**
 * IPv4 address and CIDR arithmetic, shared by the dev NAPI, mirror's redaction, vmadm's NIC
 * checks, net-agent and cn-agent's machine_update_nics. An address is a uint32 (a safe
 * JavaScript number); a subnet is its network address and prefix length. What a service
 * accepts beyond a dotted quad (NAPI's addresses given as numbers, say) is that service's own
 * reading, built on these.
 */

const IPV4_RE = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** A dotted quad as a uint32; undefined for anything else. */
export function parseIpv4(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
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

export function formatIpv4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

export interface Cidr {
  start: number;
  bits: number;
}

/**
 * `address/bits` (0 to 32, in one or two digits) whose address is its network's; undefined
 * otherwise. `readAddress` reads the address part (a dotted quad unless a service says more).
 */
export function parseCidr(value: string, readAddress: (text: string | undefined) => number | undefined = parseIpv4): Cidr | undefined {
  const [ip, bitsText, ...rest] = value.split('/');
  if (rest.length > 0 || bitsText === undefined || !/^\d{1,2}$/.test(bitsText)) return undefined;
  const start = readAddress(ip);
  const bits = Number(bitsText);
  if (start === undefined || bits > 32) return undefined;
  if (start !== networkAddress(start, bits)) return undefined;
  return { start, bits };
}

/** The mask of a prefix length, as a uint32 (24: 0xffffff00). */
export function maskOf(bits: number): number {
  return bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
}

export function networkAddress(ip: number, bits: number): number {
  return (ip & maskOf(bits)) >>> 0;
}

export function broadcastAddress(c: Cidr): number {
  return c.start + 2 ** (32 - c.bits) - 1;
}

export function cidrContains(c: Cidr, ip: number): boolean {
  return ip >= c.start && ip <= broadcastAddress(c);
}

/** The dotted netmask of a prefix length (24: 255.255.255.0). */
export function netmask(bits: number): string {
  return formatIpv4(maskOf(bits));
}

/** How many leading one bits a mask has (counting stops at the first zero). */
export function leadingOnes(mask: number): number {
  let bits = 0;
  for (let bit = 0x80000000; bit >= 1 && (mask & bit) !== 0; bit = bit / 2) bits++;
  return bits;
}

/** The prefix length of a dotted netmask (255.255.255.0: 24); undefined unless it is one. */
export function prefixLength(text: unknown): number | undefined {
  const mask = parseIpv4(text);
  if (mask === undefined) return undefined;
  const bits = leadingOnes(mask);
  return mask === maskOf(bits) ? bits : undefined;
}

/** Is the subnet (or an address, as a /32) inside the private ranges of RFC 1918? */
export function isRfc1918(c: Cidr): boolean {
  const inside = (net: number, bits: number): boolean => c.bits >= bits && networkAddress(c.start, bits) === net;
  return inside(0x0a000000, 8) || inside(0xac100000, 12) || inside(0xc0a80000, 16);
}
