/**
 * UpdateVm's parameter checks (sdc-vmapi lib/common/validation.js `validateUpdateVmParams`,
 * `createMetadataObject`, `validateMetadataNamespaces`, `validateNics`, `validateMacs`,
 * `validatePciSlot`) and the metadata payloads of lib/common/vm-common.js (`set_<x>` with
 * `remove_<x>` for keys that go away). Resizes are checked against the image's RAM limits
 * and CNAPI's `/capacity`, as VMAPI checks them.
 */
import { HttpStatusError } from '../../common/http-client.js';
import { elem, validationFailed, vmapiErrors, VmapiError, type ErrorElem } from './errors.js';
import { FIELD_VALIDATORS, validDeleteMetadata, validMetadata } from './field-validators.js';
import type { Obj, Peers } from './peers.js';
import { relay } from './peers.js';
import { validatePackageValues } from './packages.js';
import { aliasTaken } from './validation-create.js';
import type { P } from './validators.js';
import { VM_FIELDS } from './vm-fields.js';
import type { VmRegistry } from './vms.js';

const PCI_SLOT_RE = /^[0-9]{1,3}:[0-9]{1,2}:[0-7]$/;
const PCI_SLOT_DEV_RESERVED = [0, 6, 30, 31];

/** `addMetadata`: `{set_<type>: params}`; an empty object is refused. */
export function addMetadata(type: string, values: unknown): P {
  if (values === null || values === undefined) throw new TypeError('Cannot convert undefined or null to object');
  if (Object.keys(values as object).length === 0) throw new Error(`At least one ${type} key must be provided`);
  return { [`set_${type}`]: values };
}

/** `setMetadata`: replace the whole set; keys that are gone become `remove_<type>`. */
export function setMetadata(vm: Obj, type: string, values: unknown): P {
  const out = addMetadata(type, values);
  const set = out[`set_${type}`] as P;
  const removals = Object.keys((vm[type] ?? {}) as P).filter((k) => !set[k]);
  if (removals.length) out[`remove_${type}`] = removals;
  return out;
}

/** `createMetadataObject` for UpdateVm's customer_metadata / internal_metadata / tags. */
function createMetadataObject(vm: Obj, key: string, params: P, input: unknown): void {
  let md: unknown;
  if (typeof input === 'object') md = input;
  else if (typeof input === 'string') {
    try {
      md = JSON.parse(input);
    } catch {
      throw validationFailed('Invalid Parameters', [elem.invalid(key, 'Malformed JSON')]);
    }
  } else throw validationFailed('Invalid Parameters', [elem.invalid(key, 'Invalid data type')]);
  validMetadata(key, md, true);
  const upd = setMetadata(vm, key, md);
  if (upd[`set_${key}`]) params[`set_${key}`] = upd[`set_${key}`];
  const removals = upd[`remove_${key}`] as string[] | undefined;
  if (removals) {
    if (key === 'tags') for (const k of removals) validDeleteMetadata(key, k);
    params[`remove_${key}`] = removals;
  }
}

/** `validateMetadataNamespaces`: customer metadata may not use the VM's protected namespaces. */
function checkNamespaces(vm: Obj, params: P): void {
  const ns = vm.internal_metadata_namespaces as string[] | undefined;
  if (!ns) return;
  const invalid = Object.keys((params.set_customer_metadata ?? {}) as P).filter((k) => {
    const parts = k.split(':');
    return parts.length > 1 && ns.includes(parts[0]!);
  });
  if (invalid.length) {
    const formatted = ns.map((n) => `'${n}:*'`).join(',');
    throw validationFailed('Invalid Parameter', [
      elem.invalid('customer_metadata', `Invalid metadata keys: ${invalid.join(', ')} (protected namespaces: ${formatted})`),
    ]);
  }
}

export interface UpdateDeps {
  vms: VmRegistry;
  peers: Peers;
  reqId: string;
}

