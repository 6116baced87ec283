/**
 * Which payload properties vmadm takes, their types, and for which brands and actions.
 * The facts follow SmartOS vmadm's property table (smartos-live
 * src/vm/node_modules/proptable.js, `payload.allowed`): a key not allowed for the VM's
 * brand and the action is removed from the payload with a warning (VM.js normalizePayload
 * after VM.validate), never refused; only bad values fail. The dummy backend had none of
 * this and stored or dropped keys silently.
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

type Brands = readonly string[];

const ALL: Brands = ALL_BRANDS;
const OS: Brands = ['joyent', 'joyent-minimal', 'builder', 'lx'];
const HVM: Brands = HVM_BRANDS;
const NOT_BHYVE: Brands = ['joyent', 'joyent-minimal', 'builder', 'kvm', 'lx'];
const DOCKER: Brands = ['joyent-minimal', 'lx'];
const BHYVE: Brands = ['bhyve'];
const KVM: Brands = ['kvm'];
const LX: Brands = ['lx'];

export interface PropSpec {
  type: PropType;
  /** Brands that may pass it to `vmadm create`. */
  create?: Brands;
  /** Brands that may pass it to `vmadm update`. */
  update?: Brands;
  /** An integer whose 0 is a value, not "unset" (proptable `keep_zero`). */
  keepZero?: boolean;
}

function p(type: PropType, create?: Brands, update?: Brands, keepZero?: boolean): PropSpec {
  const spec: PropSpec = { type };
  if (create) spec.create = create;
  if (update) spec.update = update;
  if (keepZero) spec.keepZero = true;
  return spec;
}

/** Top-level payload keys of `vmadm create` and `vmadm update`. */
export const PROPERTIES: Readonly<Record<string, PropSpec>> = {
  add_disks: p('object-array', undefined, HVM),
  add_filesystems: p('object-array', undefined, NOT_BHYVE),
  add_nics: p('object-array', undefined, ALL),
  add_pci_devices: p('object-array', BHYVE, BHYVE),
  alias: p('string', ALL, ALL),
  archive_on_delete: p('boolean', ALL, ALL),
  autoboot: p('boolean', ALL, ALL),
  bhyve_extra_opts: p('string', BHYVE, BHYVE),
  billing_id: p('string', ALL, ALL),
  boot: p('string', HVM, HVM),
  bootrom: p('string', BHYVE, BHYVE),
  brand: p('string', ALL),
  com1: p('string', BHYVE, BHYVE),
  com2: p('string', BHYVE, BHYVE),
  cpu_cap: p('integer', ALL, ALL),
  cpu_shares: p('integer', ALL, ALL),
  cpu_type: p('string', KVM, KVM),
  customer_metadata: p('flat-object', ALL),
  dataset_uuid: p('uuid', OS),
  delegate_dataset: p('boolean', OS),
  disks: p('object-array', HVM),
  disk_driver: p('string', HVM, HVM),
  do_not_inventory: p('boolean', ALL, ALL),
  docker: p('boolean', DOCKER, DOCKER),
  dns_domain: p('string', OS, OS),
  filesystems: p('object-array', OS),
  firewall_enabled: p('boolean', ALL, ALL),
  flexible_disk_size: p('integer', BHYVE, BHYVE),
  fs_allowed: p('list', OS, OS),
  hostname: p('string', ALL, ALL),
  image_uuid: p('uuid', ALL),
  indestructible_delegated: p('boolean', ALL, ALL),
  indestructible_zoneroot: p('boolean', ALL, ALL),
  init_name: p('string', OS, OS),
  internal_metadata: p('flat-object', ALL),
  internal_metadata_namespaces: p('list', ALL, ALL),
  kernel_version: p('string', LX, LX),
  limit_priv: p('list', ALL, ALL),
  maintain_resolvers: p('boolean', OS, OS),
  max_locked_memory: p('integer', ALL, ALL),
  max_lwps: p('integer', ALL, ALL),
  max_msg_ids: p('integer', ALL, ALL),
  max_physical_memory: p('integer', ALL, ALL),
  max_sem_ids: p('integer', ALL, ALL),
  max_shm_ids: p('integer', ALL, ALL),
  max_shm_memory: p('integer', ALL, ALL),
  max_swap: p('integer', ALL, ALL),
  mdata_exec_timeout: p('integer', OS),
  nic_driver: p('string', HVM, HVM),
  nics: p('object-array', ALL),
  nowait: p('boolean', OS),
  owner_uuid: p('string', ALL, ALL),
  package_name: p('string', NOT_BHYVE, NOT_BHYVE),
  package_version: p('string', NOT_BHYVE, NOT_BHYVE),
  pci_devices: p('object-array', BHYVE, BHYVE),
  qemu_extra_opts: p('string', KVM, KVM),
  qemu_opts: p('string', KVM, KVM),
  quota: p('integer', ALL, ALL),
  ram: p('integer', ALL, ALL),
  remove_customer_metadata: p('list', undefined, ALL),
  remove_disks: p('list', undefined, HVM),
  remove_filesystems: p('list', undefined, ALL),
  remove_internal_metadata: p('list', undefined, ALL),
  remove_nics: p('list', undefined, ALL),
  remove_pci_devices: p('list', undefined, BHYVE),
  remove_routes: p('list', undefined, ALL),
  remove_tags: p('list', undefined, ALL),
  resolvers: p('list', ALL, ALL),
  restart_init: p('boolean', OS, OS),
  routes: p('flat-object', ALL),
  set_customer_metadata: p('flat-object', undefined, ALL),
  set_internal_metadata: p('flat-object', undefined, ALL),
  set_routes: p('flat-object', undefined, ALL),
  set_tags: p('flat-object', undefined, ALL),
  spice_opts: p('string', KVM, KVM),
  spice_password: p('string', KVM, KVM),
  spice_port: p('integer', KVM, KVM),
  tags: p('flat-object', ALL),
  tmpfs: p('integer', OS, OS, true),
  update_disks: p('object-array', undefined, HVM),
  update_filesystems: p('object-array', undefined, NOT_BHYVE),
  update_nics: p('object-array', undefined, ALL),
  update_pci_devices: p('object-array', undefined, BHYVE),
  uuid: p('uuid', ALL),
  vcpus: p('integer', HVM, HVM),
  virtio_txburst: p('integer', KVM, KVM),
  virtio_txtimer: p('integer', KVM, KVM),
  vga: p('string', KVM, KVM),
  vnc_password: p('string', HVM, HVM),
  vnc_port: p('integer', HVM, HVM),
  zfs_data_compression: p('string', OS, OS),
  zfs_data_recsize: p('integer', OS, OS),
  zfs_filesystem_limit: p('integer', ALL, ALL),
  zfs_io_priority: p('integer', ALL, ALL),
  zfs_root_compression: p('string', ALL, ALL),
  zfs_root_recsize: p('integer', ALL, ALL),
  zfs_snapshot_limit: p('integer', ALL, ALL),
  zfs_storage_pool_name: p('zpool', NOT_BHYVE),
  zlog_max_size: p('integer', OS, OS),
  zone_dataset_uuid: p('uuid', HVM),
  zonename: p('string', ALL),
  zpool: p('zpool', ALL),
};

