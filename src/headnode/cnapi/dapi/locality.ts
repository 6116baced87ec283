/**
 * DAPI's locality steps (sdc-designation lib/algorithms/calculate-affinity,
 * hard-filter-locality-hints, soft-filter-locality-hints): affinity rules as locality hints,
 * then strict hints as a filter and the others (or spreading an owner's VMs) as a preference.
 * Affinity rules are looked up in VMAPI before the run (affinity.ts).
 */
import { filterWith, keep, vmOf, type DapiServer, type Obj, type Plugin, type Reasons } from './types.js';

export const calculateAffinity: Plugin = {
  name: 'Convert affinity to locality hints',
  run: (servers, o) => {
    if (servers.length === 0) return keep(servers);
    const vm = vmOf(o);
    if (vm.affinity === undefined) return keep(servers, { skip: 'No affinity found' });
    if (o.affinity?.error !== undefined) return { servers: [], reasons: { '*': o.affinity.error } };
    if (o.affinity?.locality) vm.locality = o.affinity.locality;
    return keep(servers);
  },
};

/** Locality hints as a list of VM uuids. */
function hintList(v: unknown): string[] {
  if (!v) return [];
  return (Array.isArray(v) ? v : [v]).map(String);
}

export const hardLocality: Plugin = {
  name: 'Servers with requested hard locality considered',
  run: (servers, o) => {
    if (servers.length === 0) return keep(servers);
    const locality = (vmOf(o).locality ?? {}) as Obj;
    if (!locality.strict) return keep(servers, { skip: 'No strict locality requested' });
    const far = hintList(locality.far);
    const near = hintList(locality.near);
    if (near.length === 0 && far.length === 0) return keep(servers, { skip: 'No near or far localities requested' });
    return filterWith(servers, (s) => {
      const here = Object.keys(s.vms ?? {});
      const clash = far.find((u) => here.includes(u));
      if (clash) return `exclude: inst!=${clash}`;
      const absent = near.find((u) => !here.includes(u));
      if (absent) return `exclude: inst==${absent}`;
      return true;
    });
  },
};

export const softLocality: Plugin = {
  name: 'Servers with requested soft locality considered',
  run: (servers, o) => {
    if (servers.length === 0) return keep(servers);
    const vm = vmOf(o);
    const locality = (vm.locality ?? {}) as Obj;
    const far = hintList(locality.far);
    const near = hintList(locality.near);
    const reasons: Reasons = {};
    if (near.length === 0 && far.length === 0) {
      // Spread an owner's VMs: prefer servers without any of theirs, if there are such.
      const owner = vm.owner_uuid;
      const hasOwners = (s: DapiServer): boolean => Object.values(s.vms ?? {}).some((v) => v.owner_uuid === owner);
      const free = servers.filter((s) => !hasOwners(s));
      if (free.length === 0) return keep(servers, { '*': 'exclude: spread by owner (ignored b/c non-strict)' });
      for (const s of servers) if (hasOwners(s)) reasons[s.uuid] = 'exclude: spread by owner';
      return { servers: free, reasons };
    }
    if (locality.strict) return keep(servers, { skip: 'Strict locality requested and no spreading needed' });
    const preferred = servers.filter((s) => {
      const here = Object.keys(s.vms ?? {});
      return !far.some((u) => here.includes(u)) && near.every((u) => here.includes(u));
    });
    return preferred.length > 0 ? keep(preferred) : keep(servers, { '*': 'no servers match the locality hints (ignored b/c non-strict)' });
  },
};