/** `validateUpdateVmParams`: the update payload with its `subtask`. Throws VMAPI's 409s. */
export async function validateUpdateParams(deps: UpdateDeps, vm: Obj, obj: P): Promise<P> {
  let errs: ErrorElem[] = [];
  const params: P = {};
  for (const f of VM_FIELDS) {
    if (!f.mutable || f.internal) continue;
    const e = FIELD_VALIDATORS[f.name]!(obj);
    errs = errs.concat(e);
    if (obj[f.name] !== undefined && e.length === 0) params[f.name] = obj[f.name];
  }
  if (errs.length) throw validationFailed('Invalid VM update parameters', errs);
  if (obj.new_owner_uuid) {
    if (typeof obj.new_owner_uuid === 'string' && /^[a-f0-9]{8}-([a-f0-9]{4}-){3}[a-f0-9]{12}$/.test(obj.new_owner_uuid)) {
      params.new_owner_uuid = obj.new_owner_uuid;
    } else errs.push(elem.uuid('new_owner_uuid'));
  }
  for (const key of ['customer_metadata', 'internal_metadata', 'tags']) {
    if (!obj[key]) continue;
    try {
      createMetadataObject(vm, key, params, obj[key]);
      if (key === 'customer_metadata') checkNamespaces(vm, params);
    } catch (e) {
      // VMAPI reads `e.body.errors[0]`; an error without `errors` (an empty metadata object)
      // throws inside its handler, which ends the VMAPI process.
      if (!(e instanceof VmapiError && e.elems?.[0])) {
        throw new VmapiError('InternalError', "Cannot read properties of undefined (reading '0')", { cause: e });
      }
      errs.push(e.elems[0]);
    }
  }
  if (obj.update_disks) {
    if (Array.isArray(obj.update_disks)) params.update_disks = obj.update_disks;
    else errs.push(elem.invalid('update_disks', 'Not an array'));
  }
  if (Object.keys(params).length === 0) {
    throw validationFailed(errs.length ? 'Invalid VM update parameters' : 'No VM parameters provided', errs);
  }
  params.subtask =
    params.billing_id !== undefined || params.ram !== undefined || params.max_physical_memory !== undefined
      ? 'resize'
      : params.new_owner_uuid
        ? 'change_owner'
        : params.alias
          ? 'rename'
          : '';

  if (params.alias && aliasTaken(deps.vms, vm.owner_uuid, params.alias)) {
    errs.push(elem.duplicate('alias', 'Already exists for this owner_uuid'));
  }
  if (vm.brand === 'bhyve' && params.max_physical_memory) {
    params.ram = params.max_physical_memory;
    delete params.max_physical_memory;
  }
  if (params.billing_id) {
    // VMAPI gives the package the VM's brand to check against.
    params.brand = vm.brand;
    await validatePackageValues(deps.peers, params, errs, deps.reqId);
  }
  if (params.subtask === 'resize') {
    if (vm.brand === 'kvm') errs.push(elem.invalid('brand', `Cannot resize a ${String(vm.brand)} VM`));
    else {
      await checkImageRam(deps, vm, params, errs);
      if (!(obj.force === true || obj.force === 'true')) await checkCapacity(deps, vm, params, errs);
    }
    if (vm.brand === 'bhyve') {
      checkBhyveFlexibleDisk(vm, params);
      checkBhyveStopped(vm, params);
    }
  }
  if (errs.length) throw validationFailed('Invalid VM update parameters', errs);
  return params;
}

/** `validateImageConstraints`: the new RAM within the image's min_ram/max_ram. */
async function checkImageRam(deps: UpdateDeps, vm: Obj, params: P, errs: ErrorElem[]): Promise<void> {
  const disks = vm.disks as Obj[] | undefined;
  const imageUuid = vm.brand === 'bhyve' || vm.brand === 'kvm' ? disks?.[0]?.image_uuid : vm.image_uuid;
  if (!imageUuid) {
    errs.push(elem.invalid('VM is missing an image_uuid'));
    return;
  }
  let image: Obj;
  try {
    // IMGAPI first; an image only left on the server (a deleted custom image) from CNAPI.
    image = await deps.peers.getImage(String(imageUuid), deps.reqId).catch((err: unknown) => {
      if (err instanceof HttpStatusError && err.statusCode === 404) {
        return deps.peers.getServerImage(String(vm.server_uuid), String(imageUuid), deps.reqId);
      }
      throw err;
    });
  } catch (err) {
    if (err instanceof HttpStatusError && err.statusCode === 404) {
      const msg = (err.body as { message?: string } | undefined)?.message ?? err.message;
      errs.push(elem.invalid('image_uuid', msg));
      return;
    }
    throw relay(err);
  }
  const reqs = (image.requirements ?? {}) as Obj;
  const newRam = Number(params.ram || params.max_physical_memory);
  const maxRam = reqs.max_ram as number | undefined;
  const minRam = reqs.min_ram as number | undefined;
  if (maxRam && newRam > maxRam) {
    errs.push(elem.invalid('ram', `Specified RAM (${newRam}) does not meet the maximum RAM requirement (${maxRam})`));
  } else if (minRam && newRam < minRam) {
    errs.push(elem.invalid('ram', `Specified RAM (${newRam}) does not meet the minimum RAM requirement (${minRam})`));
  }
}

