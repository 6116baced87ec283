/**
 * VMAPI's request-time network work for CreateVm and add_nics (sdc-vmapi lib/endpoints/vms.js
 * `preFilterNetworks`, `getNicTagReqs`, `getNicTags`, `checkServerNicTags`, `provisionNics`,
 * `loadNicsByMac`, `cleanupNics`): each requested network looked up in NAPI as a network pool
 * first, then as a network (by UUID, or by name), the NIC tags the server must offer, and the
 * NICs provisioned in NAPI up front (`belongs_to_type: zone`, `state: provisioning`) so an
 * exhausted network or a taken IP fails the request, not the job.
 */
import { HttpStatusError } from '../../common/http-client.js';
import { elem, plainError, validationFailed, validUUID, VmapiError, vmapiErrors } from './errors.js';
import { validNetworks } from './field-validators.js';
import type { Obj, Peers } from './peers.js';
import { relay } from './peers.js';

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

const isNotFound = (err: unknown): boolean => err instanceof HttpStatusError && err.statusCode === 404;

/** A VError VMAPI sends as it is (`{message}` with a 500): `<what>: <cause>`. */
function wrapped(what: string, err: unknown): VmapiError {
  const cause = err instanceof HttpStatusError ? ((err.body as { message?: string })?.message ?? err.message) : String(err);
  return plainError(`${what}: ${cause}`, err);
}

/** `preFilterNetworks`: resolve `networks` (if any) into filteredNetworks. */
export async function preFilterNetworks(
  peers: Peers,
  networksParam: unknown,
  ownerUuid: unknown,
  reqId: string,
): Promise<{ filtered: FilteredNetworks; networks?: Obj[] }> {
  const out = emptyFilteredNetworks();
  if (!networksParam) return { filtered: out };
  let networks: Obj[];
  try {
    networks = validNetworks(networksParam, false);
  } catch (e) {
    throw validationFailed('Invalid network parameters', [elem.invalid('networks', (e as Error).message)]);
  }
  if (!validUUID(ownerUuid)) {
    // VMAPI asserts the owner here; the assertion ends its process.
    throw new VmapiError('InternalError', 'owner_uuid (uuid) is required');
  }
  const q = { provisionable_by: ownerUuid };
  for (const network of networks) {
    const netId = String(network.ipv4_uuid ?? network.name);
    const uuid = await lookupNetwork(peers, netId, q, out, reqId);
    network.ipv4_uuid = uuid;
    delete network.name;
    out.networks.push(network);
  }
  return { filtered: out, networks };
}

async function lookupNetwork(
  peers: Peers,
  netId: string,
  q: Record<string, string>,
  out: FilteredNetworks,
  reqId: string,
): Promise<string> {
  let pools: Obj | Obj[] | undefined;
  try {
    pools = validUUID(netId) ? await peers.getNetworkPool(netId, q, reqId) : await peers.listNetworkPools({ name: netId }, reqId);
  } catch (err) {
    if (!isNotFound(err)) throw wrapped(`Failed to find network pool "${netId}"`, err);
  }
  if (Array.isArray(pools)) {
    const named = pools.filter((p) => p.name === netId);
    if (named.length > 1) throw vmapiErrors.unprocessable(`Multiple Network Pools with name: ${netId}`);
    if (named.length === 1) pools = named[0];
    else pools = undefined;
  }
  if (pools) {
    out.pools.push(String(pools.uuid));
    out.netInfo.push(pools);
    return String(pools.uuid);
  }
  let net: Obj | undefined;
  try {
    net = validUUID(netId) ? await peers.getNetworkFor(netId, q, reqId) : (await peers.listNetworks({ name: netId }, reqId))[0];
  } catch (err) {
    if (!isNotFound(err)) throw wrapped(`Failed to find network "${netId}"`, err);
  }
  if (!net) throw vmapiErrors.unprocessable(`No such Network or Pool with id/name: "${netId}"`);
  if (net.fabric) out.fabrics.push(String(net.uuid));
  out.netInfo.push(net);
  return String(net.uuid);
}

