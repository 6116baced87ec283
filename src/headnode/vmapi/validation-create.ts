/**
 * CreateVm's parameter checks and defaults (sdc-vmapi lib/common/validation.js
 * `validateCreateVmParams`, `validateBrandParams`, `validDisks`, `setDefaultValues`, and
 * lib/endpoints/vms.js `setBhyveDisksSizes`): every field validator in VM_FIELDS order, the
 * memory and disk rules, then the lookups (uuid and alias unique, server known to CNAPI,
 * the package in PAPI (packages.ts), image active in IMGAPI, LX image type and kernel
 * version), all reported together as
 * `409 ValidationFailed "Invalid VM parameters"`.
 */
import { randomUUID } from 'node:crypto';
import { HttpStatusError } from '../../common/http-client.js';
import { elem, validationFailed, validUUID, type ErrorElem } from './errors.js';
import { FIELD_VALIDATORS } from './field-validators.js';
import { runListVms } from './list-vms.js';
import { validatePackageValues } from './packages.js';
import type { Obj, Peers } from './peers.js';
import { relay } from './peers.js';
import type { P } from './validators.js';
import { VM_FIELDS } from './vm-fields.js';
import type { VmRegistry } from './vms.js';

const MIN_SWAP = 256;
const DEFAULT_QUOTA = 10;

/** `validDisks`. */
function validDisks(disks: P[], brand: unknown, errs: ErrorElem[]): void {
  const d0 = disks[0]!;
  if (d0.image_uuid === undefined) errs.push(elem.missing('disks.0.image_uuid'));
  else if (!validUUID(d0.image_uuid)) errs.push(elem.uuid('disks.0.image_uuid'));
  if (d0.size !== undefined && brand !== 'bhyve') errs.push(elem.invalid('disks.0.size', 'Not Allowed'));
  let remaining = false;
  disks.slice(1).forEach((disk, j) => {
    const i = j + 1;
    if (disk.image_uuid !== undefined) errs.push(elem.invalid(`disks.${i}.image_uuid`, 'Not Allowed'));
    if (disk.size === undefined) errs.push(elem.missing(`disks.${i}.size`));
    if (Number.isNaN(Number(disk.size))) {
      if (disk.size !== 'remaining') errs.push(elem.invalid(`disks.${i}.size`, 'Not Allowed'));
      else {
        if (remaining) errs.push(elem.invalid(`disks.${i}.size`, 'Cannot have more than one disk with size "remaining"'));
        remaining = true;
      }
    } else if (Number(disk.size) <= 0) errs.push(elem.invalid(`disks.${i}.size`, 'Disk size must be positive'));
  });
}

/** `validateBrandParams`. */
function validateBrandParams(p: P, errs: ErrorElem[]): void {
  if (p.brand === 'bhyve' || p.brand === 'kvm') {
    if (!p.disks) {
      errs.push(elem.missing('disks'));
      return;
    }
    if (typeof p.disks === 'string') {
      try {
        p.disks = JSON.parse(p.disks);
      } catch {
        errs.push(elem.invalid('disks', 'Malformed JSON'));
        return;
      }
    }
    if (!Array.isArray(p.disks) || p.disks.length < 1) errs.push(elem.invalid('disks'));
    else validDisks(p.disks as P[], p.brand, errs);
  } else if (p.image_uuid === undefined) errs.push(elem.missing('image_uuid'));
  else if (!validUUID(p.image_uuid)) errs.push(elem.uuid('image_uuid'));
}

export interface CreateDeps {
  vms: VmRegistry;
  peers: Peers;
  reqId: string;
}

/** `validateCreateVmParams`; on success `p.image` holds the image. Throws VMAPI's 409. */
export async function validateCreateParams(deps: CreateDeps, p: P): Promise<void> {
  let errs: ErrorElem[] = [];
  for (const f of VM_FIELDS) {
    if (f.internal) continue;
    errs = errs.concat(FIELD_VALIDATORS[f.name]!(p));
  }
  if (!p.billing_id) {
    if ((p.brand === 'bhyve' || p.brand === 'kvm') && !p.ram) errs.push(elem.missing('ram', `Is required for ${String(p.brand)}`));
    else if (!p.max_physical_memory && !p.ram) errs.push(elem.missing('ram'));
  }
  if (p.max_swap !== undefined && Number(p.max_swap) < MIN_SWAP) errs.push(elem.invalid('max_swap', `Cannot be less than ${MIN_SWAP}`));
  validateBrandParams(p, errs);

  const migrationTarget = Boolean(p.do_not_inventory && p.vm_migration_target);
  if (p.uuid && !migrationTarget) {
    // Moray's getVm refuses a bad uuid outright, ending the checks with its own error.
    if (!validUUID(p.uuid)) throw validationFailed('Invalid Parameters', [elem.uuid('uuid')]);
    if (deps.vms.getRaw(p.uuid)) errs.push(elem.duplicate('uuid'));
  }
  if (p.alias && !migrationTarget && aliasTaken(deps.vms, p.owner_uuid, p.alias)) {
    errs.push(elem.duplicate('alias', 'Already exists for this owner_uuid'));
  }
  if (p.server_uuid) {
    try {
      await deps.peers.getServer(String(p.server_uuid), deps.reqId);
    } catch (err) {
      if (!(err instanceof HttpStatusError && err.statusCode === 404)) throw relay(err);
      errs.push({ field: 'server_uuid', code: 'Invalid', message: peerMessage(err) });
    }
  } else p.server_uuid = '';
  if (p.billing_id && p.billing_id !== '00000000-0000-0000-0000-000000000000') {
    await validatePackageValues(deps.peers, p, errs, deps.reqId);
  }
  const disk0 = Array.isArray(p.disks) ? (p.disks[0] as P | undefined) : undefined;
  const imageUuid = p.image_uuid || disk0?.image_uuid;
  if (imageUuid) {
    const image = await deps.peers.getImage(String(imageUuid), deps.reqId).catch((err: unknown) => {
      if (err instanceof HttpStatusError && err.statusCode === 404) {
        errs.push({ field: 'image_uuid', code: 'Invalid', message: peerMessage(err) });
        return undefined;
      }
      throw relay(err);
    });
    if (image) {
      if (image.state !== 'active' || image.disabled !== false) {
        errs.push({ field: 'image_uuid', code: 'Invalid', message: 'Image must be active and not disabled' });
      } else p.image = image;
    }
  }
  if (p.image_uuid && p.brand === 'lx') validateLx(p, errs);
  if (errs.length) throw validationFailed('Invalid VM parameters', errs);
}

