/**
 * Which VM properties exist, their payload types, and which brands may set them on create
 * and update. The facts follow SmartOS vmadm's property table (smartos-live
 * src/vm/node_modules/proptable.js); the dummy backend had none of this and accepted or
 * dropped keys silently.
 */

export const ALL_BRANDS = ['joyent', 'joyent-minimal', 'lx', 'bhyve', 'kvm', 'builder'] as const;
export const HVM_BRANDS: readonly string[] = ['bhyve', 'kvm'];

export type PropType =
  | 'string'
  | 'integer'
  | 'boolean'
  | 'uuid'
  | 'list'
  | 'flat-object'
  | 'object-array'
  | 'zpool';

/** A brand group: which brands a property applies to. */
type Brands = 'all' | 'hvm' | 'os' | 'bhyve' | 'kvm' | 'lx' | 'docker' | 'not-bhyve';

export interface PropSpec {
  type: PropType;
  create?: Brands;
  update?: Brands;
}

const OS: readonly string[] = ['joyent', 'joyent-minimal', 'lx', 'builder'];

export function brandIn(group: Brands | undefined, brand: string): boolean {
  switch (group) {
    case undefined:
      return false;
    case 'all':
      return true;
    case 'hvm':
      return HVM_BRANDS.includes(brand);
    case 'os':
      return OS.includes(brand);
    case 'docker':
      return brand === 'lx' || brand === 'joyent-minimal';
    case 'not-bhyve':
      return brand !== 'bhyve';
    default:
      return brand === group;
  }
}

