/**
 * VMAPI's `translateVm` (sdc-vmapi lib/common/vm-common.js): the one VM shape VMAPI stores
 * and renders. `full = true` (API output) fills every always-present field (null, {} or
 * []); `full = false` (what is stored) drops unset ones. Timestamps become ISO strings.
 */

export type VmObject = Record<string, unknown> & { uuid: string };

const JSON_FIELDS = ['nics', 'datasets', 'disks', 'snapshots', 'customer_metadata', 'internal_metadata'];
const TIMESTAMPS = ['create_timestamp', 'last_modified', 'destroyed'];

/** Always in a VM object (vm-agent's VMAPI_ALWAYS_SET_FIELDS mirrors this list). */
const ALWAYS_FIELDS = [
  'uuid',
  'alias',
  'autoboot',
  'brand',
  'billing_id',
  'cpu_cap',
  'cpu_shares',
  'create_timestamp',
  'customer_metadata',
  'datasets',
  'destroyed',
  'firewall_enabled',
  'internal_metadata',
  'last_modified',
  'limit_priv',
  'max_locked_memory',
  'max_lwps',
  'max_physical_memory',
  'max_swap',
  'nics',
  'owner_uuid',
  'platform_buildstamp',
  'quota',
  'ram',
  'resolvers',
  'server_uuid',
  'snapshots',
  'state',
  'tags',
  'zfs_filesystem',
  'zfs_io_priority',
  'zone_state',
  'zonepath',
  'zpool',
];

const OPTIONAL_FIELDS = [
  'boot_timestamp',
  'docker',
  'dns_domain',
  'delegate_dataset',
  'exit_status',
  'exit_timestamp',
  'filesystems',
  'flexible_disk_size',
  'free_space',
  'fs_allowed',
  'hostname',
  'indestructible_delegated',
  'indestructible_zoneroot',
  'init_name',
  'internal_metadata_namespaces',
  'kernel_version',
  'limit_priv',
  'maintain_resolvers',
  'mdata_exec_timeout',
  'package_name',
  'package_version',
  'pid',
  'tmpfs',
  'zfs_data_compression',
  'zfs_snapshot_limit',
];

function toIso(v: unknown): string | null {
  const d = typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v)) ? new Date(Number(v)) : new Date(String(v));
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/** `tags` written as `-foo=bar-bar=baz-` (old moray form) or JSON text. */
function parseTags(s: string): Record<string, unknown> {
  try {
    const v = JSON.parse(s) as unknown;
    if (v && typeof v === 'object') return v as Record<string, unknown>;
  } catch {
    // fall through to the tag format
  }
  const out: Record<string, unknown> = {};
  for (const part of s.split('-').filter(Boolean)) {
    const i = part.indexOf('=');
    if (i > 0) out[part.slice(0, i)] = part.slice(i + 1);
  }
  return out;
}

export function translateVm(input: Record<string, unknown>, full: boolean): VmObject {
  const obj: Record<string, unknown> = { ...input };
  for (const f of JSON_FIELDS) {
    if (typeof obj[f] === 'string') {
      try {
        obj[f] = JSON.parse(obj[f] as string);
      } catch {
        // VMAPI leaves unparseable values alone
      }
    }
  }
  if (typeof obj.tags === 'string') obj.tags = parseTags(obj.tags);
  for (const k of TIMESTAMPS) if (obj[k]) obj[k] = toIso(obj[k]);

  const vm: Record<string, unknown> = {};
  for (const f of ALWAYS_FIELDS) vm[f] = obj[f];
  for (const f of OPTIONAL_FIELDS) {
    const v = obj[f];
    if (v || v === 0 || v === false) vm[f] = v;
  }
  if (obj.brand === 'bhyve' || obj.brand === 'kvm') {
    vm.vcpus = obj.vcpus;
    vm.cpu_type = obj.cpu_type;
    vm.disks = obj.disks;
    if (obj.hostname) vm.hostname = obj.hostname;
    if (obj.brand === 'bhyve' && obj.free_space !== undefined) vm.free_space = obj.free_space;
  } else {
    vm.image_uuid = obj.image_uuid;
  }
  if (!vm.tags) vm.tags = {};

  if (full) {
    if (vm.ram === undefined && vm.max_physical_memory !== undefined) vm.ram = vm.max_physical_memory;
    if (vm.firewall_enabled === undefined) vm.firewall_enabled = false;
    for (const k of Object.keys(vm)) {
      if (vm[k] === undefined) {
        if (k === 'customer_metadata' || k === 'internal_metadata') vm[k] = {};
        else if (k === 'nics' || k === 'snapshots' || k === 'datasets') vm[k] = [];
        else vm[k] = null;
      }
    }
  } else {
    for (const k of Object.keys(vm)) if (vm[k] === undefined || vm[k] === null || vm[k] === '') delete vm[k];
  }
  return vm as VmObject;
}
