/**
 * The IPv4 arithmetic the dev NAPI, mirror's redaction, vmadm, net-agent and
 * machine_update_nics share (src/common/ipv4.ts): what each of them relies on.
 */
import { describe, expect, it } from 'vitest';
import {
  broadcastAddress,
  cidrContains,
  formatIpv4,
  isRfc1918,
  leadingOnes,
  netmask,
  parseCidr,
  parseIpv4,
  prefixLength,
} from '../../src/common/ipv4.js';

describe('IPv4 arithmetic', () => {
  it('reads and writes dotted quads, and nothing else', () => {
    expect(parseIpv4('10.0.0.1')).toBe(0x0a000001);
    expect(parseIpv4('255.255.255.255')).toBe(0xffffffff);
    expect(formatIpv4(0xc0a80a01)).toBe('192.168.10.1');
    for (const bad of ['256.0.0.1', '1.2.3', '1.2.3.4.5', '1.2.3.', ' 1.2.3.4', '167772161', '::1', '', 167772161, undefined]) {
      expect(parseIpv4(bad), String(bad)).toBeUndefined();
    }
  });

  it('takes a subnet only at its network address, and bounds it', () => {
    const c = parseCidr('10.88.88.0/24')!;
    expect(c).toEqual({ start: parseIpv4('10.88.88.0'), bits: 24 });
    expect(formatIpv4(broadcastAddress(c))).toBe('10.88.88.255');
    expect(cidrContains(c, parseIpv4('10.88.88.200')!)).toBe(true);
    expect(cidrContains(c, parseIpv4('10.88.89.0')!)).toBe(false);
    expect(parseCidr('10.88.88.1/24')).toBeUndefined();
    expect(parseCidr('10.88.88.0/33')).toBeUndefined();
    expect(parseCidr('10.88.88.0')).toBeUndefined();
    expect(parseCidr('0.0.0.0/0')).toEqual({ start: 0, bits: 0 });
    // A service's own reading of the address part (NAPI takes the uint32 as decimal text).
    expect(parseCidr('167772160/8', (t) => (t && /^\d+$/.test(t) ? Number(t) : undefined))).toEqual({ start: 0x0a000000, bits: 8 });
  });

  it('turns prefix lengths into netmasks and back, contiguous masks only', () => {
    expect(netmask(24)).toBe('255.255.255.0');
    expect(netmask(0)).toBe('0.0.0.0');
    expect(netmask(32)).toBe('255.255.255.255');
    expect(prefixLength('255.255.240.0')).toBe(20);
    expect(prefixLength('255.255.255.255')).toBe(32);
    expect(prefixLength('0.0.0.0')).toBe(0);
    expect(prefixLength('255.0.255.0')).toBeUndefined();
    expect(prefixLength('not a mask')).toBeUndefined();
    // vmadm counts the leading ones of whatever mask it is given.
    expect(leadingOnes(parseIpv4('255.0.255.0')!)).toBe(8);
  });

  it('knows the private ranges of RFC 1918', () => {
    for (const inside of ['10.0.0.0/8', '10.1.2.0/24', '172.16.0.0/12', '172.31.255.0/24', '192.168.0.0/16']) {
      expect(isRfc1918(parseCidr(inside)!), inside).toBe(true);
    }
    for (const outside of ['0.0.0.0/0', '8.0.0.0/7', '172.32.0.0/16', '172.0.0.0/8', '192.169.0.0/16', '100.64.0.0/10']) {
      expect(isRfc1918(parseCidr(outside)!), outside).toBe(false);
    }
  });
});
