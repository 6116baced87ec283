/**
 * The dev NAPI's records (as stored) and their wire forms (as NAPI serializes them:
 * sdc-napi lib/models/nic-tag.js, network.js, nic/obj.js, ip/common.js).
 */
import { crc32 } from 'node:zlib';
import { formatIpv4, netmask, type Cidr } from '../../common/ipv4.js';
import { formatMac } from './addr.js';

export const BELONGS_TO_TYPES = ['other', 'server', 'zone'] as const;
export const NIC_STATES = ['provisioning', 'stopped', 'running'] as const;
export type BelongsToType = (typeof BELONGS_TO_TYPES)[number];
export type NicState = (typeof NIC_STATES)[number];

/** NIC flags NAPI serializes only when true. */
export const BOOL_PARAMS = [
  'allow_dhcp_spoofing',
  'allow_ip_spoofing',
  'allow_mac_spoofing',
  'allow_restricted_traffic',
  'allow_unfiltered_promisc',
  'underlay',
] as const;
export type BoolParam = (typeof BOOL_PARAMS)[number];

export interface NicTagRecord {
  name: string;
  uuid: string;
  mtu: number;
  etag: string;
}

export interface NetworkRecord {
  uuid: string;
  name: string;
  nic_tag: string;
  vlan_id: number;
  /** Network address and prefix length of `subnet`. */
  subnet_start: number;
  subnet_bits: number;
  provision_start_ip: number;
  provision_end_ip: number;
  gateway?: number;
  resolvers: number[];
  routes?: Record<string, string>;
  mtu: number;
  owner_uuids?: string[];
  description?: string;
  /** Fabric networks (made through POST /networks; the fabric routes need overlays). */
  fabric?: true;
  vnet_id?: number;
  internet_nat?: boolean;
  gateway_provisioned?: boolean;
  etag: string;
}

export interface NicRecord {
  mac: number;
  owner_uuid: string;
  belongs_to_uuid: string;
  belongs_to_type: BelongsToType;
  primary: boolean;
  state: NicState;
  created_timestamp: number;
  modified_timestamp: number;
  ip?: number;
  network_uuid?: string;
  cn_uuid?: string;
  model?: string;
  nic_tag?: string;
  nic_tags_provided?: string[];
  allow_dhcp_spoofing?: boolean;
  allow_ip_spoofing?: boolean;
  allow_mac_spoofing?: boolean;
  allow_restricted_traffic?: boolean;
  allow_unfiltered_promisc?: boolean;
  underlay?: boolean;
  etag: string;
}

/** One address's record on a network (napi_ips_<uuid>). */
export interface IpRecord {
  ip: number;
  reserved: boolean;
  belongs_to_type?: string;
  belongs_to_uuid?: string;
  owner_uuid?: string;
  /** When it was last unassigned: freed addresses are reused oldest first. */
  freed_at?: number;
  /** Written by UpdateIP (kept in the snapshot; other records are rebuilt from networks and NICs). */
  explicit?: boolean;
}

/** A network pool (napi_network_pools): networks of one family that provisioning picks from. */
export interface NetworkPoolRecord {
  uuid: string;
  name: string;
  description?: string;
  networks: string[];
  owner_uuids?: string[];
  family: 'ipv4' | 'ipv6';
  etag: string;
}

/** A link aggregation of a server's NICs (napi_aggregations). */
export interface AggregationRecord {
  id: string;
  belongs_to_uuid: string;
  name: string;
  macs: number[];
  lacp_mode: string;
  nic_tags_provided?: string[];
  etag: string;
}

/** A moray-like etag: CRC32 of the stored value, 8 upper-case hex digits. */
export function etagOf(value: object): string {
  const { etag: _ignored, ...rest } = value as { etag?: unknown };
  return crc32(JSON.stringify(rest)).toString(16).toUpperCase().padStart(8, '0');
}

export function cidrOf(net: NetworkRecord): Cidr {
  return { start: net.subnet_start, bits: net.subnet_bits };
}