/**
 * Payload-only keys: vmadm acts on them (or translates them) but `vmadm get` never shows
 * them, so they are not stored.
 */
export const PAYLOAD_ONLY: readonly string[] = [
  'add_pci_devices',
  'dataset_uuid',
  'delegate_dataset',
  'mdata_exec_timeout',
  'nowait',
  'zfs_storage_pool_name',
  'zone_dataset_uuid',
  'zonename',
];

/** A key of the objects inside nics, disks, filesystems or pci_devices. */
export interface SubPropSpec {
  type: PropType;
  /** Brands that may give it in a new element (`nics` on create, `add_nics` on update). */
  add?: Brands;
  /** Brands that may change it (`update_nics`). */
  update?: Brands;
}

function s(type: PropType, add?: Brands, update?: Brands): SubPropSpec {
  const spec: SubPropSpec = { type };
  if (add) spec.add = add;
  if (update) spec.update = update;
  return spec;
}

/** NIC keys (proptable `nics.*.*`). */
export const NIC_SUBPROPS: Readonly<Record<string, SubPropSpec>> = {
  allow_dhcp_spoofing: s('boolean', ALL, ALL),
  allow_ip_spoofing: s('boolean', ALL, ALL),
  allow_mac_spoofing: s('boolean', ALL, ALL),
  allow_restricted_traffic: s('boolean', ALL, ALL),
  allow_unfiltered_promisc: s('boolean', HVM, HVM),
  allowed_dhcp_cids: s('list', NOT_BHYVE, NOT_BHYVE),
  allowed_ips: s('list', ALL, ALL),
  blocked_outgoing_ports: s('list', ALL, ALL),
  dhcp_server: s('boolean', ALL, ALL),
  gateway: s('string', ALL, ALL),
  gateways: s('list', ALL, ALL),
  interface: s('string', ALL, ALL),
  ip: s('string', ALL, ALL),
  ips: s('list', ALL, ALL),
  mac: s('string', ALL, ALL),
  model: s('string', HVM, HVM),
  mtu: s('integer', ALL, ALL),
  netmask: s('string', ALL, ALL),
  network_uuid: s('uuid', ALL, ALL),
  nic_tag: s('string', ALL, ALL),
  primary: s('boolean', ALL, ALL),
  vlan_id: s('integer', ALL, ALL),
  vrrp_primary_ip: s('string', ALL, ALL),
  vrrp_vrid: s('integer', ALL, ALL),
};

