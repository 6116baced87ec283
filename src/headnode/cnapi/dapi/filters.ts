/**
 * DAPI's hard filters on what a server is and holds (sdc-designation lib/algorithms/
 * hard-filter-*, identity), each under the name DAPI gives it: that name is what
 * `steps[].step` shows. The platform filters are platform-filters.ts, the capacity steps
 * capacity.ts, locality locality.ts.
 *
 * Difference, documented in docs/dev-headnode.md: owner filters (`filter_owner_server`) are
 * not evaluated (the dev headnode sets none).
 */
import { validateServer } from './validations.js';
import {
  DEFAULT_VM_LIMIT,
  filterWith,
  HVM_BRANDS,
  keep,
  vmOf,
  type DapiServer,
  type Obj,
  type Plugin,
  type Reasons,
} from './types.js';

export const setup: Plugin = {
  name: 'Servers which have been setup',
  run: (servers) => keep(servers.filter((s) => Boolean(s.setup))),
};

export const running: Plugin = {
  name: 'Servers which are currently running',
  run: (servers) => filterWith(servers, (s) => (s.status === 'running' ? true : `Server has status: ${String(s.status)}`)),
};

export const invalidServers: Plugin = {
  name: 'Servers objects which are valid',
  run: (servers) => filterWith(servers, (s) => validateServer(s) ?? true),
};

export const os: Plugin = {
  name: 'Servers which have the required OS',
  run: (servers, o) => {
    const vm = vmOf(o);
    const requireLinux = vm.brand === 'lx' && o.img?.type === 'lxd';
    return filterWith(servers, (s) => {
      const serverOs = s.sysinfo?.['System Type'];
      if (requireLinux && serverOs !== 'Linux') return 'Server does not have "linux" OS';
      if (!requireLinux && serverOs === 'Linux') return 'Server does not have "SunOS" OS';
      return true;
    });
  },
};

export const forceFailure: Plugin = {
  name: 'Forced failure',
  run: (servers, o) => {
    const md = vmOf(o).internal_metadata as Obj | undefined;
    if (!md?.force_designation_failure) return keep(servers);
    const reasons: Reasons = {};
    for (const s of servers) reasons[s.uuid] = 'force_designation_failure set, failing';
    return { servers: [], reasons };
  },
};

export const virtualServers: Plugin = {
  name: 'Servers which are not virtual servers',
  run: (servers, o) => {
    const vm = vmOf(o);
    const tags = vm.tags as Obj | undefined;
    // Docker provisions, and those that ask, never land on virtual servers (mock CNs are).
    if (!(vm.docker || tags?.['triton.placement.exclude_virtual_servers'])) return keep(servers);
    return filterWith(servers, (s) => (s.sysinfo?.['System Type'] === 'Virtual' ? 'Server is a virtual server - excluding' : true));
  },
};

export const zpoolEncryption: Plugin = {
  name: 'Servers which are zpool encrypted',
  run: (servers, o) => {
    const md = vmOf(o).internal_metadata as Obj | undefined;
    const encrypt = Boolean(md?.encrypted);
    const reasons: Reasons = {};
    const out = servers.filter((s) => {
      const encrypted = Boolean(s.sysinfo?.['Zpool Encrypted']);
      if (!encrypted && encrypt) reasons[s.uuid] = 'Server is not Zpool Encrypted';
      if (encrypted && !encrypt) reasons[s.uuid] = 'Server is Zpool Encrypted';
      return encrypt ? encrypted : !encrypted;
    });
    return { servers: out, reasons };
  },
};

export const volumesFrom: Plugin = {
  name: 'Servers containing VMs required for volumesfrom',
  run: (servers, o) => {
    const vm = vmOf(o);
    const md = vm.internal_metadata as Obj | undefined;
    if (!vm.docker || !md) {
      return keep(servers, { skip: 'Requested VM is not a Docker container and/or has no internal_metadata' });
    }
    const required = md['docker:volumesfrom'];
    if (!Array.isArray(required) || required.length === 0) {
      return keep(servers, { skip: 'Requested VM has no VMs listed in internal_data docker:volumesfrom' });
    }
    return filterWith(servers, (s) => {
      const vms = o.getServerVms ? o.getServerVms(s).map((v) => String(v.uuid)) : Object.keys(s.vms ?? {});
      const missing = (required as unknown[]).map(String).find((u) => !vms.includes(u));
      return missing ? `VM needs volumes from ${missing}, which was not found on server` : true;
    });
  },
};

