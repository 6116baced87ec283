/**
 * DHCP on the wire, once for both ends: the mock CNs' relay agent (src/boot) and the dev
 * headnode's booter (src/headnode/booter). The packet layout and the options are encoded and
 * decoded by the `dhcp` npm package (infusion/node-dhcp, the library sdc-booter's own tests use
 * as their DHCP client); this module only registers the options it lacks (77 user class, 82
 * relay agent information, 93 client architecture) through its `addOption` extension point,
 * and keeps its quirks out of the callers' way:
 *
 * - every option code gets a type, so an unknown one in a received packet is decoded as bytes
 *   instead of being printed to stderr;
 * - MACs are lower-case with colons (the library gives `AA-BB-...`);
 * - a packet is sent at BOOTP's 300 bytes at least, as PXE ROMs and sdc-booter's replies are;
 * - anything the library cannot read is a `DhcpFormatError`, never a crash.
 *
 * Option 82's payload (RFC 3046) is a list of sub-options; the library carries it as bytes,
 * and `relayAgentInfo`/`parseRelayAgentInfo` turn a circuit id into those and back.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

interface DhcpOptionSpec {
  name: string;
  type: string;
  attr?: string;
  config?: string;
}

interface SeqBufferLike {
  _data: Buffer;
  _w: number;
}

interface DhcpLibrary {
  addOption(code: number, spec: DhcpOptionSpec): void;
}

interface DhcpProtocol {
  parse(buf: Buffer): RawPacket;
  format(data: RawPacket): SeqBufferLike;
}

interface DhcpOptionsTable {
  opts: Record<string, DhcpOptionSpec | undefined>;
}

interface RawPacket {
  op: number;
  htype: number;
  hlen: number;
  hops: number;
  xid: number;
  secs: number;
  flags: number;
  ciaddr: string;
  yiaddr: string;
  siaddr: string;
  giaddr: string;
  chaddr: string;
  sname: string;
  file: string;
  magicCookie?: number;
  options: Record<number, unknown>;
}

const lib = require('dhcp') as DhcpLibrary;
const protocol = require('dhcp/lib/protocol.js') as DhcpProtocol;
const optionsTable = require('dhcp/lib/options.js') as DhcpOptionsTable;

/** RFC 2132 option 53. */
export const DHCPDISCOVER = 1;
export const DHCPOFFER = 2;
export const DHCPREQUEST = 3;
export const DHCPDECLINE = 4;
export const DHCPACK = 5;
export const DHCPNAK = 6;
export const DHCPRELEASE = 7;
export const DHCPINFORM = 8;

export const MESSAGE_TYPE_NAMES: Record<number, string> = {
  1: 'DHCPDISCOVER',
  2: 'DHCPOFFER',
  3: 'DHCPREQUEST',
  4: 'DHCPDECLINE',
  5: 'DHCPACK',
  6: 'DHCPNAK',
  7: 'DHCPRELEASE',
  8: 'DHCPINFORM',
};

/** BOOTP op codes. */
export const BOOTREQUEST = 1;
export const BOOTREPLY = 2;

/** The smallest packet BOOTP relays and PXE servers expect (RFC 951; RFC 2131 §2). */
const MIN_PACKET_BYTES = 300;
const MAGIC_COOKIE = 0x63825363;

/** The options this project reads or writes, by RFC 2132 / 3046 / 4578 code. */
export const OPT = {
  subnetMask: 1,
  router: 3,
  dnsServers: 6,
  hostname: 12,
  requestedIp: 50,
  leaseTime: 51,
  messageType: 53,
  serverId: 54,
  parameterList: 55,
  maxMessageSize: 57,
  classId: 60,
  clientId: 61,
  bootFile: 67,
  userClass: 77,
  relayAgentInfo: 82,
  clientArch: 93,
} as const;

let registered = false;

/** Types for what the library lacks; every other code as plain bytes. Once per process. */
function registerOptions(): void {
  if (registered) return;
  registered = true;
  // iPXE sends its user class as the bare string "iPXE" (sdc-booter compares it so).
  lib.addOption(OPT.userClass, { name: 'User Class', type: 'ASCII', attr: 'userClass' });
  lib.addOption(OPT.relayAgentInfo, { name: 'Relay Agent Information', type: 'UInt8s', attr: 'relayAgentInfo' });
  lib.addOption(OPT.clientArch, { name: 'Client System Architecture', type: 'UInt16s', attr: 'clientArch' });
  for (let code = 1; code < 255; code++) {
    if (!optionsTable.opts[code]) lib.addOption(code, { name: `Option ${code}`, type: 'UInt8s', attr: `option${code}` });
  }
}

