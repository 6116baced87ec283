/**
 * What DAPI's plug-ins share (sdc-designation lib/allocator.js, sdc-cnapi lib/designation.js):
 * the server objects they filter and score, DAPI's defaults as CNAPI sets them, the request
 * they see, and two small helpers for writing a plug-in.
 */

export type Obj = Record<string, unknown>;

/** A server as DAPI sees it: CNAPI's server object, mutated along the pipeline. */
export interface DapiServer extends Obj {
  uuid: string;
  score: number;
  sysinfo: Obj;
  vms?: Record<string, Obj>;
  overprovision_ratios?: Record<string, number>;
  unreserved_cpu?: number;
  unreserved_ram?: number;
  unreserved_disk?: number;
}

/** DAPI's defaults as CNAPI sets them (sdc-cnapi lib/designation.js getDefaults). */
export interface DapiDefaults {
  disable_override_overprovisioning: boolean;
  filter_capness: boolean;
  filter_headnode: boolean;
  filter_min_resources: boolean;
  filter_large_servers: boolean;
  filter_docker_nfs_volumes_automount_min_platform: string;
  filter_non_docker_nfs_volumes_automount_min_platform: string;
  filter_volapi_nfs_v2_min_platform: string;
  filter_flexible_disk_min_platform: string;
  weight_current_platform: number;
  weight_next_reboot: number;
  weight_num_owner_zones: number;
  weight_uniform_random: number;
  weight_unreserved_disk: number;
  weight_unreserved_ram: number;
  server_spread?: string;
  filter_vm_limit?: number;
  filter_docker_min_platform?: string;
  minimum_free_disk?: number;
  overprovision_ratio_cpu?: number;
  overprovision_ratio_ram?: number;
  overprovision_ratio_disk?: number;
}

export const DEFAULT_DAPI_DEFAULTS: DapiDefaults = {
  disable_override_overprovisioning: false,
  filter_capness: true,
  filter_headnode: true,
  filter_min_resources: true,
  filter_large_servers: true,
  filter_docker_nfs_volumes_automount_min_platform: '20160613T123039Z',
  filter_non_docker_nfs_volumes_automount_min_platform: '20170925T211846Z',
  filter_volapi_nfs_v2_min_platform: '20200213T123742Z',
  filter_flexible_disk_min_platform: '20181206T190647Z',
  weight_current_platform: 1,
  weight_next_reboot: 0.5,
  weight_num_owner_zones: 0,
  weight_uniform_random: 0.5,
  weight_unreserved_disk: 1,
  weight_unreserved_ram: 2,
};

/** One provisioning ticket as calculate-ticketed-vms reads it. */
export interface Ticket {
  id: string;
  server_uuid: string;
  scope: string;
  action: string;
  status: string;
  extra?: Obj;
}

export interface PluginOpts {
  defaults: DapiDefaults;
  vm?: Obj;
  img?: Obj;
  pkg?: Obj;
  tickets?: Ticket[];
  /** The VMs of a server (load-server-vms); absent: server.vms is already filled. */
  getServerVms?: (server: DapiServer) => Obj[];
  /** The VM's affinity rules as locality hints, looked up in VMAPI before the run (affinity.ts). */
  affinity?: { locality?: Obj; error?: string };
}

export type Reasons = Record<string, string>;

export interface Plugin {
  name: string;
  run(servers: DapiServer[], opts: PluginOpts): { servers: DapiServer[]; reasons: Reasons };
}

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;
/** The share of a zpool DAPI counts as usable (metadata overhead). */
export const POOL_USABLE_RATIO = 0.94;
export const DEFAULT_VM_LIMIT = 224;
export const HVM_BRANDS = ['bhyve', 'kvm'];

export function keep(servers: DapiServer[], reasons: Reasons = {}): { servers: DapiServer[]; reasons: Reasons } {
  return { servers, reasons };
}

export function filterWith(
  servers: DapiServer[],
  test: (s: DapiServer) => string | true,
): { servers: DapiServer[]; reasons: Reasons } {
  const reasons: Reasons = {};
  const out = servers.filter((s) => {
    const r = test(s);
    if (r === true) return true;
    if (r) reasons[s.uuid] = r;
    return false;
  });
  return { servers: out, reasons };
}

export const vmOf = (o: PluginOpts): Obj => o.vm ?? {};
export const num = (v: unknown): number => Number(v);