/** Disk keys (proptable `disks.*.*`). */
export const DISK_SUBPROPS: Readonly<Record<string, SubPropSpec>> = {
  block_size: s('integer', HVM),
  boot: s('boolean', HVM, HVM),
  compression: s('string', HVM, HVM),
  dangerous_allow_shrink: s('boolean', undefined, BHYVE),
  guest_block_size: s('string', BHYVE, BHYVE),
  image_name: s('string', KVM, KVM),
  image_size: s('integer', HVM),
  image_uuid: s('uuid', HVM),
  media: s('string', HVM, HVM),
  model: s('string', HVM, HVM),
  nocreate: s('boolean', HVM),
  notrim: s('boolean', BHYVE, BHYVE),
  path: s('string', HVM, HVM),
  pci_slot: s('string', BHYVE, BHYVE),
  refreservation: s('integer', HVM, HVM),
  size: s('integer', HVM, BHYVE),
  uuid: s('uuid', BHYVE, BHYVE),
  zfs_filesystem: s('string'),
  zpool: s('string', HVM),
};

/** Filesystem keys (proptable `filesystems.*.*`); filesystems are keyed by `target`. */
export const FILESYSTEM_SUBPROPS: Readonly<Record<string, SubPropSpec>> = {
  options: s('list', OS, OS),
  raw: s('string', OS, OS),
  source: s('string', OS, OS),
  target: s('string', OS, OS),
  type: s('string', OS, OS),
};

/** PCI device keys (proptable `pci_devices.*.*`); devices are keyed by `path`. */
export const PCI_DEVICE_SUBPROPS: Readonly<Record<string, SubPropSpec>> = {
  path: s('string', BHYVE, BHYVE),
  pci_slot: s('string', BHYVE, BHYVE),
};

/** The element tables of the object-array properties, by their base name. */
export const ELEMENT_SUBPROPS: Readonly<Record<string, Readonly<Record<string, SubPropSpec>>>> = {
  nics: NIC_SUBPROPS,
  disks: DISK_SUBPROPS,
  filesystems: FILESYSTEM_SUBPROPS,
  pci_devices: PCI_DEVICE_SUBPROPS,
};

/** NIC key → type, for the NIC normaliser. */
export const NIC_PROPERTIES: Readonly<Record<string, PropType>> = Object.fromEntries(
  Object.entries(NIC_SUBPROPS).map(([k, v]) => [k, v.type]),
);

/** Disk key → type, for the disk normaliser. */
export const DISK_PROPERTIES: Readonly<Record<string, PropType>> = Object.fromEntries(
  Object.entries(DISK_SUBPROPS).map(([k, v]) => [k, v.type]),
);

/** NIC flags vmadm drops when false (false is their default). */
export const NIC_FLAGS: readonly string[] = [
  'allow_dhcp_spoofing',
  'allow_ip_spoofing',
  'allow_mac_spoofing',
  'allow_restricted_traffic',
  'allow_unfiltered_promisc',
  'primary',
];

/** Brand facts from proptable.js `brand_options.*.features` that the store uses. */
export const BRAND_FEATURES: Readonly<
  Record<string, { useTmpfs?: boolean; dockerinit?: string; interfacePrefix?: string; reprovision?: boolean }>
> = {
  bhyve: { reprovision: true },
  builder: { useTmpfs: true, reprovision: true },
  joyent: { useTmpfs: true, reprovision: true },
  'joyent-minimal': { useTmpfs: true, reprovision: true, dockerinit: '/usr/vm/sbin/dockerinit' },
  kvm: {},
  lx: { useTmpfs: true, reprovision: true, dockerinit: '/native/usr/vm/sbin/dockerinit', interfacePrefix: 'eth' },
};

export function brandTakes(brands: Brands | undefined, brand: string): boolean {
  return brands !== undefined && brands.includes(brand);
}