/** `validateUniqueAlias`: an active VM of the owner has it (a bad owner uuid ends the checks). */
export function aliasTaken(vms: VmRegistry, ownerUuid: unknown, alias: unknown): boolean {
  if (ownerUuid && !validUUID(ownerUuid)) {
    throw validationFailed('Invalid Parameters', [elem.uuid('owner_uuid')]);
  }
  return runListVms(vms, { owner_uuid: ownerUuid, alias, state: 'active', _update: true }).vms.length > 0;
}

function peerMessage(err: HttpStatusError): string {
  const body = err.body as { message?: unknown } | undefined;
  return typeof body?.message === 'string' ? body.message : err.message;
}

/** `validateLxBrand`. */
function validateLx(p: P, errs: ErrorElem[]): void {
  const image = (p.image ?? {}) as Obj;
  if (image.type === 'lxd') return;
  if (!['lx-dataset', 'docker'].includes(String(image.type))) {
    errs.push(elem.invalid('image_uuid', `Image type is "${String(image.type)}" must be one of: ["lx-dataset","docker"]`));
  }
  if (p.kernel_version === undefined) {
    const kv = (image.tags as Obj | undefined)?.kernel_version;
    if (kv) p.kernel_version = kv;
    else errs.push(elem.missing('kernel_version', 'Required for LX zones'));
  }
}

/** `setDefaultValues`: VMAPI's defaults where no package (`billing_id`) gave the values. */
export function setDefaultValues(p: P): void {
  if (p.uuid === undefined) p.uuid = randomUUID();
  if (p.ram) {
    p.ram = Number.parseInt(String(p.ram), 10);
    if (p.max_physical_memory === undefined) p.max_physical_memory = p.ram;
  }
  if (p.billing_id === undefined) {
    const ram = Number(p.ram);
    if (p.max_swap === undefined) p.max_swap = Math.max(ram * 2, MIN_SWAP) || MIN_SWAP;
    if (p.quota === undefined) p.quota = DEFAULT_QUOTA;
    if (p.cpu_shares === undefined) p.cpu_shares = ram > 128 ? Math.floor(ram / 128) : 1;
  }
  if (typeof p.post_back_urls === 'string') p.post_back_urls = p.post_back_urls.split(',');
  if (p.firewall_enabled === undefined) p.firewall_enabled = false;
  if ((p.brand === 'bhyve' || p.brand === 'kvm') && Array.isArray(p.disks) && p.disks[0]) {
    const image = (p.image ?? {}) as Obj;
    const d0 = p.disks[0] as P;
    d0.image_name = image.name;
    if (!d0.image_size) d0.image_size = image.image_size;
    if (p.brand === 'kvm') {
      for (const d of (p.disks as P[]).slice(1)) if (d.refreservation === undefined) d.refreservation = d.size;
    }
  }
}

/** `setBhyveDisksSizes`: `remaining` disk sizes against `flexible_disk_size`, the boot disk flagged. */
export function setBhyveDisksSizes(p: P): void {
  if (p.brand !== 'bhyve') return;
  if (p.quota) {
    const pkg = p.package as Obj | undefined;
    if (!p.flexible_disk_size && pkg?.flexible_disk) p.flexible_disk_size = p.quota;
    delete p.quota;
  }
  const disks = p.disks as P[];
  const err = [elem.invalid('disks')];
  const image = (p.image ?? {}) as Obj;
  if (p.flexible_disk_size) {
    let remainingIdx: number | undefined;
    let sum = 0;
    disks.forEach((disk, idx) => {
      if (remainingIdx !== undefined && disk.size === 'remaining') {
        throw validationFailed('Only one disk.size can be set to `remaining`', err);
      }
      let size: unknown;
      if (disk.size === 'remaining') {
        remainingIdx = idx;
        size = 0;
      } else size = disk.size;
      if (size === undefined && disk.image_uuid) {
        if (idx !== 0) throw validationFailed('disk.size must be set if disk is not the boot disk', err);
        size = image.image_size;
      }
      sum += Number(size);
    });
    if (remainingIdx !== undefined) {
      const remaining = Number(p.flexible_disk_size) - sum;
      if ((remainingIdx === 0 && Number(image.image_size) > remaining) || remaining <= 0) {
        throw validationFailed('The size of the disks must not be greater than the package quota', err);
      }
      disks[remainingIdx]!.size = remaining;
    }
  }
  disks[0]!.boot = true;
}
