/**
 * Disks of hardware VMs (bhyve, kvm) the way vmadm reports them: each disk is a zvol with
 * a path and zfs_filesystem derived from the zpool, VM uuid and disk index; media, model,
 * compression, block_size and refreservation get vmadm's defaults; the image disk takes
 * its size from the image. add_disks / update_disks (resize) / remove_disks follow
 * `vmadm update`; shrinking needs `dangerous_allow_shrink` like on a real CN.
 */
import type { Vm, VmDisk } from './types.js';
import { invalidProperty, invalidValue } from './errors.js';
import { DISK_PROPERTIES } from './properties.js';
import { checkValue, isPlainObject } from './validate.js';

const DEFAULT_BLOCK_SIZE = 8192;

interface DiskContext {
  uuid: string;
  brand: string;
  zpool: string;
  disk_driver?: string;
}

function diskDataset(ctx: DiskContext, index: number): string {
  // bhyve keeps its zvols under the VM's dataset; kvm next to it.
  return ctx.brand === 'bhyve' ? `${ctx.zpool}/${ctx.uuid}/disk${index}` : `${ctx.zpool}/${ctx.uuid}-disk${index}`;
}

function indexOfDisk(disk: VmDisk): number | undefined {
  const m = typeof disk.path === 'string' ? /disk(\d+)$/.exec(disk.path) : null;
  return m ? Number(m[1]) : undefined;
}

function normalizeDisk(raw: unknown, field: string, action: 'create' | 'update'): VmDisk {
  if (!isPlainObject(raw)) throw invalidValue(field, `${field} must be an object`);
  const disk: VmDisk = {};
  for (const [key, value] of Object.entries(raw)) {
    const type = DISK_PROPERTIES[key];
    if (type === undefined) throw invalidProperty(action, `${field}.${key}`, 'not a disk property');
    disk[key] = checkValue(`${field}.${key}`, type, value);
  }
  return disk;
}

function completeDisk(disk: VmDisk, index: number, ctx: DiskContext, field: string): VmDisk {
  const dataset = diskDataset(ctx, index);
  if (disk.image_uuid !== undefined) {
    if (disk.size === undefined) {
      if (disk.image_size === undefined) {
        throw invalidValue(`${field}.image_size`, 'a disk with image_uuid needs image_size or size');
      }
      disk.size = disk.image_size;
    }
  } else if (disk.size === undefined && disk.nocreate !== true) {
    throw invalidValue(`${field}.size`, 'disks without image_uuid need a size');
  }
  const out: VmDisk = {
    path: `/dev/zvol/rdsk/${dataset}`,
    boot: disk.boot ?? false,
    model: disk.model ?? ctx.disk_driver ?? 'virtio',
    media: disk.media ?? 'disk',
    ...disk,
    zfs_filesystem: dataset,
    zpool: ctx.zpool,
  };
  out.path = `/dev/zvol/rdsk/${dataset}`;
  out.compression ??= 'off';
  out.block_size ??= DEFAULT_BLOCK_SIZE;
  if (out.refreservation === undefined && typeof out.size === 'number') out.refreservation = out.size;
  return out;
}

export function createDisks(raw: unknown, ctx: DiskContext): VmDisk[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw) || !raw.every(isPlainObject)) throw invalidValue('disks', 'disks must be an array of objects');
  const disks = raw.map((d, i) => normalizeDisk(d, `disks.${i}`, 'create'));
  return disks.map((d, i) => completeDisk(d, i, ctx, `disks.${i}`));
}

export interface DiskUpdate {
  add?: unknown;
  update?: unknown;
  remove?: unknown;
}

export function applyDiskUpdate(vm: Vm, req: DiskUpdate): VmDisk[] {
  const ctx: DiskContext = {
    uuid: vm.uuid,
    brand: vm.brand,
    zpool: typeof vm.zpool === 'string' ? vm.zpool : 'zones',
    ...(typeof vm.disk_driver === 'string' ? { disk_driver: vm.disk_driver } : {}),
  };
  let disks = (vm.disks ?? []).map((d) => ({ ...d }));

  if (req.remove !== undefined) {
    const paths = checkValue('remove_disks', 'list', req.remove) as string[];
    for (const p of paths) {
      if (!disks.some((d) => d.path === p)) throw invalidValue('remove_disks', `VM has no disk with path ${p}`);
      disks = disks.filter((d) => d.path !== p);
    }
  }

  if (req.update !== undefined) {
    const updates = checkValue('update_disks', 'object-array', req.update) as unknown[];
    updates.forEach((raw, i) => {
      const field = `update_disks.${i}`;
      const upd = normalizeDisk(raw, field, 'update');
      const target = disks.find((d) => d.path === upd.path);
      if (!target) throw invalidValue(`${field}.path`, `VM has no disk with path ${String(upd.path)}`);
      for (const key of ['image_size', 'image_uuid', 'block_size', 'nocreate', 'zpool', 'zfs_filesystem']) {
        if (key in upd) throw invalidProperty('update', `${field}.${key}`, 'cannot be changed on an existing disk');
      }
      if (upd.size !== undefined) {
        if (vm.brand !== 'bhyve') throw invalidProperty('update', `${field}.size`, `disks of brand ${vm.brand} cannot be resized`);
        if (typeof target.size === 'number' && upd.size < target.size && upd.dangerous_allow_shrink !== true) {
          throw invalidValue(`${field}.size`, `cannot shrink disk from ${target.size} to ${upd.size} without dangerous_allow_shrink`);
        }
      }
      const { dangerous_allow_shrink: _ignored, ...changes } = upd;
      Object.assign(target, changes);
    });
  }

  if (req.add !== undefined) {
    const added = (checkValue('add_disks', 'object-array', req.add) as unknown[]).map((d, i) =>
      normalizeDisk(d, `add_disks.${i}`, 'update'),
    );
    let next = disks.reduce((max, d) => Math.max(max, (indexOfDisk(d) ?? -1) + 1), 0);
    for (const [i, d] of added.entries()) disks.push(completeDisk(d, next++, ctx, `add_disks.${i}`));
  }
  return disks;
}
