/**
 * `vmadm create`: build the stored VM from a payload the way SmartOS VM.js does it
 * (normalizePayload, applyZoneDefaults, fixPayloadMemory): deprecated image keys
 * translated, `docker: true` expanded, keys the brand does not take removed (the caller
 * logs them as warnings), values checked (a bad one fails the create), and vmadm's
 * defaults filled in. Unlike the dummy backend, which stored the payload as given.
 */
import { isUuid, newUuid } from '../common/uuid.js';
import { invalidValue } from './errors.js';
import { createDisks } from './disks.js';
import { applyDockerDefaults } from './docker.js';
import { createFilesystems, createPciDevices } from './filesystems.js';
import { memoryControls, resolveMemory, type MemoryFields } from './memory.js';
import { createNics } from './nics.js';
import { copyWithoutTransportKeys, pruneForBrand } from './payload.js';
import { ALL_BRANDS, BRAND_FEATURES, HVM_BRANDS, PAYLOAD_ONLY, PROPERTIES, brandTakes } from './properties.js';
import { checkValue, isPlainObject } from './validate.js';

const HVM_LIMIT_PRIV = 'default,-file_link_any,-net_access,-proc_fork,-proc_info,-proc_session';
/** vmadm's owner and billing id when the payload has none ("can be treated as admin"). */
export const ZERO_UUID = '00000000-0000-0000-0000-000000000000';
const DEFAULT_QUOTA = 10;
const DEFAULT_BHYVE_QUOTA = 1;
export const DEFAULT_RECSIZE = 131072;

/** Normalised by their own modules, after the simple keys. */
const ELEMENT_KEYS = ['nics', 'disks', 'filesystems', 'pci_devices', 'add_pci_devices'];

export interface CreateContext {
  serverUuid: string;
  now: Date;
  /** The zone's debug id (`zoneadm list -p`), unique on the server. */
  zonedid: number;
}

export interface BuiltVm {
  /** The stored form of the new VM. */
  vm: Record<string, unknown>;
  /** Keys removed because the brand does not take them on create. */
  dropped: string[];
}

function isEmptyObject(v: unknown): boolean {
  return isPlainObject(v) && Object.keys(v).length === 0;
}

/** dataset_uuid / zone_dataset_uuid (deprecated) become image_uuid; zfs_storage_pool_name zpool. */
function translateDeprecated(p: Record<string, unknown>, brand: string): void {
  for (const key of ['dataset_uuid', 'zone_dataset_uuid']) {
    if (p[key] === undefined || !brandTakes(PROPERTIES[key]?.create, brand)) continue;
    if (p.image_uuid === undefined) p.image_uuid = p[key];
    delete p[key];
  }
  if (p.zfs_storage_pool_name !== undefined && brandTakes(PROPERTIES.zfs_storage_pool_name?.create, brand)) {
    if (p.zpool === undefined) p.zpool = p.zfs_storage_pool_name;
    delete p.zfs_storage_pool_name;
  }
}

