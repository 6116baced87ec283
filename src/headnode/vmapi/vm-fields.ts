/**
 * VMAPI's table of VM fields (sdc-vmapi lib/common/validation.js `VM_FIELDS`): the order
 * CreateVm and UpdateVm validate them in, which ones UpdateVm may change, and the names
 * ListVms' `fields` parameter accepts.
 */

export const VALID_VM_BRANDS = ['bhyve', 'joyent', 'joyent-minimal', 'kvm', 'lx'];

interface VmField {
  name: string;
  mutable?: boolean;
  internal?: boolean;
}

export const VM_FIELDS: VmField[] = [
  { name: 'alias', mutable: true },
  { name: 'autoboot', mutable: true },
  { name: 'billing_id', mutable: true },
  { name: 'brand' },
  { name: 'cpu_cap', mutable: true },
  { name: 'cpu_shares', mutable: true },
  { name: 'cpu_type' },
  { name: 'customer_metadata' },
  { name: 'delegate_dataset' },
  { name: 'disk_driver' },
  { name: 'dns_domain' },
  { name: 'docker' },
  { name: 'do_not_inventory', mutable: true },
  { name: 'firewall_enabled', mutable: true },
  { name: 'firewall_rules' },
  { name: 'fs_allowed', mutable: true },
  { name: 'hostname' },
  { name: 'indestructible_delegated', mutable: true },
  { name: 'indestructible_zoneroot', mutable: true },
  { name: 'init_name' },
  { name: 'internal_metadata' },
  { name: 'kernel_version' },
  { name: 'limit_priv', mutable: true },
  { name: 'locality' },
  { name: 'maintain_resolvers', mutable: true },
  { name: 'max_locked_memory', mutable: true },
  { name: 'max_lwps', mutable: true },
  { name: 'max_physical_memory', mutable: true },
  { name: 'max_swap', mutable: true },
  { name: 'mdata_exec_timeout' },
  { name: 'networks' },
  { name: 'nic_driver' },
  { name: 'last_modified', internal: true },
  { name: 'overprovision_cpu' },
  { name: 'overprovision_memory' },
  { name: 'owner_uuid' },
  { name: 'package_name', mutable: true },
  { name: 'package_version', mutable: true },
  { name: 'quota', mutable: true },
  { name: 'ram', mutable: true },
  { name: 'resolvers', mutable: true },
  { name: 'state', internal: true },
  { name: 'server_uuid' },
  { name: 'tags', mutable: true },
  { name: 'tmpfs', mutable: true },
  { name: 'uuid' },
  { name: 'vcpus' },
  { name: 'volumes' },
  { name: 'zfs_data_compression', mutable: true },
  { name: 'zfs_io_priority', mutable: true },
  { name: 'zfs_snapshot_limit', mutable: true },
  { name: 'zlog_max_size', mutable: true },
  { name: 'zone_state', internal: true },
];

export const VM_FIELD_NAMES = new Set(VM_FIELDS.map((f) => f.name));