/** Top-level VM properties a payload may carry. */
export const PROPERTIES: Readonly<Record<string, PropSpec>> = {
  alias: { type: 'string', create: 'all', update: 'all' },
  archive_on_delete: { type: 'boolean', create: 'all', update: 'all' },
  autoboot: { type: 'boolean', create: 'all', update: 'all' },
  bhyve_extra_opts: { type: 'string', create: 'bhyve', update: 'bhyve' },
  billing_id: { type: 'string', create: 'all', update: 'all' },
  boot: { type: 'string', create: 'hvm', update: 'hvm' },
  bootrom: { type: 'string', create: 'bhyve', update: 'bhyve' },
  brand: { type: 'string', create: 'all' },
  com1: { type: 'string', create: 'bhyve', update: 'bhyve' },
  com2: { type: 'string', create: 'bhyve', update: 'bhyve' },
  cpu_cap: { type: 'integer', create: 'all', update: 'all' },
  cpu_shares: { type: 'integer', create: 'all', update: 'all' },
  cpu_type: { type: 'string', create: 'kvm', update: 'kvm' },
  customer_metadata: { type: 'flat-object', create: 'all' },
  datasets: { type: 'list', create: 'all' },
  delegate_dataset: { type: 'boolean', create: 'os' },
  disks: { type: 'object-array', create: 'hvm' },
  disk_driver: { type: 'string', create: 'hvm', update: 'hvm' },
  do_not_inventory: { type: 'boolean', create: 'all', update: 'all' },
  docker: { type: 'boolean', create: 'docker', update: 'docker' },
  dns_domain: { type: 'string', create: 'os', update: 'os' },
  filesystems: { type: 'object-array', create: 'os' },
  firewall_enabled: { type: 'boolean', create: 'all', update: 'all' },
  flexible_disk_size: { type: 'integer', create: 'bhyve', update: 'bhyve' },
  fs_allowed: { type: 'list', create: 'os', update: 'os' },
  hostname: { type: 'string', create: 'all', update: 'all' },
  // image_uuid is create-only in SmartOS; the dummy backend (and reprovision) update it.
  image_uuid: { type: 'uuid', create: 'all', update: 'all' },
  indestructible_delegated: { type: 'boolean', create: 'all', update: 'all' },
  indestructible_zoneroot: { type: 'boolean', create: 'all', update: 'all' },
  init_name: { type: 'string', create: 'os', update: 'os' },
  internal_metadata: { type: 'flat-object', create: 'all' },
  internal_metadata_namespaces: { type: 'list', create: 'all', update: 'all' },
  kernel_version: { type: 'string', create: 'lx', update: 'lx' },
  limit_priv: { type: 'list', create: 'all', update: 'all' },
  maintain_resolvers: { type: 'boolean', create: 'os', update: 'os' },
  max_locked_memory: { type: 'integer', create: 'all', update: 'all' },
  max_lwps: { type: 'integer', create: 'all', update: 'all' },
  max_msg_ids: { type: 'integer', create: 'all', update: 'all' },
  max_physical_memory: { type: 'integer', create: 'all', update: 'all' },
  max_sem_ids: { type: 'integer', create: 'all', update: 'all' },
  max_shm_ids: { type: 'integer', create: 'all', update: 'all' },
  max_shm_memory: { type: 'integer', create: 'all', update: 'all' },
  max_swap: { type: 'integer', create: 'all', update: 'all' },
  mdata_exec_timeout: { type: 'integer', create: 'os' },
  nic_driver: { type: 'string', create: 'hvm', update: 'hvm' },
  nics: { type: 'object-array', create: 'all' },
  nowait: { type: 'boolean', create: 'os' },
  owner_uuid: { type: 'string', create: 'all', update: 'all' },
  package_name: { type: 'string', create: 'not-bhyve', update: 'not-bhyve' },
  package_version: { type: 'string', create: 'not-bhyve', update: 'not-bhyve' },
  qemu_extra_opts: { type: 'string', create: 'kvm', update: 'kvm' },
  qemu_opts: { type: 'string', create: 'kvm', update: 'kvm' },
  quota: { type: 'integer', create: 'all', update: 'all' },
  ram: { type: 'integer', create: 'all', update: 'all' },
  resolvers: { type: 'list', create: 'all', update: 'all' },
  restart_init: { type: 'boolean', create: 'os', update: 'os' },
  routes: { type: 'flat-object', create: 'all' },
  spice_opts: { type: 'string', create: 'kvm', update: 'kvm' },
  spice_password: { type: 'string', create: 'kvm', update: 'kvm' },
  spice_port: { type: 'integer', create: 'kvm', update: 'kvm' },
  tags: { type: 'flat-object', create: 'all' },
  tmpfs: { type: 'integer', create: 'os', update: 'os' },
  uuid: { type: 'uuid', create: 'all' },
  vcpus: { type: 'integer', create: 'hvm', update: 'hvm' },
  vga: { type: 'string', create: 'kvm', update: 'kvm' },
  virtio_txburst: { type: 'integer', create: 'kvm', update: 'kvm' },
  virtio_txtimer: { type: 'integer', create: 'kvm', update: 'kvm' },
  vnc_password: { type: 'string', create: 'hvm', update: 'hvm' },
  vnc_port: { type: 'integer', create: 'hvm', update: 'hvm' },
  zfs_data_compression: { type: 'string', create: 'os', update: 'os' },
  zfs_data_recsize: { type: 'integer', create: 'os', update: 'os' },
  zfs_filesystem_limit: { type: 'integer', create: 'all', update: 'all' },
  zfs_io_priority: { type: 'integer', create: 'all', update: 'all' },
  zfs_root_compression: { type: 'string', create: 'all', update: 'all' },
  zfs_root_recsize: { type: 'integer', create: 'all', update: 'all' },
  zfs_snapshot_limit: { type: 'integer', create: 'all', update: 'all' },
  zlog_max_size: { type: 'integer', create: 'os', update: 'os' },
  zonename: { type: 'string', create: 'all' },
  zpool: { type: 'zpool', create: 'all' },
  // Computed by vmadm from zpool and uuid; cn-agent's dummy machine_create passes them.
  zfs_filesystem: { type: 'string', create: 'all' },
  zonepath: { type: 'string', create: 'all' },
};

