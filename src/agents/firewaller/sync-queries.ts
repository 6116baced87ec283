/**
 * What a firewaller sync asks: FWAPI's `POST /resolve` payloads, one per owner of the CN's VMs
 * with their firewall enabled (sdc-firewaller-agent lib/fwapi.js), and the VMAPI predicate for
 * the remote VMs an answer names (lib/pred.js).
 */
import type { FwVm, RemoteTargets } from './rules.js';

export interface ResolvePayload {
  owner_uuid?: string;
  vms?: string[];
  tags?: Record<string, (string | number | boolean)[]>;
}

/** fwapi.js buildResolvePayload: per owner, the uuids and tags of VMs with their firewall enabled. */
export function resolvePayloads(vms: readonly FwVm[]): ResolvePayload[] {
  const owners = new Map<string, { vms: string[]; tags: Map<string, Set<string | number | boolean>> }>();
  for (const vm of vms) {
    if (!vm.enabled) continue;
    const owner = vm.owner_uuid ?? 'none';
    let o = owners.get(owner);
    if (!o) owners.set(owner, (o = { vms: [], tags: new Map() }));
    o.vms.push(vm.uuid);
    for (const [k, v] of Object.entries(vm.tags)) {
      let set = o.tags.get(k);
      if (!set) o.tags.set(k, (set = new Set()));
      set.add(v as string | number | boolean);
    }
  }
  const out: ResolvePayload[] = [];
  for (const [owner, o] of owners) {
    const p: ResolvePayload = {};
    if (owner !== 'none') p.owner_uuid = owner;
    if (o.vms.length > 0) p.vms = o.vms;
    if (o.tags.size > 0) p.tags = Object.fromEntries([...o.tags].map(([k, s]) => [k, [...s].map((v) => String(v))]));
    out.push(p);
  }
  return out;
}

/** pred.js createPred. */
export function createPredicate(owner: string, serverUuid: string, f: RemoteTargets): Record<string, unknown> {
  const and: Record<string, unknown>[] = [
    { eq: ['owner_uuid', owner] },
    { ne: ['server_uuid', serverUuid] },
    { ne: ['state', 'destroyed'] },
    { ne: ['state', 'failed'] },
    { ne: ['state', 'provisioning'] },
  ];
  const tags = f.tags ?? {};
  const vms = f.vms ?? [];
  if (f.allVMs || (Object.keys(tags).length === 0 && vms.length === 0)) return { and };
  const or: Record<string, unknown>[] = [];
  for (const [k, v] of Object.entries(tags)) {
    if (Array.isArray(v)) for (const x of v) or.push({ eq: [`tag.${k}`, x] });
    else or.push({ eq: [`tag.${k}`, v === true ? '*' : v] });
  }
  for (const vm of vms) or.push({ eq: ['uuid', vm] });
  if (or.length === 1) and.push(or[0]!);
  else if (or.length > 1) and.push({ or });
  return { and };
}
