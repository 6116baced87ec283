/**
 * What net-agent pushes to NAPI and pulls from it, field by field (vm-net-agent-spec §3.4-3.6,
 * RFD 28), and the local NIC objects it derives from sysinfo and from VMs.
 */
import { NIC_ANTI_SPOOF_FLAGS } from '../../common/changefeed/protocol.js';
import { prefixLength } from '../../common/ipv4.js';
import type { Sysinfo } from '../../common/sysinfo.js';
import type { Vm, VmNic } from '../../vmadm/types.js';

/** A NIC as NAPI serialises it (the fields net-agent reads). */
export interface NapiNic {
  mac: string;
  belongs_to_type?: string;
  belongs_to_uuid?: string;
  owner_uuid?: string;
  cn_uuid?: string;
  primary?: boolean;
  state?: string;
  ip?: string;
  netmask?: string;
  gateway?: string;
  network_uuid?: string;
  nic_tag?: string;
  vlan_id?: number;
  mtu?: number;
  model?: string;
  resolvers?: string[];
  routes?: Record<string, string>;
  nic_tags_provided?: string[];
  [key: string]: unknown;
}

/** What the CN says a NIC should look like in NAPI. */
export interface LocalNic {
  kind: 'server' | 'zone';
  belongs_to_type: 'server' | 'zone';
  belongs_to_uuid: string;
  owner_uuid: string;
  cn_uuid: string;
  /** Only ever `true` (net-agent never demotes a primary; NAPI does that itself). */
  primary?: true;
  /** Absent while a VM is in a transient state: NAPI's value is left alone then. */
  state?: 'running' | 'stopped';
  /** Sent only when the NIC is created in NAPI. */
  createOnly: Record<string, unknown>;
}

/** Fields net-agent owns in NAPI: pushed with PUT /nics/<mac> when they differ. */
export const LOCAL_FIELDS = ['belongs_to_type', 'belongs_to_uuid', 'cn_uuid', 'owner_uuid', 'primary', 'state'] as const;

/** Anti-spoof flags: booleans in vmadm, possibly strings in NAPI. */
export const FLAG_FIELDS = NIC_ANTI_SPOOF_FLAGS;

/** Fields NAPI owns on a VM NIC: pulled into the VM (update_nics) when they differ. */
export const REMOTE_VALUE_FIELDS = ['gateway', 'ip', 'model', 'mtu', 'netmask', 'network_uuid', 'nic_tag', 'vlan_id'] as const;

/** VM-level properties of a VM event that can change what net-agent must do. */
export const RELEVANT_VM_PATHS = new Set(['nics', 'owner_uuid', 'state', 'resolvers', 'routes', 'do_not_inventory', 'internal_metadata']);

export function flagValue(value: unknown): boolean {
  return value === true || value === 'true' || value === '1' || value === 1;
}

/** `00:10:fe:aa:bb:cc` from any of NAPI's accepted forms (colons, dashes, none; any case). */
export function normaliseMac(mac: string): string | undefined {
  const hex = mac.toLowerCase().replace(/[^0-9a-f]/g, '');
  if (hex.length !== 12) return undefined;
  return hex.match(/../g)!.join(':');
}

/** NAPI's path form: colons stripped, as sdc-clients sends it. */
export function macPath(mac: string): string {
  return mac.replace(/:/g, '');
}

/** `running` for a running VM, `stopped` for a stopped one, nothing while it is in between. */
export function nicStateOf(vmState: unknown): 'running' | 'stopped' | undefined {
  if (vmState === 'running') return 'running';
  if (vmState === 'stopped' || vmState === 'down' || vmState === 'failed') return 'stopped';
  return undefined;
}

/** The NICs of a VM as NAPI should hold them, keyed by normalised MAC. */
export function vmLocalNics(vm: Vm, cnUuid: string, adminUuid: string): Map<string, LocalNic> {
  const out = new Map<string, LocalNic>();
  const state = nicStateOf(vm.state);
  for (const nic of vm.nics ?? []) {
    if (!nic || typeof nic.mac !== 'string') continue;
    const mac = normaliseMac(nic.mac);
    if (!mac) continue;
    const createOnly: Record<string, unknown> = {};
    for (const f of FLAG_FIELDS) if (nic[f] !== undefined) createOnly[f] = flagValue(nic[f]);
    for (const f of REMOTE_VALUE_FIELDS) if (nic[f] !== undefined && nic[f] !== null) createOnly[f] = nic[f];
    const local: LocalNic = {
      kind: 'zone',
      belongs_to_type: 'zone',
      belongs_to_uuid: vm.uuid,
      owner_uuid: typeof vm.owner_uuid === 'string' ? vm.owner_uuid : adminUuid,
      cn_uuid: cnUuid,
      createOnly,
    };
    if (nic.primary === true) local.primary = true;
    // NAPI's create requires a state it knows; a NIC first seen mid-transition starts stopped.
    if (state) local.state = state;
    else createOnly.state = 'stopped';
    out.set(mac, local);
  }
  return out;
}