/** The compound update keys (set_*, remove_*, add_*, update_*). */
export const UPDATE_ACTIONS: Readonly<Record<string, PropSpec>> = {
  set_customer_metadata: { type: 'flat-object', update: 'all' },
  remove_customer_metadata: { type: 'list', update: 'all' },
  set_internal_metadata: { type: 'flat-object', update: 'all' },
  remove_internal_metadata: { type: 'list', update: 'all' },
  set_tags: { type: 'flat-object', update: 'all' },
  remove_tags: { type: 'list', update: 'all' },
  set_routes: { type: 'flat-object', update: 'all' },
  remove_routes: { type: 'list', update: 'all' },
  add_nics: { type: 'object-array', update: 'all' },
  update_nics: { type: 'object-array', update: 'all' },
  remove_nics: { type: 'list', update: 'all' },
  add_disks: { type: 'object-array', update: 'hvm' },
  update_disks: { type: 'object-array', update: 'hvm' },
  remove_disks: { type: 'list', update: 'hvm' },
};

/**
 * Fields vmadm computes and a caller can never set: they appear on a loaded VM (and
 * files written by the original dummy persist some of them) but are refused in a payload.
 */
export const READ_ONLY_FIELDS: readonly string[] = [
  'uuid',
  'brand',
  'state',
  'zone_state',
  'zonename',
  'zonepath',
  'zfs_filesystem',
  'zpool',
  'server_uuid',
  'datacenter_name',
  'platform_buildstamp',
  'create_timestamp',
  'last_modified',
  'boot_timestamp',
  'exit_status',
  'exit_timestamp',
  'pid',
  'zoneid',
  'snapshots',
  'datasets',
  'nics',
  'disks',
  'tags',
  'customer_metadata',
  'internal_metadata',
  'routes',
  'filesystems',
  'transition',
];

/**
 * Keys of the request envelope that reach vmadm with a payload (node-vmadm options and
 * the task parameters CNAPI passes along). They are not VM properties and are ignored.
 * `uuid`, `vm_uuid` and `server_uuid` must name this VM / this server when present.
 */
export const ENVELOPE_KEYS: readonly string[] = [
  'uuid',
  'vm_uuid',
  'server_uuid',
  'req_id',
  'log',
  'vmadmLogger',
  'include_dni',
  'jobid',
];

/** NIC keys vmadm keeps (proptable `nics.*.*`). */
export const NIC_PROPERTIES: Readonly<Record<string, PropType>> = {
  allow_dhcp_spoofing: 'boolean',
  allow_ip_spoofing: 'boolean',
  allow_mac_spoofing: 'boolean',
  allow_restricted_traffic: 'boolean',
  allow_unfiltered_promisc: 'boolean',
  allowed_dhcp_cids: 'list',
  allowed_ips: 'list',
  blocked_outgoing_ports: 'list',
  dhcp_server: 'boolean',
  gateway: 'string',
  gateways: 'list',
  interface: 'string',
  ip: 'string',
  ips: 'list',
  mac: 'string',
  model: 'string',
  mtu: 'integer',
  netmask: 'string',
  network_uuid: 'uuid',
  nic_tag: 'string',
  primary: 'boolean',
  vlan_id: 'integer',
  vrrp_primary_ip: 'string',
  vrrp_vrid: 'integer',
};

/** NIC flags vmadm drops when false (false is their default). */
export const NIC_FLAGS: readonly string[] = [
  'allow_dhcp_spoofing',
  'allow_ip_spoofing',
  'allow_mac_spoofing',
  'allow_restricted_traffic',
  'allow_unfiltered_promisc',
  'primary',
];

/** Disk keys vmadm keeps (proptable `disks.*.*`). */
export const DISK_PROPERTIES: Readonly<Record<string, PropType>> = {
  block_size: 'integer',
  boot: 'boolean',
  compression: 'string',
  dangerous_allow_shrink: 'boolean',
  guest_block_size: 'string',
  image_name: 'string',
  image_size: 'integer',
  image_uuid: 'uuid',
  media: 'string',
  model: 'string',
  nocreate: 'boolean',
  notrim: 'boolean',
  path: 'string',
  pci_slot: 'string',
  refreservation: 'integer',
  size: 'integer',
  uuid: 'uuid',
  zfs_filesystem: 'string',
  zpool: 'string',
};
