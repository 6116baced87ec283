/**
 * `vmadm update`, as SmartOS VM.js does it: `docker: true` expanded, every key the brand
 * cannot update removed (unknown keys, read-only ones such as `state`, `nics`, `brand` or
 * `image_uuid`, and other brands' keys; the caller logs them as warnings), then the values
 * of the rest checked (a bad one fails the update and nothing is written) and applied:
 * simple properties, set_/remove_ of metadata, tags and routes, add_/update_/remove_ of
 * nics, disks, filesystems and pci_devices, with vmadm's memory rules (tmpfs and the shared
 * memory controls follow max_physical_memory).
 */
import { applyDiskUpdate } from './disks.js';
import { applyDockerDefaults } from './docker.js';
import { invalidValue } from './errors.js';
import { applyFilesystemUpdate, applyPciDeviceUpdate } from './filesystems.js';
import { memoryControls, resolveMemory } from './memory.js';
import { pickMemory } from './create.js';
import { applyNicUpdate } from './nics.js';
import { copyWithoutTransportKeys, pruneForBrand } from './payload.js';
import { BRAND_FEATURES, PROPERTIES } from './properties.js';
import type { Vm, VmNic, VmUpdatePayload } from './types.js';
import { checkValue, isPlainObject } from './validate.js';

const MEMORY_KEYS = ['ram', 'max_physical_memory', 'max_locked_memory', 'max_swap'];
const MAPS = ['customer_metadata', 'internal_metadata', 'tags', 'routes'] as const;

/** Every key `update` takes for some brand, for callers that want to know. */
export const UPDATE_KEYS: readonly string[] = Object.entries(PROPERTIES)
  .filter(([, s]) => s.update !== undefined)
  .map(([k]) => k);

export interface UpdateContext {
  serverUuid: string;
}

export interface UpdateResult {
  /** Keys removed because the VM's brand cannot update them. */
  dropped: string[];
  /** vmadm's other warnings (logged, the update goes on). */
  warnings: string[];
}

/**
 * Apply `payload` to `stored` (a mutable copy of the stored VM, changed in place).
 * Throws before changing anything when a value is bad.
 */
export function applyUpdate(stored: Record<string, unknown>, payload: VmUpdatePayload, _ctx: UpdateContext): UpdateResult {
  if (!isPlainObject(payload)) throw invalidValue('payload', 'the update payload must be an object');
  const brand = String(stored.brand);
  const p = copyWithoutTransportKeys(payload, 'update');
  applyDockerDefaults(p, brand, String(stored.uuid), stored);
  const dropped = pruneForBrand(brand, 'update', p);
  const warnings: string[] = [];

  const simple: Record<string, unknown> = {};
  const actions: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(p)) {
    const spec = PROPERTIES[key]!;
    if (/^(set|remove|add|update)_/.test(key)) actions[key] = checkValue(key, spec.type, raw);
    else simple[key] = raw === null ? null : checkValue(key, spec.type, raw);
  }

  // Compute everything that can fail first; assign afterwards.
  const next: Record<string, unknown> = {};
  const removed: string[] = [];
  for (const [key, value] of Object.entries(simple)) {
    if (MEMORY_KEYS.includes(key) || key === 'tmpfs' || key === 'pci_devices') continue;
    if (value === null) {
      // vmadm: unsetting quota sets it to 0; other properties are removed.
      if (key === 'quota') next.quota = 0;
      else removed.push(key);
    } else if (key === 'limit_priv' && Array.isArray(value)) {
      next.limit_priv = value.join(',');
    } else {
      next[key] = value;
    }
  }

  const physChanged = 'ram' in simple || 'max_physical_memory' in simple;
  if (MEMORY_KEYS.some((k) => k in simple)) {
    const mem = resolveMemory(brand, pickMemory(simple), pickMemory(stored));
    for (const k of MEMORY_KEYS) {
      const v = mem[k as keyof typeof mem];
      if (v !== undefined) next[k] = v;
    }
  }
  if (physChanged || typeof simple.tmpfs === 'number') {
    const controls = memoryControls(
      BRAND_FEATURES[brand]?.useTmpfs === true,
      physChanged ? (next.max_physical_memory as number | undefined) : undefined,
      typeof simple.tmpfs === 'number' ? simple.tmpfs : undefined,
      stored,
    );
    for (const [k, v] of Object.entries(controls)) if (k === 'tmpfs' || !(k in simple)) next[k] = v;
  } else if (simple.tmpfs === null) {
    removed.push('tmpfs');
  }

  for (const map of MAPS) {
    const set = actions[`set_${map}`] as Record<string, unknown> | undefined;
    const remove = actions[`remove_${map}`] as string[] | undefined;
    if (set === undefined && remove === undefined) continue;
    const cur = isPlainObject(stored[map]) ? { ...(stored[map] as Record<string, unknown>) } : {};
    if (set) {
      if (map === 'routes') checkRoutes(set);
      Object.assign(cur, set);
    }
    for (const k of remove ?? []) delete cur[String(k)];
    next[map] = cur;
  }

  if ('add_nics' in actions || 'update_nics' in actions || 'remove_nics' in actions) {
    next.nics = applyNicUpdate(
      Array.isArray(stored.nics) ? (stored.nics as VmNic[]) : [],
      { add: actions.add_nics, update: actions.update_nics, remove: actions.remove_nics },
      { brand, nicDriver: typeof stored.nic_driver === 'string' ? stored.nic_driver : undefined, warn: (m) => warnings.push(m) },
    );
  }
  if ('add_disks' in actions || 'update_disks' in actions || 'remove_disks' in actions) {
    next.disks = applyDiskUpdate(stored as Vm, {
      add: actions.add_disks,
      update: actions.update_disks,
      remove: actions.remove_disks,
    });
  }
  if ('add_filesystems' in actions || 'update_filesystems' in actions || 'remove_filesystems' in actions) {
    next.filesystems = applyFilesystemUpdate(listOf(stored.filesystems), {
      add: actions.add_filesystems,
      update: actions.update_filesystems,
      remove: actions.remove_filesystems,
    });
  }
  if ('pci_devices' in simple || 'add_pci_devices' in actions || 'update_pci_devices' in actions || 'remove_pci_devices' in actions) {
    next.pci_devices = applyPciDeviceUpdate('pci_devices' in simple ? [] : listOf(stored.pci_devices), {
      add: [...listOf(simple.pci_devices), ...listOf(actions.add_pci_devices)],
      update: actions.update_pci_devices,
      remove: actions.remove_pci_devices,
    });
  }

  for (const k of removed) delete stored[k];
  Object.assign(stored, next);
  return { dropped, warnings };
}

function listOf(v: unknown): Record<string, unknown>[] {
  return Array.isArray(v) ? (v.filter(isPlainObject) as Record<string, unknown>[]) : [];
}

const IP_OR_CIDR = /^[0-9a-fA-F:.]+(\/\d{1,3})?$/;
const ROUTE_GW = /^([0-9a-fA-F:.]+|nics\[\d+\]|macs\[[0-9a-fA-F:]+\])$/;

function checkRoutes(routes: Record<string, unknown>): void {
  for (const [dst, gw] of Object.entries(routes)) {
    if (!IP_OR_CIDR.test(dst)) throw invalidValue(`set_routes.${dst}`, `Invalid route destination: "${dst}"`);
    if (typeof gw !== 'string' || !ROUTE_GW.test(gw)) {
      throw invalidValue(`set_routes.${dst}`, `Invalid route gateway: "${String(gw)}"`);
    }
  }
}