interface SysinfoNicEntry {
  'MAC Address'?: unknown;
  ip4addr?: unknown;
  'Link Status'?: unknown;
  'NIC Names'?: unknown;
  VLAN?: unknown;
}

/**
 * The CN's own NICs from sysinfo: physical interfaces (those named in "Link Aggregations" are
 * aggregation members, not NICs of their own) and VNICs, keyed by normalised MAC.
 */
export function serverLocalNics(sysinfo: Sysinfo, cnUuid: string, adminUuid: string): Map<string, LocalNic> {
  const out = new Map<string, LocalNic>();
  const adminTag = typeof sysinfo['Admin NIC Tag'] === 'string' && sysinfo['Admin NIC Tag'] ? sysinfo['Admin NIC Tag'] : 'admin';
  const aggrs = isRecord(sysinfo['Link Aggregations']) ? sysinfo['Link Aggregations'] : {};
  const add = (entry: SysinfoNicEntry, vnic: boolean): void => {
    const mac = typeof entry['MAC Address'] === 'string' ? normaliseMac(entry['MAC Address']) : undefined;
    if (!mac) return;
    const names = Array.isArray(entry['NIC Names']) ? entry['NIC Names'].filter((n): n is string => typeof n === 'string') : [];
    const createOnly: Record<string, unknown> = {};
    if (typeof entry.ip4addr === 'string' && entry.ip4addr) createOnly.ip = entry.ip4addr;
    if (vnic) {
      createOnly.vlan_id = Number(entry.VLAN) || 0;
    } else {
      createOnly.nic_tags_provided = names;
      if (names.includes(adminTag)) {
        createOnly.nic_tag = adminTag;
        createOnly.vlan_id = 0;
      }
    }
    out.set(mac, {
      kind: 'server',
      belongs_to_type: 'server',
      belongs_to_uuid: cnUuid,
      owner_uuid: adminUuid,
      cn_uuid: cnUuid,
      state: entry['Link Status'] === 'up' ? 'running' : 'stopped',
      createOnly,
    });
  };
  const nics = isRecord(sysinfo['Network Interfaces']) ? sysinfo['Network Interfaces'] : {};
  for (const [name, entry] of Object.entries(nics)) {
    if (name in aggrs || !isRecord(entry)) continue;
    add(entry as SysinfoNicEntry, false);
  }
  const vnics = isRecord(sysinfo['Virtual Network Interfaces']) ? sysinfo['Virtual Network Interfaces'] : {};
  for (const entry of Object.values(vnics)) if (isRecord(entry)) add(entry as SysinfoNicEntry, true);
  return out;
}

/** The LOCAL fields where NAPI's copy differs from the CN's (the body of a PUT /nics/<mac>). */
export function localDiffs(local: LocalNic, remote: NapiNic): Record<string, unknown> {
  const diff: Record<string, unknown> = {};
  for (const f of LOCAL_FIELDS) {
    const want = local[f];
    if (want !== undefined && want !== remote[f]) diff[f] = want;
  }
  return diff;
}

/** The POST /nics body for a NIC NAPI does not have. */
export function createBody(mac: string, local: LocalNic): Record<string, unknown> {
  const body: Record<string, unknown> = { ...local.createOnly, mac, check_owner: false };
  for (const f of LOCAL_FIELDS) if (local[f] !== undefined) body[f] = local[f];
  return body;
}

export function sameLocal(a: LocalNic | undefined, b: LocalNic | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The NAPI-owned properties where a VM NIC differs from NAPI: an `update_nics` entry or undefined. */
export function nicPullDiff(local: VmNic, remote: NapiNic): Record<string, unknown> | undefined {
  const diff: Record<string, unknown> = {};
  for (const f of FLAG_FIELDS) {
    const want = flagValue(remote[f]);
    if (want !== flagValue(local[f])) diff[f] = want;
  }
  for (const f of REMOTE_VALUE_FIELDS) {
    const want = remote[f];
    if (want !== undefined && want !== null && want !== local[f]) diff[f] = want;
  }
  if (Object.keys(diff).length === 0) return undefined;
  // vmadm keeps the plural forms beside the singular ones; keep them consistent.
  if (diff.gateway !== undefined) diff.gateways = [diff.gateway];
  if (diff.ip !== undefined || diff.netmask !== undefined) {
    const ip = (diff.ip ?? local.ip) as string | undefined;
    const prefix = prefixLength((diff.netmask ?? remote.netmask ?? local.netmask) as string | undefined);
    if (typeof ip === 'string' && prefix !== undefined) diff.ips = [`${ip}/${prefix}`];
  }
  return { mac: local.mac, ...diff };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