export function serializeNicTag(t: NicTagRecord): Record<string, unknown> {
  return { mtu: t.mtu, name: t.name, uuid: t.uuid };
}

export function serializeNetwork(n: NetworkRecord, fields?: string[]): Record<string, unknown> {
  const ser: Record<string, unknown> = {
    family: 'ipv4',
    mtu: n.mtu,
    nic_tag: n.nic_tag,
    name: n.name,
    provision_end_ip: formatIpv4(n.provision_end_ip),
    provision_start_ip: formatIpv4(n.provision_start_ip),
    subnet: `${formatIpv4(n.subnet_start)}/${n.subnet_bits}`,
    uuid: n.uuid,
    vlan_id: n.vlan_id,
  };
  if (n.fabric) {
    ser.fabric = true;
    if (n.vnet_id !== undefined) ser.vnet_id = n.vnet_id;
    if (n.internet_nat !== undefined) ser.internet_nat = n.internet_nat;
    if (n.gateway !== undefined) ser.gateway_provisioned = n.gateway_provisioned ?? false;
  }
  ser.resolvers = n.resolvers.map(formatIpv4);
  if (n.gateway !== undefined) ser.gateway = formatIpv4(n.gateway);
  if (n.routes) ser.routes = { ...n.routes };
  if (n.description) ser.description = n.description;
  if (n.owner_uuids) ser.owner_uuids = [...n.owner_uuids];
  ser.netmask = netmask(n.subnet_bits);
  if (!fields) return ser;
  const out: Record<string, unknown> = {};
  for (const f of fields) if (f in ser) out[f] = ser[f];
  return out;
}

/** The network fields a NIC on it carries (NET_PARAMS). */
const NET_PARAMS = ['fabric', 'gateway', 'gateway_provisioned', 'internet_nat', 'mtu', 'netmask', 'nic_tag', 'resolvers', 'vlan_id'];

export function serializeNic(nic: NicRecord, network: NetworkRecord | undefined): Record<string, unknown> {
  const mac = formatMac(nic.mac);
  const ser: Record<string, unknown> = {
    belongs_to_type: nic.belongs_to_type,
    belongs_to_uuid: nic.belongs_to_uuid,
    mac,
    owner_uuid: nic.owner_uuid,
    primary: nic.primary,
    state: nic.state,
    created_timestamp: new Date(nic.created_timestamp).toISOString(),
    modified_timestamp: new Date(nic.modified_timestamp).toISOString(),
  };
  if (nic.ip !== undefined && network) {
    ser.ip = formatIpv4(nic.ip);
    const netSer = serializeNetwork(network);
    for (const p of NET_PARAMS) if (p in netSer) ser[p] = netSer[p];
    if (network.routes) {
      const routes: Record<string, string> = {};
      for (const [dst, gw] of Object.entries(network.routes)) routes[dst] = gw === 'linklocal' ? `macs[${mac}]` : gw;
      ser.routes = routes;
    }
    ser.network_uuid = network.uuid;
  }
  if (nic.cn_uuid !== undefined) ser.cn_uuid = nic.cn_uuid;
  if (nic.model !== undefined) ser.model = nic.model;
  if (nic.nic_tag !== undefined) ser.nic_tag = nic.nic_tag;
  if (nic.nic_tags_provided && nic.nic_tags_provided.length > 0) ser.nic_tags_provided = [...nic.nic_tags_provided];
  for (const p of BOOL_PARAMS) if (nic[p]) ser[p] = true;
  return ser;
}

export function serializeIp(rec: IpRecord, networkUuid: string): Record<string, unknown> {
  const ser: Record<string, unknown> = {
    ip: formatIpv4(rec.ip),
    network_uuid: networkUuid,
    reserved: rec.reserved,
    free: !rec.reserved,
  };
  for (const p of ['belongs_to_type', 'belongs_to_uuid', 'owner_uuid'] as const) {
    if (rec[p] !== undefined) {
      ser[p] = rec[p];
      ser.free = false;
    }
  }
  return ser;
}
