/**
 * `vmadm create`: validate a payload and build the stored VM with vmadm's defaults.
 * Unlike the dummy backend (which stored the payload as given), unknown keys and keys a
 * brand does not support are refused with an error naming them.
 */
import { isUuid, newUuid } from '../common/uuid.js';
import { invalidProperty, invalidValue } from './errors.js';
import { createDisks } from './disks.js';
import { resolveMemory, type MemoryFields } from './memory.js';
import { createNics } from './nics.js';
import { ALL_BRANDS, HVM_BRANDS, PROPERTIES, brandIn } from './properties.js';
import { checkValue, isPlainObject, jsonClone } from './validate.js';

/** Transport keys node-vmadm and cn-agent put on a create payload; never VM properties. */
const CREATE_ENVELOPE = ['log', 'req_id', 'sysinfo', 'vmadmLogger', 'include_dni', 'jobid'];

const HVM_LIMIT_PRIV = 'default,-file_link_any,-net_access,-proc_fork,-proc_info,-proc_session';

export interface CreateContext {
  serverUuid: string;
  now: Date;
}

function isEmptyObject(v: unknown): boolean {
  return isPlainObject(v) && Object.keys(v).length === 0;
}

/** Returns the stored form of the new VM. */
export function buildNewVm(payload: unknown, ctx: CreateContext): Record<string, unknown> {
  if (!isPlainObject(payload)) throw invalidValue('payload', 'the create payload must be an object');
  const p = jsonClone(payload);
  for (const k of CREATE_ENVELOPE) delete p[k];
  if (p.server_uuid !== undefined) {
    if (p.server_uuid !== ctx.serverUuid) throw invalidValue('server_uuid', `this is server ${ctx.serverUuid}`);
    delete p.server_uuid;
  }
  // cn-agent's dummy machine_create sends `{}` for "no NICs" / "no disks".
  if (isEmptyObject(p.nics)) p.nics = [];
  if (isEmptyObject(p.disks)) p.disks = [];

  const brand = p.brand === undefined ? 'joyent' : p.brand;
  if (typeof brand !== 'string' || !(ALL_BRANDS as readonly string[]).includes(brand)) {
    throw invalidValue('brand', `unsupported brand ${JSON.stringify(brand)}`);
  }
  let uuid: string;
  if (p.uuid === undefined) uuid = newUuid();
  else if (isUuid(p.uuid)) uuid = p.uuid.toLowerCase();
  else throw invalidValue('uuid', 'uuid must be a UUID');

  const vm: Record<string, unknown> = { uuid, brand };
  for (const [key, raw] of Object.entries(p)) {
    if (key === 'uuid' || key === 'brand' || raw === undefined) continue;
    const spec = PROPERTIES[key];
    if (!spec || !spec.create) throw invalidProperty('create', key, 'not a property vmadm accepts on create');
    if (!brandIn(spec.create, brand)) throw invalidProperty('create', key, `not supported for brand ${brand}`);
    if (key === 'nics' || key === 'disks') continue; // normalised below
    vm[key] = checkValue(key, spec.type, raw);
  }
  if (vm.zonename !== undefined && vm.zonename !== uuid) throw invalidValue('zonename', 'zonename must equal uuid');
  delete vm.zonename;

  const hvm = HVM_BRANDS.includes(brand);
  const now = ctx.now.toISOString();
  vm.autoboot ??= true;
  vm.state = vm.autoboot === true ? 'running' : 'stopped';
  if (vm.state === 'running') vm.boot_timestamp = now;
  // Like the dummy (and VMAPI's view of it): a stopped VM always has its exit data.
  else Object.assign(vm, { exit_status: 0, exit_timestamp: now });
  vm.create_timestamp = now;
  vm.zpool ??= 'zones';
  vm.zfs_filesystem = `${String(vm.zpool)}/${uuid}`;
  vm.zonepath = `/${String(vm.zfs_filesystem)}`;
  vm.cpu_shares = Math.min((vm.cpu_shares as number | undefined) ?? 100, 65535);
  vm.max_lwps ??= 2000;
  vm.zfs_io_priority ??= 100;
  vm.quota ??= brand === 'bhyve' ? 1 : 10;
  if (vm.limit_priv === undefined) vm.limit_priv = hvm ? HVM_LIMIT_PRIV : 'default';
  else if (Array.isArray(vm.limit_priv)) vm.limit_priv = vm.limit_priv.join(',');
  if (hvm) vm.vcpus ??= 1;
  vm.datasets ??= [];
  vm.customer_metadata ??= {};
  vm.internal_metadata ??= {};
  vm.tags ??= {};

  const mem = resolveMemory(brand, pickMemory(vm), undefined);
  for (const k of ['ram', 'max_physical_memory', 'max_locked_memory', 'max_swap'] as const) {
    delete vm[k];
    if (mem[k] !== undefined) vm[k] = mem[k];
  }

  vm.nics = createNics(p.nics);
  if (hvm) {
    vm.disks = createDisks(p.disks, {
      uuid,
      brand,
      zpool: String(vm.zpool),
      ...(typeof vm.disk_driver === 'string' ? { disk_driver: vm.disk_driver } : {}),
    });
  }
  return vm;
}

export function pickMemory(o: Record<string, unknown>): MemoryFields {
  const m: MemoryFields = {};
  for (const k of ['ram', 'max_physical_memory', 'max_locked_memory', 'max_swap'] as const) {
    if (typeof o[k] === 'number') m[k] = o[k];
  }
  return m;
}