/** `validateCapacity`: the server must have the RAM and disk the resize adds (CNAPI /capacity). */
async function checkCapacity(deps: UpdateDeps, vm: Obj, params: P, errs: ErrorElem[]): Promise<void> {
  const currentRam = Number(vm.ram || vm.max_physical_memory);
  const requiredRam = Number(params.ram || params.max_physical_memory);
  const neededRam = requiredRam - currentRam;
  let currentDisk = vm.quota as number | undefined;
  let requiredDisk = params.quota as number | undefined;
  if (vm.brand === 'bhyve' && params.flexible_disk_size) {
    requiredDisk = Number(params.flexible_disk_size) / 1024;
    if (vm.flexible_disk_size) currentDisk = Number(vm.flexible_disk_size) / 1024;
  }
  let cap: Obj;
  try {
    cap = await deps.peers.capacity([String(vm.server_uuid)], deps.reqId);
  } catch (err) {
    throw relay(err);
  }
  const c = ((cap.capacities ?? {}) as Record<string, Obj>)[String(vm.server_uuid)];
  if (!c || !('ram' in c) || !('disk' in c)) {
    errs.push(elem.capacity('server', 'Unable to determine server capacity'));
    return;
  }
  const sram = Number(c.ram);
  const sdisk = Math.floor(Number(c.disk) / 1024);
  if (currentRam < requiredRam && sram < neededRam) {
    errs.push(elem.capacity('ram', `Required additional RAM (${neededRam}) exceeds the server's available RAM (${sram})`));
  }
  if (!requiredDisk) return;
  if (currentDisk) {
    const neededDisk = requiredDisk - currentDisk;
    if (currentDisk < requiredDisk && sdisk < neededDisk) {
      errs.push(elem.capacity('quota', `Required additional disk (${neededDisk}) exceeds the server's available disk (${sdisk})`));
    }
  } else if (sdisk < requiredDisk) {
    errs.push(elem.capacity('quota', `Required disk (${requiredDisk}) exceeds the server's available disk (${sdisk})`));
  }
}

/** `validateBhyveFlexibleDiskPackage`: the package (`params.package`) or `flexible_disk_size`. */
function checkBhyveFlexibleDisk(vm: Obj, params: P): void {
  const pkg = params.package as Obj | undefined;
  const flex = (params.flexible_disk_size || (pkg && pkg.flexible_disk && pkg.quota)) as number | undefined;
  if (!vm.flexible_disk_size && !flex) {
    throw validationFailed('Cannot resize bhyve instance to a package that does not use flexible disk', [
      elem.invalid('flexible_disk_size'),
    ]);
  }
  if (pkg && !pkg.flexible_disk) {
    throw validationFailed('Cannot resize bhyve instance to a package that does not use flexible disk', [elem.invalid('billing_id')]);
  }
  const sizeOf = (list: unknown): number =>
    ((list ?? []) as Obj[]).reduce((acc, d) => acc + (Number(d.size) || 0), 0);
  const total = Math.ceil(sizeOf(vm.disks) + sizeOf(vm.snapshots));
  if (flex !== undefined && total > flex) {
    throw validationFailed(
      `Cannot resize bhyve instance, existing disk usage (${total}) exceeds the flexible disk size (${flex})`,
      [elem.invalid('flexible_disk_size')],
    );
  }
}

