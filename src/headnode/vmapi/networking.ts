/**
 * VMAPI's request-time network work for CreateVm and add_nics
 * (sdc-vmapi lib/endpoints/vms.js preFilterNetworks, getNicTagReqs, getNicTags,
 * checkServerNicTags, provisionNics, cleanupNics): resolve each requested network by UUID
 * or name in NAPI, check the server offers its NIC tag, and provision the NICs in NAPI up
 * front (`POST /networks/:uuid/nics`, `belongs_to_type: zone`) so an exhausted network
 * fails the request, not the job.
 */
import { MockcloudError } from '../../common/errors.js';
import { HttpStatusError } from '../../common/http-client.js';
import { isUuid } from '../../common/uuid.js';
import type { Obj, Peers } from './peers.js';
import { relay } from './peers.js';
import { fieldErr, validationFailed } from './validation.js';

export interface FilteredNetworks {
  netInfo: Obj[];
  networks: Obj[];
  fabrics: string[];
  pools: string[];
  nics: Obj[];
}

export function emptyFilteredNetworks(): FilteredNetworks {
  return { netInfo: [], networks: [], fabrics: [], pools: [], nics: [] };
}

/** preFilterNetworks: each network as `{ipv4_uuid, ...}` with its NAPI record in netInfo. */
export async function resolveNetworks(peers: Peers, networks: Obj[], reqId: string): Promise<FilteredNetworks> {
  const out = emptyFilteredNetworks();
  for (const n of networks) {
    const id = String(n.ipv4_uuid ?? n.name);
    let net: Obj | undefined;
    try {
      if (isUuid(id)) net = await peers.getNetwork(id, reqId);
      else net = (await peers.listNetworks({ name: id }, reqId))[0];
    } catch (err) {
      if (!(err instanceof HttpStatusError && err.statusCode === 404)) {
        throw new MockcloudError('InternalError', `Failed to find network "${id}"`, { cause: err });
      }
    }
    if (!net) {
      throw new MockcloudError('InvalidParameters', `No such Network or Pool with id/name: "${id}"`, {
        restCode: 'UnprocessableEntity',
      });
    }
    if (net.fabric) out.fabrics.push(String(net.uuid));
    out.netInfo.push(net);
    const resolved: Obj = { ...n, ipv4_uuid: net.uuid };
    delete resolved.name;
    out.networks.push(resolved);
  }
  return out;
}

/** getNicTagReqs: the NIC tag each network needs (alternatives as a list). */
export function nicTagRequirements(f: FilteredNetworks): string[][] {
  return f.netInfo.map((n) => (Array.isArray(n.nic_tags_present) ? (n.nic_tags_present as string[]) : [String(n.nic_tag)]));
}

/** getNicTags: the tags a server offers (physical NIC Names and overlay tags). */
export function serverNicTags(server: Obj): string[] {
  const si = (server.sysinfo ?? {}) as Obj;
  const tags = new Set<string>();
  for (const nic of Object.values((si['Network Interfaces'] ?? {}) as Record<string, Obj>)) {
    for (const t of (nic?.['NIC Names'] as string[] | undefined) ?? []) tags.add(t);
  }
  for (const nic of Object.values((si['Virtual Network Interfaces'] ?? {}) as Record<string, Obj>)) {
    for (const t of (nic?.['Overlay Nic Tags'] as string[] | undefined) ?? []) tags.add(t);
  }
  return [...tags];
}

/** checkServerNicTags for networks. */
export function checkServerNicTags(serverTags: string[], reqs: string[][]): void {
  for (const alts of reqs) {
    if (!alts.some((t) => serverTags.includes(t))) {
      throw validationFailed(`Server does not have NIC tag: ${alts.join(' or ')}`, [fieldErr.invalid('server')]);
    }
  }
}

/**
 * provisionNetNics: one NIC per network in NAPI, reusing NICs already created for this VM
 * on that network. Provisioned NICs are appended to `f.nics` as they are made, so a
 * failure part-way can be cleaned up by the caller.
 */
export async function provisionNics(
  peers: Peers,
  f: FilteredNetworks,
  opts: { ownerUuid: string; vmUuid: string; serverUuid: string; serverTags?: string[] },
  reqId: string,
): Promise<void> {
  let current: Obj[] = [];
  try {
    current = await peers.listNics(
      { owner_uuid: opts.ownerUuid, belongs_to_uuid: opts.vmUuid, belongs_to_type: 'zone' },
      reqId,
    );
  } catch (err) {
    throw relay(err);
  }
  const checked = new Set<string>();
  for (const network of f.networks) {
    const netUuid = String(network.ipv4_uuid);
    const existing = current.filter((n) => n.network_uuid === netUuid);
    if (existing.length > 0) {
      if (!checked.has(netUuid)) {
        f.nics.push(...existing);
        checked.add(netUuid);
      }
      continue;
    }
    const params: Obj = {
      owner_uuid: opts.ownerUuid,
      belongs_to_uuid: opts.vmUuid,
      belongs_to_type: 'zone',
      state: 'provisioning',
      cn_uuid: opts.serverUuid,
    };
    if (opts.serverTags) params.nic_tags_available = opts.serverTags;
    if (Array.isArray(network.ipv4_ips)) params.ip = network.ipv4_ips[0];
    if (network.primary !== undefined) params.primary = network.primary;
    for (const k of ['allow_dhcp_spoofing', 'allow_ip_spoofing', 'allow_mac_spoofing', 'allow_restricted_traffic']) {
      if (k in network) params[k] = network[k];
    }
    try {
      f.nics.push(await peers.provisionNic(netUuid, params, reqId));
    } catch (err) {
      throw relay(err);
    }
  }
}

/** cleanupNics: delete what was provisioned; errors are ignored (the original error wins). */
export async function cleanupNics(peers: Peers, nics: Obj[], reqId: string): Promise<void> {
  await Promise.all(nics.map((n) => peers.deleteNic(String(n.mac), reqId).catch(() => undefined)));
}