export const reserved: Plugin = {
  name: 'Servers which are not reserved',
  run: (servers) => keep(servers.filter((s) => !s.reserved)),
};

/** Which NIC tags a server offers on links that are up, and which only on links that are down. */
function nicTags(s: DapiServer): { online: Record<string, Obj>; offline: Record<string, Obj> } {
  const online: Record<string, Obj> = {};
  const offline: Record<string, Obj> = {};
  const add = (group: unknown, tagKey: string): void => {
    for (const [name, nic] of Object.entries((group ?? {}) as Record<string, Obj>)) {
      nic.interface = name; // DAPI labels each NIC with its name, in place
      const index = nic['Link Status'] === 'up' ? online : offline;
      const tags = nic[tagKey];
      if (Array.isArray(tags)) for (const t of tags) index[String(t)] = nic;
    }
  };
  add(s.sysinfo['Network Interfaces'], 'NIC Names');
  add(s.sysinfo['Virtual Network Interfaces'], 'Overlay Nic Tags');
  return { online, offline };
}

export const vlans: Plugin = {
  name: 'Servers supporting required NIC Tags',
  run: (servers, o) => {
    const vm = vmOf(o);
    let requested: string[][] | null = null;
    if (Array.isArray(vm.nic_tag_requirements)) requested = vm.nic_tag_requirements as string[][];
    else if (Array.isArray(vm.nic_tags)) requested = (vm.nic_tags as string[]).map((t) => [t]);
    if (requested === null) return keep(servers, { skip: 'No NIC Tag requirements to filter on' });
    const reqs = requested;
    return filterWith(servers, (s) => {
      if (!s.sysinfo['Network Interfaces']) return 'Server missing interfaces in sysinfo';
      const { online, offline } = nicTags(s);
      for (const alternatives of reqs) {
        if (alternatives.some((t) => online[t])) continue;
        const down = [...alternatives].reverse().find((t) => offline[t]);
        if (down !== undefined) {
          const nic = offline[down]!;
          return `NIC ${String(nic.interface)} for tag "${down}" is ${String(nic['Link Status'])}`;
        }
        return `Server must have one of the NIC Tags: ${alternatives.join(', ')}`;
      }
      return true;
    });
  },
};

function traitMismatch(serverTrait: unknown, wanted: unknown): string | null {
  if (serverTrait === undefined || wanted === undefined) return 'undefined property';
  if (typeof wanted === 'boolean') return serverTrait === wanted ? null : 'boolean did not match';
  if (typeof wanted === 'string') {
    if (typeof serverTrait === 'string') return serverTrait === wanted ? null : 'strings did not match';
    if (Array.isArray(serverTrait)) return serverTrait.includes(wanted) ? null : 'server trait array did not contain trait';
    return 'unsupported combination of property types';
  }
  if (Array.isArray(wanted)) {
    if (typeof serverTrait === 'string') return wanted.includes(serverTrait) ? null : 'server trait was not in requested trait array';
    if (Array.isArray(serverTrait)) {
      return wanted.some((w) => serverTrait.includes(w)) ? null : 'server and requested trait arrays do not intersect';
    }
  }
  return 'unsupported combination of property types';
}

