/**
 * DAPI's steps on what a server has room for (sdc-designation lib/algorithms/load-server-vms,
 * calculate-ticketed-vms, override-overprovisioning, calculate-server-unreserved, and the
 * hard filters on their results: overprovision ratios, minimum RAM, CPU and free disk, large
 * servers): the VMs a server holds, those on their way (open provisioning tickets), the
 * overprovisioning ratios, and what is left unreserved.
 */
import {
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