export function buildNewVm(payload: unknown, ctx: CreateContext): BuiltVm {
  if (!isPlainObject(payload)) throw invalidValue('payload', 'the create payload must be an object');
  const p = copyWithoutTransportKeys(payload, 'create');
  // cn-agent's dummy-era machine_create sends `{}` for "no NICs" / "no disks".
  if (isEmptyObject(p.nics)) p.nics = [];
  if (isEmptyObject(p.disks)) p.disks = [];

  const brand = p.brand === undefined ? 'joyent' : p.brand;
  if (typeof brand !== 'string' || !(ALL_BRANDS as readonly string[]).includes(brand)) {
    throw invalidValue('brand', `Unsupported brand: ${String(brand)}`);
  }
  p.brand = brand;
  let uuid: string;
  if (p.uuid === undefined) uuid = newUuid();
  else if (isUuid(p.uuid)) uuid = p.uuid.toLowerCase();
  else throw invalidValue('uuid', 'uuid must be a UUID');

  translateDeprecated(p, brand);
  applyDockerDefaults(p, brand, uuid, undefined);
  const dropped = pruneForBrand(brand, 'create', p);

  const vm: Record<string, unknown> = { uuid, brand };
  for (const [key, raw] of Object.entries(p)) {
    if (key === 'uuid' || key === 'brand' || ELEMENT_KEYS.includes(key)) continue;
    const value = checkValue(key, PROPERTIES[key]!.type, raw);
    if (value !== null) vm[key] = value;
  }
  if (vm.zonename !== undefined && vm.zonename !== uuid) throw invalidValue('zonename', 'zonename must equal uuid');
  const delegate = vm.delegate_dataset === true;
  for (const k of PAYLOAD_ONLY) delete vm[k];

  const hvm = HVM_BRANDS.includes(brand);
  const features = BRAND_FEATURES[brand] ?? {};
  const now = ctx.now.toISOString();
  vm.owner_uuid ??= ZERO_UUID;
  vm.billing_id ??= ZERO_UUID;
  vm.autoboot ??= true;
  vm.state = vm.autoboot === true ? 'running' : 'stopped';
  if (vm.state === 'running') vm.boot_timestamp = now;
  // Like the dummy (and VMAPI's view of it): a stopped VM always has its exit data.
  else Object.assign(vm, { exit_status: 0, exit_timestamp: now });
  vm.create_timestamp = now;
  vm.zpool ??= 'zones';
  vm.zfs_filesystem = `${String(vm.zpool)}/${uuid}`;
  vm.zonepath = `/${String(vm.zfs_filesystem)}`;
  if (brandTakes(PROPERTIES.dns_domain?.create, brand)) vm.dns_domain ??= 'local';
  vm.cpu_shares = Math.min((vm.cpu_shares as number | undefined) ?? 100, 65535);
  vm.zfs_io_priority ??= 100;
  vm.max_lwps ??= 2000;
  vm.quota ??= brand === 'bhyve' ? DEFAULT_BHYVE_QUOTA : DEFAULT_QUOTA;
  if (vm.limit_priv === undefined) vm.limit_priv = hvm ? HVM_LIMIT_PRIV : 'default';
  else if (Array.isArray(vm.limit_priv)) vm.limit_priv = vm.limit_priv.join(',');
  if (hvm) vm.vcpus ??= 1;

  const mem = resolveMemory(brand, pickMemory(vm), undefined);
  for (const k of ['ram', 'max_physical_memory', 'max_locked_memory', 'max_swap'] as const) {
    delete vm[k];
    if (mem[k] !== undefined) vm[k] = mem[k];
  }
  const controls = memoryControls(
    features.useTmpfs === true,
    mem.max_physical_memory,
    typeof vm.tmpfs === 'number' ? vm.tmpfs : undefined,
    undefined,
  );
  for (const [k, v] of Object.entries(controls)) if (k === 'tmpfs' || vm[k] === undefined) vm[k] = v;

  vm.firewall_enabled ??= false;
  // What smartos-live's vmload shows for every brand: the zone's `vm-version` attribute (VM.js
  // createZone writes 1), its config/routes.json ({} without one) and the recsize of its root
  // dataset (ZFS's default; proptable's zfs_root_recsize default).
  vm.v = 1;
  vm.routes ??= {};
  vm.zfs_root_recsize ??= DEFAULT_RECSIZE;
  vm.resolvers ??= [];
  vm.customer_metadata ??= {};
  vm.internal_metadata ??= {};
  vm.tags ??= {};
  if (delegate) vm.datasets = [`${String(vm.zfs_filesystem)}/data`];
  vm.snapshots = [];
  vm.zonedid = ctx.zonedid;

  vm.nics = createNics(p.nics, { brand, nicDriver: typeof vm.nic_driver === 'string' ? vm.nic_driver : undefined });
  if (hvm) {
    vm.disks = createDisks(p.disks, {
      uuid,
      brand,
      zpool: String(vm.zpool),
      ...(typeof vm.disk_driver === 'string' ? { disk_driver: vm.disk_driver } : {}),
    });
  }
  if (p.filesystems !== undefined) vm.filesystems = createFilesystems(p.filesystems, 'filesystems');
  if (p.pci_devices !== undefined || p.add_pci_devices !== undefined) {
    vm.pci_devices = [
      ...createPciDevices(p.pci_devices, 'pci_devices'),
      ...createPciDevices(p.add_pci_devices, 'add_pci_devices'),
    ];
  }
  return { vm, dropped };
}

export function pickMemory(o: Record<string, unknown>): MemoryFields {
  const m: MemoryFields = {};
  for (const k of ['ram', 'max_physical_memory', 'max_locked_memory', 'max_swap'] as const) {
    if (typeof o[k] === 'number') m[k] = o[k];
  }
  return m;
}