/** `validateBhyveStopped`: CPU or memory changes of a bhyve VM need it stopped. */
function checkBhyveStopped(vm: Obj, params: P): void {
  if (vm.state === 'stopped') return;
  const changed = ['cpu_cap', 'max_lwps', 'ram', 'max_swap', 'vcpus'].some(
    (f) => params[f] !== undefined && params[f] !== vm[f],
  );
  if (changed) throw vmapiErrors.notStopped('changing bhyve CPU or memory requires the instance to be stopped');
}

/** `validateNics` (update_nics): each NIC names its mac and only the properties that may change. */
export function validateNics(vm: Obj, params: P): void {
  try {
    if (!params.nics) throw validationFailed('Invalid VM update parameters', [elem.missing('nics')]);
    params.nics = validNics(vm, params.nics);
  } catch (e) {
    if (e instanceof Error && !(e as { elems?: unknown }).elems) {
      throw validationFailed('Invalid VM update parameters', [elem.invalid('nics', e.message)]);
    }
    throw e;
  }
}

function validNics(vm: Obj, input: unknown): P[] {
  let arr: unknown[];
  if (Array.isArray(input)) arr = input;
  else if (typeof input === 'string') arr = input.split(',');
  else throw new Error('Malformed NICs object');
  if (arr.length === 0) throw new Error('At least one NIC must be updated');
  const extra = ['allow_dhcp_spoofing', 'allow_ip_spoofing', 'allow_mac_spoofing', 'allow_restricted_traffic'];
  const allowed = [...extra, 'mac', 'interface', 'primary'];
  let primaries = 0;
  let interfaces = 0;
  const out = arr.map((o) => {
    const obj = (o ?? {}) as P;
    for (const k of Object.keys(obj)) if (!allowed.includes(k)) throw new Error(`'${k}' is not a valid property to update`);
    if (obj.mac === undefined) throw new Error('All NICs must have a `mac` attribute');
    const nic: P = { mac: obj.mac };
    if (obj.primary === true || obj.primary === 'true') {
      nic.primary = obj.primary;
      primaries++;
    }
    if (obj.interface !== undefined) {
      nic.interface = obj.interface;
      interfaces++;
    }
    for (const k of extra) if (Object.prototype.hasOwnProperty.call(obj, k)) nic[k] = obj[k];
    return nic;
  });
  if (primaries > 1) throw new Error('Cannot specify more than one primary NIC');
  if (interfaces > 0 && interfaces !== ((vm.nics ?? []) as unknown[]).length) {
    throw new Error('If reordering, must specify a new `interface` for every NIC that the VM currently has');
  }
  return out;
}

/** `validateMacs` (remove_nics): a list or a comma-separated string of MACs. */
export function validateMacs(params: P): void {
  const macs = params.macs;
  if (!macs) throw validationFailed('Invalid VM update parameters', [elem.missing('macs')]);
  const list = Array.isArray(macs) ? macs : typeof macs === 'string' ? macs.split(',') : undefined;
  if (!list || !list.every((m) => typeof m === 'string')) {
    throw validationFailed('Invalid VM update parameters', [elem.invalid('macs', 'Invalid MAC addresses object')]);
  }
  if (typeof macs === 'string') params.macs = list;
}

/** `validatePciSlot`. */
export function validatePciSlot(params: P): void {
  const fail = (e: ErrorElem): never => {
    throw validationFailed('Invalid VM update parameters', [e]);
  };
  const slot = params.pci_slot;
  if (!slot) fail(elem.missing('pci_slot'));
  if (!PCI_SLOT_RE.test(String(slot))) fail(elem.invalid('pci_slot', 'Not a valid value'));
  const [bus, dev, fn] = String(slot).split(':').map(Number) as [number, number, number];
  if (bus < 0 || bus > 255 || dev < 0 || dev > 31 || fn < 0 || fn > 7) fail(elem.invalid('pci_slot', 'Not a valid value'));
  if (PCI_SLOT_DEV_RESERVED.includes(dev)) fail(elem.invalid('pci_slot', 'Reserved device ID'));
}