registerOptions();

/** A DHCP packet as both ends use it (addresses dotted quads, MAC lower-case with colons). */
export interface DhcpPacket {
  op: number;
  xid: number;
  secs?: number;
  flags?: number;
  hops?: number;
  ciaddr?: string;
  yiaddr?: string;
  siaddr?: string;
  giaddr?: string;
  chaddr: string;
  sname?: string;
  file?: string;
  /** By option code; values as the library types them (IP strings, numbers, byte arrays, strings). */
  options: Record<number, unknown>;
}

export class DhcpFormatError extends Error {
  override readonly name = 'DhcpFormatError';
}

const ZERO_IP = '0.0.0.0';

export function encodeDhcp(p: DhcpPacket): Buffer {
  const raw: RawPacket = {
    op: p.op,
    htype: 1,
    hlen: 6,
    hops: p.hops ?? 0,
    xid: p.xid >>> 0,
    secs: p.secs ?? 0,
    flags: p.flags ?? 0,
    ciaddr: p.ciaddr ?? ZERO_IP,
    yiaddr: p.yiaddr ?? ZERO_IP,
    siaddr: p.siaddr ?? ZERO_IP,
    giaddr: p.giaddr ?? ZERO_IP,
    chaddr: p.chaddr,
    sname: p.sname ?? '',
    file: p.file ?? '',
    options: p.options,
  };
  let sb: SeqBufferLike;
  try {
    sb = protocol.format(raw);
  } catch (err) {
    throw new DhcpFormatError(`cannot encode a DHCP packet: ${(err as Error).message}`);
  }
  const out = Buffer.alloc(Math.max(MIN_PACKET_BYTES, sb._w));
  sb._data.copy(out, 0, 0, sb._w);
  return out;
}

/** The packet in `buf`; a DhcpFormatError for anything that is not one. */
export function decodeDhcp(buf: Buffer): DhcpPacket {
  let raw: RawPacket;
  try {
    raw = protocol.parse(buf);
  } catch (err) {
    throw new DhcpFormatError(`not a DHCP packet: ${(err as Error).message}`);
  }
  if (raw.magicCookie !== MAGIC_COOKIE) throw new DhcpFormatError('not a DHCP packet: no magic cookie');
  if (raw.op !== BOOTREQUEST && raw.op !== BOOTREPLY) throw new DhcpFormatError(`not a DHCP packet: op ${raw.op}`);
  return {
    op: raw.op,
    xid: raw.xid >>> 0,
    secs: raw.secs,
    flags: raw.flags,
    hops: raw.hops,
    ciaddr: raw.ciaddr,
    yiaddr: raw.yiaddr,
    siaddr: raw.siaddr,
    giaddr: raw.giaddr,
    chaddr: raw.chaddr.toLowerCase().replace(/-/g, ':'),
    sname: raw.sname,
    file: raw.file,
    options: raw.options,
  };
}

/** Option 53 of a packet, or undefined. */
export function messageType(p: DhcpPacket): number | undefined {
  const t = p.options[OPT.messageType];
  return typeof t === 'number' ? t : undefined;
}

/** RFC 3046 sub-options: 1 the agent circuit id, 2 the agent remote id. */
const CIRCUIT_ID = 1;
const REMOTE_ID = 2;

/** Option 82's payload (RFC 3046: each sub-option's code, its length, its bytes). */
export function relayAgentInfo(ids: { circuitId?: string; remoteId?: string }): number[] {
  const out: number[] = [];
  for (const [code, text] of [
    [CIRCUIT_ID, ids.circuitId],
    [REMOTE_ID, ids.remoteId],
  ] as const) {
    if (text === undefined) continue;
    const bytes = [...Buffer.from(text, 'ascii')];
    if (bytes.length === 0 || bytes.length > 253) throw new DhcpFormatError('a relay agent sub-option is 1 to 253 bytes');
    out.push(code, bytes.length, ...bytes);
  }
  if (out.length === 0 || out.length > 255) throw new DhcpFormatError('option 82 needs one sub-option and at most 255 bytes');
  return out;
}

/** The circuit id in option 82's payload, if it has one (other sub-options are skipped). */
export function parseRelayAgentInfo(payload: unknown): { circuitId?: string } {
  if (!Array.isArray(payload)) return {};
  let i = 0;
  while (i + 1 < payload.length) {
    const id = payload[i] as number;
    const len = payload[i + 1] as number;
    const value = payload.slice(i + 2, i + 2 + len) as number[];
    if (value.length < len) break;
    if (id === CIRCUIT_ID) return { circuitId: Buffer.from(value).toString('ascii') };
    i += 2 + len;
  }
  return {};
}
