/**
 * DAPI's filtering and calculating plug-ins (sdc-designation lib/algorithms/hard-filter-*,
 * soft-filter-*, calculate-*, load-server-vms, override-overprovisioning, identity), each under
 * the name DAPI gives it: that name is what `steps[].step` shows.
 *
 * Affinity rules are looked up in VMAPI before the run (affinity.ts). Difference, documented
 * in docs/dev-headnode.md: owner filters (`filter_owner_server`) are not evaluated (the dev
 * headnode sets none).
 */
import { validateServer } from './validations.js';
import {
  DEFAULT_VM_LIMIT,
  filterWith,
  GiB,
  HVM_BRANDS,
  keep,
  MiB,
  num,
  POOL_USABLE_RATIO,
  vmOf,
  type DapiServer,
  type Obj,
  type Plugin,
  type PluginOpts,
  type Reasons,
  type Ticket,
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

export const minFreeDisk: Plugin = {
  name: 'Servers with enough free disk',
  run: (servers, o) => {
    const required = o.defaults.minimum_free_disk;
    if (required === undefined) return keep(servers, { skip: 'No minimum free disk set' });
    return filterWith(servers, (s) => {
      const free = Math.max(0, Math.ceil((num(s.disk_pool_size_bytes) * POOL_USABLE_RATIO - num(s.disk_pool_alloc_bytes)) / MiB));
      return free >= required ? true : `Server requires ${required}MB free disk, but only has ${free}MB`;
    });
  },
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

/** Platform-version limits keyed by SDC version ("7.0": "20130122T122401Z"). */
function platformFilter(
  limits: Obj,
  servers: DapiServer[],
  what: string,
  reasons: Reasons,
  kind: 'min' | 'max',
): DapiServer[] {
  const valid: Record<string, string> = {};
  for (const [v, p] of Object.entries(limits)) if (/^\d+\.\d+$/.test(v)) valid[v] = String(p);
  const versions = Object.keys(valid).sort();
  const lowest = versions[0];
  const highest = versions[versions.length - 1];
  if (!highest || !lowest) return servers;
  return servers.filter((s) => {
    const version = String(s.sysinfo['SDC Version'] || '6.5');
    const platform = String(s.sysinfo['Live Image']);
    const limit = valid[version];
    const ok =
      kind === 'min'
        ? version > highest || (limit !== undefined && platform >= limit) || (!limit && lowest < version && version < highest)
        : version < lowest || (limit !== undefined && platform <= limit) || (!limit && lowest < version && version < highest);
    if (!ok) {
      reasons[s.uuid] = `${what} requires ${kind} platforms ${JSON.stringify(valid)}, but server has {"${version}":"${platform}"}`;
    }
    return ok;
  });
}

export const platformVersions: Plugin = {
  name: 'Servers which meet image manifest and package platform requirements',
  run: (servers, o) => {
    const reasons: Reasons = {};
    let out = servers;
    const pkgMin = o.pkg?.min_platform as Obj | undefined;
    if (pkgMin) out = platformFilter(pkgMin, out, 'Package', reasons, 'min');
    const reqs = o.img?.requirements as Obj | undefined;
    if (reqs?.min_platform) out = platformFilter(reqs.min_platform as Obj, out, 'Image', reasons, 'min');
    if (reqs?.max_platform) out = platformFilter(reqs.max_platform as Obj, out, 'Image', reasons, 'max');
    return { servers: out, reasons };
  },
};

export const featureMinPlatform: Plugin = {
  name: "Servers which meet various features' platform requirements",
  run: (servers, o) => {
    const vm = vmOf(o);
    const d = o.defaults;
    const reasons: Reasons = {};
    let out = servers;
    const need = (platform: string | undefined, what: string, when: boolean): void => {
      if (when && platform) out = platformFilter({ '7.0': platform }, out, what, reasons, 'min');
    };
    const md = vm.internal_metadata as Obj | undefined;
    need(d.filter_docker_min_platform, 'Docker support', Boolean(vm.docker));
    need(d.filter_docker_nfs_volumes_automount_min_platform, 'Docker volume automount support', Boolean(vm.docker && vm.volumes));
    need(d.filter_non_docker_nfs_volumes_automount_min_platform, 'Non-docker volume automount support', Boolean(!vm.docker && vm.volumes));
    need(d.filter_volapi_nfs_v2_min_platform, 'volapi nfs v2 support', md?.['volapi-nfs-version'] === 2);
    need(d.filter_flexible_disk_min_platform, 'Flexible disk size support', Boolean(vm.flexible_disk_size));
    return { servers: out, reasons };
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

/** The ratios DAPI forces on every server (and on the package). */
export const DEFAULT_OVERPROVISION = { cpu: 4, ram: 1, disk: 1 } as const;

export const overrideOverprovisioning: Plugin = {
  name: 'Force overprovisioning to fixed values',
  run: (servers, o) => {
    const d = o.defaults;
    if (d.disable_override_overprovisioning) return keep(servers, { skip: 'Do not override overprovisioning numbers' });
    const ratios = {
      cpu: Number(d.overprovision_ratio_cpu) || DEFAULT_OVERPROVISION.cpu,
      ram: Number(d.overprovision_ratio_ram) || DEFAULT_OVERPROVISION.ram,
      disk: Number(d.overprovision_ratio_disk) || DEFAULT_OVERPROVISION.disk,
    };
    for (const s of servers) s.overprovision_ratios = ratios;
    if (o.pkg) {
      o.pkg.overprovision_cpu = ratios.cpu;
      o.pkg.overprovision_ram = ratios.ram;
      o.pkg.overprovision_disk = ratios.disk;
      delete o.pkg.overprovision_net;
      delete o.pkg.overprovision_io;
    }
    return keep(servers);
  },
};

export const overprovisionRatios: Plugin = {
  name: 'Servers with same overprovision ratios as requested VM',
  run: (servers, o) => {
    const pkg = o.pkg;
    if (!pkg) return keep(servers, { skip: 'No pkg provided' });
    const canon = (v: unknown): string | null => (v ? Number(v).toFixed(2) : null);
    const reasons: Reasons = {};
    let out = servers;
    for (const [serverKey, pkgKey] of [
      ['cpu', 'overprovision_cpu'],
      ['ram', 'overprovision_ram'],
      ['disk', 'overprovision_disk'],
      ['io', 'overprovision_io'],
      ['net', 'overprovision_net'],
    ] as const) {
      const pkgRatio = canon(pkg[pkgKey]);
      out = out.filter((s) => {
        const serverRatio = canon(s.overprovision_ratios?.[serverKey]);
        if (serverRatio === pkgRatio) return true;
        reasons[s.uuid] = `Package over-provision ratio of ${String(pkgRatio)} does not match server's ${String(serverRatio)}`;
        return false;
      });
    }
    return { servers: out, reasons };
  },
};

export const loadServerVms: Plugin = {
  name: 'Load info about all VMs for each server',
  run: (servers, o) => {
    const get = o.getServerVms;
    if (!get) return keep(servers, { skip: 'getServerVms not set; assuming server.vms is already populated' });
    const reasons: Reasons = {};
    for (const s of servers) {
      const vms = get(s);
      s.vms = {};
      for (const vm of vms) s.vms[String(vm.uuid)] = vm;
      reasons[s.uuid] = `${vms.length} VMs loaded`;
    }
    return { servers, reasons };
  },
};

export const ticketedVms: Plugin = {
  name: 'Add VMs which have open provisioning tickets',
  run: (servers, o) => {
    const byServer = new Map<string, Ticket[]>();
    for (const t of o.tickets ?? []) {
      if (t.scope === 'vm' && t.action === 'provision' && (t.status === 'queued' || t.status === 'active')) {
        const list = byServer.get(t.server_uuid) ?? [];
        list.push(t);
        byServer.set(t.server_uuid, list);
      }
    }
    const out = servers.filter((s) => {
      const tickets = byServer.get(s.uuid);
      if (!tickets) return true;
      const vms = (s.vms ??= {});
      for (const t of tickets) {
        if (!t.extra) return false;
        if (vms[t.id]) continue;
        const vm = ticketVm(t);
        vms[t.id] = vm;
        const zvolGiB = Number(vm.zvol_quota ?? 0);
        delete vm.zvol_quota;
        s.disk_zone_quota_bytes = num(s.disk_zone_quota_bytes) + num(vm.quota) * GiB;
        if (vm.brand === 'kvm') s.disk_kvm_zvol_volsize_bytes = num(s.disk_kvm_zvol_volsize_bytes) + zvolGiB * GiB;
        else if (vm.brand === 'bhyve') {
          s.disk_zone_quota_bytes = num(s.disk_zone_quota_bytes) + zvolGiB * GiB;
          vm.quota = num(vm.quota) + zvolGiB;
        }
      }
      return true;
    });
    return keep(out);
  },
};

/** The VM a provisioning ticket stands for (its `extra`), as it will count once it exists. */
function ticketVm(t: Ticket): Obj {
  const e = t.extra ?? {};
  const vm: Obj = {
    uuid: t.id,
    owner_uuid: e.owner_uuid,
    max_physical_memory: e.max_physical_memory,
    cpu_cap: e.cpu_cap,
    quota: e.quota,
    brand: e.brand,
    zone_state: 'running',
    state: 'running',
  };
  if (vm.brand === 'kvm' || vm.brand === 'bhyve') {
    // The memory overhead vmadm adds to an HVM's zone (kvm 1 GiB, bhyve 1.25 GiB).
    vm.max_physical_memory = num(vm.max_physical_memory) + (vm.brand === 'kvm' ? 1024 : 1280);
    const disks = Array.isArray(e.disks) ? (e.disks as Obj[]) : [];
    vm.zvol_quota = Math.ceil(disks.reduce((sum, d) => sum + (Number(d.size) || 0), 0) / 1024);
  }
  return vm;
}

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

/** What a server has left, in MiB and centi-CPUs, after its VMs (calculate-server-unreserved). */
export const serverUnreserved: Plugin = {
  name: 'Calculate unreserved resources on each server',
  run: (servers) => {
    for (const s of servers) {
      if (!s.sysinfo) {
        s.unreserved_cpu = s.unreserved_ram = s.unreserved_disk = 0;
        continue;
      }
      s.overprovision_ratios ??= { ram: 1, disk: 1, cpu: 4 };
      const ratios = s.overprovision_ratios;
      let cpu = num(s.sysinfo['CPU Total Cores']) * 100;
      if (Object.prototype.hasOwnProperty.call(s.sysinfo, 'CPU Online Count')) cpu = num(s.sysinfo['CPU Online Count']) * 100;
      let ram = (num(s.memory_total_bytes) / MiB) * (1 - num(s.reservation_ratio));
      s.unreserved_disk = unreservedDisk(s);
      if (s.vms) {
        const cpuRatio = ratios.cpu || 1;
        const ramRatio = ratios.ram || 1;
        for (const vm of Object.values(s.vms)) {
          if (vm.cpu_cap) {
            if (vm.state !== 'failed') cpu -= num(vm.cpu_cap) / cpuRatio;
          } else {
            cpu = 0;
          }
          if (vm.state !== 'failed') {
            let vmRam = num(vm.max_physical_memory);
            if (!HVM_BRANDS.includes(String(vm.brand))) vmRam /= ramRatio;
            ram -= vmRam;
          }
        }
        cpu = Math.floor(cpu);
        ram = Math.floor(ram);
      }
      s.unreserved_cpu = cpu;
      s.unreserved_ram = ram;
    }
    return keep(servers);
  },
};

function unreservedDisk(s: DapiServer): number {
  const pool = num(s.disk_pool_size_bytes) * POOL_USABLE_RATIO;
  let unreserved = pool - num(s.disk_system_used_bytes) - num(s.disk_installed_images_used_bytes) - num(s.disk_cores_quota_used_bytes);
  const kvms = Object.values(s.vms ?? {}).filter((vm) => vm.brand === 'kvm').length;
  unreserved -= num(s.disk_kvm_zvol_volsize_bytes) + kvms * 10 * GiB;
  const diskRatio = s.overprovision_ratios?.disk || 1;
  const quotaFree = num(s.disk_zone_quota_bytes) - num(s.disk_zone_quota_used_bytes);
  unreserved -= num(s.disk_zone_quota_used_bytes) + quotaFree / diskRatio;
  unreserved = Math.min(unreserved, pool - num(s.disk_pool_alloc_bytes));
  return Math.floor(unreserved / MiB);
}

function minResource(
  servers: DapiServer[],
  o: PluginOpts,
  what: 'RAM' | 'CPU',
): { servers: DapiServer[]; reasons: Reasons } {
  if (!o.defaults.filter_min_resources) {
    return keep(servers, { skip: `Do not filter out based on minimum free ${what}` });
  }
  const vm = vmOf(o);
  const pkg = o.pkg;
  if (what === 'CPU') {
    if (!vm.cpu_cap && pkg?.cpu_cap) vm.cpu_cap = pkg.cpu_cap;
    if (!vm.cpu_cap) return keep(servers);
  }
  const pkgRatio = what === 'RAM' ? pkg?.overprovision_ram : pkg?.overprovision_cpu;
  if (pkg && pkgRatio) {
    let wanted: number;
    if (what === 'RAM') {
      wanted = num(vm.ram || pkg.max_physical_memory);
      if (!HVM_BRANDS.includes(String(vm.brand))) wanted /= num(pkgRatio);
    } else {
      wanted = num(vm.cpu_cap) / num(pkgRatio);
    }
    return filterWith(servers, (s) => {
      const spare = num(what === 'RAM' ? s.unreserved_ram : s.unreserved_cpu);
      return spare >= wanted ? true : `VM's calculated ${wanted} ${what} is less than server's spare ${spare}`;
    });
  }
  return filterWith(servers, (s) => {
    const serverRatio = s.overprovision_ratios?.[what === 'RAM' ? 'ram' : 'cpu'];
    if (!serverRatio || !pkg) return true;
    return `Package gave no ${what} overprovision ratio, but server has ratio ${serverRatio}`;
  });
}

export const minRam: Plugin = { name: 'Servers with enough unreserved RAM', run: (s, o) => minResource(s, o, 'RAM') };
export const minCpu: Plugin = { name: 'Servers with enough unreserved CPU', run: (s, o) => minResource(s, o, 'CPU') };

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

export const ownersServers: Plugin = {
  name: 'Filter CNs based on owner filters',
  run: (servers) => keep(servers, { skip: 'No filter_owner_server default to run' }),
};

export const reservoir: Plugin = {
  name: 'Servers which are not in the reservoir',
  run: (servers) => keep(servers.filter((s) => !s.reservoir)),
};

export const identity: Plugin = { name: 'Identity function', run: (servers) => keep(servers) };

export const largeServers: Plugin = {
  name: 'Filter out the largest and most empty servers',
  run: (servers, o) => {
    if (!o.defaults.filter_large_servers) return keep(servers, { skip: 'Do not filter out large servers' });
    const poolSize = servers.length * 0.15;
    if (poolSize < 1) return keep(servers);
    const sorted = [...servers].sort((a, b) => num(b.unreserved_ram) - num(a.unreserved_ram));
    return keep(sorted.slice(Math.trunc(poolSize)));
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