/** `getNicTagReqs`: the NIC tags each network or pool needs (alternatives as a list). */
export function nicTagRequirements(f: FilteredNetworks): string[][] {
  return f.netInfo.map((n) => (n.nic_tags_present ? (n.nic_tags_present as string[]) : [String(n.nic_tag)]));
}

/** `getNicTags`: the tags a server offers (physical NIC Names and overlay tags). */
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

/** `checkServerNicTags` for networks: the server must offer one tag of each requirement. */
export function checkServerNicTags(serverTags: string[], reqs: string[][]): void {
  for (const alts of reqs) {
    if (!alts.some((t) => serverTags.includes(t))) {
      throw validationFailed(`Server must have one of the following NIC tags: ${alts.join(', ')}`, [elem.invalid('server')]);
    }
  }
}

/** `checkServerNicTags` for existing NICs (`macs`): each NIC's tag (less any vnet id) on the server. */
export async function checkServerNicTagsForMacs(peers: Peers, macs: string[], serverTags: string[], reqId: string): Promise<void> {
  for (const mac of macs) {
    let nic: Obj;
    try {
      nic = await peers.getNic(mac, reqId);
    } catch (err) {
      throw relay(err);
    }
    let tag = nic.nic_tag as string | undefined;
    if (!tag) throw validationFailed(`NIC ${mac}does not have a nitag`, [elem.invalid('nic')]);
    tag = /^(.+)\/\d+$/.exec(tag)?.[1] ?? tag;
    if (!serverTags.includes(tag)) throw validationFailed(`Server does not have NIC tag: ${tag}`, [elem.invalid('server')]);
  }
}

/**
 * `provisionNetNics`: one NIC per network in NAPI, reusing NICs already made for this VM on
 * that network. NICs are appended to `f.nics` as they are made, so a failure part-way can be
 * cleaned up by the caller.
 */
export async function provisionNetNics(
  peers: Peers,
  f: FilteredNetworks,
  opts: { ownerUuid: string; vmUuid: string; serverUuid: string; serverTags?: string[] },
  reqId: string,
): Promise<void> {
  let current: Obj[];
  try {
    current = await peers.listNics({ owner_uuid: opts.ownerUuid, belongs_to_uuid: opts.vmUuid, belongs_to_type: 'zone' }, reqId);
  } catch (err) {
    throw relay(err);
  }
  const checked = new Set<string>();
  for (const network of f.networks) {
    delete network.check_owner;
    const netUuid = String(network.ipv4_uuid);
    const existing = current.filter((n) => n.network_uuid && n.network_uuid === netUuid);
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
      if (Object.prototype.hasOwnProperty.call(network, k)) params[k] = network[k];
    }
    try {
      f.nics.push(await peers.provisionNic(netUuid, params, reqId));
    } catch (err) {
      throw relay(err);
    }
  }
}

/** `loadNicsByMac`: the existing NICs to add (add_nics with `macs`). */
export async function loadNicsByMac(peers: Peers, macs: unknown, reqId: string): Promise<Obj[]> {
  if (!macs) throw new VmapiError('InternalError', 'No MACs specified');
  const list = typeof macs === 'string' ? macs.split(',') : (macs as unknown[]);
  const out: Obj[] = [];
  for (const mac of list) {
    try {
      out.push(await peers.getNic(String(mac), reqId));
    } catch (err) {
      throw relay(err);
    }
  }
  return out;
}

/** `cleanupNics`: delete what was provisioned; errors are ignored (the original error wins). */
export async function cleanupNics(peers: Peers, nics: Obj[], reqId: string): Promise<void> {
  await Promise.all(nics.map((n) => peers.deleteNic(String(n.mac), reqId).catch(() => undefined)));
}
