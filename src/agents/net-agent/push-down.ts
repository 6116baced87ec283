/**
 * What NAPI's view of a VM's NICs means for the VM itself (vm-net-agent-spec §3.4, §3.10; RFD
 * 28): one vmadm update payload with the real vmadm keys
 *
 *   update_nics    NAPI-owned NIC properties (spoofing flags, gateway, ip, model, mtu, netmask,
 *                  network_uuid, nic_tag, vlan_id) where the VM's NIC differs;
 *   set_routes     the routes of the VM's networks (a later NIC wins a shared destination);
 *   remove_routes  VM routes no network has any more;
 *   resolvers      the ordered union of the networks' resolvers, unless the VM opted out with
 *                  internal_metadata.no_nic_resolvers (the original then still wiped them).
 *
 * An empty payload means the VM already agrees with NAPI: nothing is written.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Vm, VmUpdatePayload } from '../../vmadm/types.js';
import { nicPullDiff, normaliseMac, type NapiNic } from './fields.js';

/**
 * @param remotes NAPI's copy of each of the VM's NICs, by normalised MAC. Every NIC of the VM
 *   must have one (callers wait until they do).
 */
export function pushDownPayload(vm: Vm, remotes: ReadonlyMap<string, NapiNic>): VmUpdatePayload {
  const payload: VmUpdatePayload = {};
  const updateNics: Record<string, unknown>[] = [];
  const routes: Record<string, string> = {};
  const resolvers: string[] = [];
  let anyResolvers = false;
  for (const nic of vm.nics ?? []) {
    const mac = typeof nic?.mac === 'string' ? normaliseMac(nic.mac) : undefined;
    const remote = mac ? remotes.get(mac) : undefined;
    if (!remote) continue;
    const diff = nicPullDiff(nic, remote);
    if (diff) updateNics.push(diff);
    if (isStringRecord(remote.routes)) Object.assign(routes, remote.routes);
    if (Array.isArray(remote.resolvers)) {
      anyResolvers = true;
      for (const r of remote.resolvers) if (typeof r === 'string' && !resolvers.includes(r)) resolvers.push(r);
    }
  }
  if (updateNics.length > 0) payload.update_nics = updateNics;

  const current = isStringRecord(vm.routes) ? vm.routes : {};
  const setRoutes: Record<string, string> = {};
  for (const [dst, gw] of Object.entries(routes)) if (current[dst] !== gw) setRoutes[dst] = gw;
  const removeRoutes = Object.keys(current).filter((dst) => !(dst in routes));
  if (Object.keys(setRoutes).length > 0) payload.set_routes = setRoutes;
  if (removeRoutes.length > 0) payload.remove_routes = removeRoutes;

  const optedOut = flag((vm.internal_metadata as Record<string, unknown> | undefined)?.no_nic_resolvers);
  // A NAPI that renders no resolvers at all says nothing about them: leave the VM's alone.
  if (anyResolvers && !optedOut && !isDeepStrictEqual(vm.resolvers ?? [], resolvers)) payload.resolvers = resolvers;
  return payload;
}

export function isEmptyPayload(payload: VmUpdatePayload): boolean {
  return Object.keys(payload).length === 0;
}

function isStringRecord(v: unknown): v is Record<string, string> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');
}

function flag(v: unknown): boolean {
  return v === true || v === 'true';
}