export const traits: Plugin = {
  name: 'Servers with correct traits',
  run: (servers, o) => {
    const vmTraits = (vmOf(o).traits ?? o.pkg?.traits) as Obj | undefined;
    const imgTraits = o.img?.traits as Obj | undefined;
    const wanted: Obj | null = vmTraits || imgTraits ? { ...(vmTraits ?? {}), ...(imgTraits ?? {}) } : null;
    const names = wanted ? Object.keys(wanted) : [];
    if (!wanted || names.length === 0) {
      return filterWith(servers, (s) => {
        const t = s.traits as Obj | undefined;
        return t === undefined || Object.keys(t).length === 0
          ? true
          : `Combined vm/pkg/img require no traits but server has ${JSON.stringify(t)}`;
      });
    }
    return filterWith(servers, (s) => {
      const t = s.traits as Obj | undefined;
      if (!t || names.length !== Object.keys(t).length) {
        return `Combined vm/pkg/img traits require ${JSON.stringify(wanted)} but server has ${JSON.stringify(t)}`;
      }
      for (const name of names) {
        const err = traitMismatch(t[name], wanted[name]);
        if (err) return `${name} comparison failed: ${err}`;
      }
      return true;
    });
  },
};

export const headnode: Plugin = {
  name: 'Servers which are not headnodes',
  run: (servers, o) => {
    if (!o.defaults.filter_headnode) return keep(servers, { skip: 'Do not filter out headnodes' });
    return keep(servers.filter((s) => !s.headnode));
  },
};

export const capness: Plugin = {
  name: 'Servers which have same existence of cpu_cap as package',
  run: (servers, o) => {
    if (!o.defaults.filter_capness) return keep(servers, { skip: 'Do not filter out cpu_cap disparities' });
    const pkgCapped = Boolean(vmOf(o).cpu_cap || o.pkg?.cpu_cap);
    return filterWith(servers, (s) => {
      for (const vm of Object.values(s.vms ?? {})) {
        if (pkgCapped !== Boolean(vm.cpu_cap)) {
          return `VM ${String(vm.uuid)} has ${vm.cpu_cap ? 'a' : 'no'} cpu_cap, while the package ${pkgCapped ? 'does' : 'does not'}`;
        }
      }
      return true;
    });
  },
};

export const vmCount: Plugin = {
  name: 'Servers with more VMs than limit',
  run: (servers, o) => {
    const limit = Number(o.defaults.filter_vm_limit) || DEFAULT_VM_LIMIT;
    return filterWith(servers, (s) => {
      const n = Object.keys(s.vms ?? {}).length;
      return n >= limit ? `Server has ${n} VMs (limit is ${limit})` : true;
    });
  },
};

export const hvm: Plugin = {
  name: 'Servers which are capable of requested virtualization',
  run: (servers, o) => {
    const vm = vmOf(o);
    const brand = String(vm.brand);
    if (!HVM_BRANDS.includes(brand)) return keep(servers);
    const vcpus = Number(vm.vcpus) || -1;
    return filterWith(servers, (s) => {
      const si = s.sysinfo;
      let maxVcpus = Number(si['Bhyve Max Vcpus']);
      let cpus = Number(si['CPU Total Cores']);
      if (Object.prototype.hasOwnProperty.call(si, 'CPU Online Count')) cpus = Number(si['CPU Online Count']);
      if (Number.isNaN(maxVcpus)) maxVcpus = 16;
      if (cpus < maxVcpus) maxVcpus = cpus;
      if (brand === 'bhyve' && si['Bhyve Capable'] !== true) return 'Server does not support "bhyve" VMs';
      if (brand === 'bhyve' && (vcpus < 1 || vcpus > maxVcpus)) {
        return `bhyve VM ${String(vm.uuid)} is requesting ${vcpus} vcpus whereas server supports 1 - ${maxVcpus} vcpus`;
      }
      if (si['HVM API']) return true;
      for (const other of Object.values(s.vms ?? {})) {
        if (HVM_BRANDS.includes(String(other.brand)) && other.brand !== brand) {
          return `VM ${String(other.uuid)} has brand ${String(other.brand)} which is incompatible with new VMs using brand ${brand}`;
        }
      }
      return true;
    });
  },
};

export const ownersServers: Plugin = {
  name: 'Filter CNs based on owner filters',
  run: (servers) => keep(servers, { skip: 'No filter_owner_server default to run' }),
};

export const reservoir: Plugin = {
  name: 'Servers which are not in the reservoir',
  run: (servers) => keep(servers.filter((s) => !s.reservoir)),
};

export const identity: Plugin = { name: 'Identity function', run: (servers) => keep(servers) };
