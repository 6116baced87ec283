/**
 * The keyed lists besides NICs and disks: `filesystems` of zones (keyed by `target`, the
 * mount point; docker volumes and host files) and `pci_devices` of bhyve VMs (keyed by
 * `path`). On update, vmadm removes the listed keys, replaces the changed fields of the
 * elements `update_*` names, and appends `add_*` (SmartOS VM.js buildAddRemoveList).
 */
import { invalidValue } from './errors.js';
import { FILESYSTEM_SUBPROPS, PCI_DEVICE_SUBPROPS, type SubPropSpec } from './properties.js';
import { checkValue, isPlainObject } from './validate.js';

type Element = Record<string, unknown>;

function normalizeElements(raw: unknown, field: string, table: Readonly<Record<string, SubPropSpec>>): Element[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw) || !raw.every(isPlainObject)) throw invalidValue(field, `${field} must be an array of objects`);
  return raw.map((el, i) => {
    const out: Element = {};
    for (const [k, v] of Object.entries(el)) {
      const spec = table[k];
      if (spec) out[k] = checkValue(`${field}.${i}.${k}`, spec.type, v);
    }
    return out;
  });
}

function requireKey(elements: Element[], field: string, key: string): void {
  elements.forEach((el, i) => {
    if (typeof el[key] !== 'string' || el[key] === '') throw invalidValue(`${field}.${i}.${key}`, `${key} is required`);
  });
}

export function createFilesystems(raw: unknown, field: string): Element[] {
  const fss = normalizeElements(raw, field, FILESYSTEM_SUBPROPS);
  requireKey(fss, field, 'target');
  return fss;
}

/** bhyve PCI passthrough devices: a /devices path and a pci_slot each (VM.js validatePCIDevice). */
export function createPciDevices(raw: unknown, field: string): Element[] {
  const devs = normalizeElements(raw, field, PCI_DEVICE_SUBPROPS);
  requireKey(devs, field, 'path');
  requireKey(devs, field, 'pci_slot');
  devs.forEach((d, i) => {
    if (!String(d.path).startsWith('/devices')) throw invalidValue(`${field}.${i}.path`, 'path must be under /devices');
  });
  return devs;
}

export interface KeyedUpdate {
  add?: unknown;
  update?: unknown;
  remove?: unknown;
}

function applyKeyed(
  current: readonly Element[],
  req: KeyedUpdate,
  plural: string,
  key: string,
  create: (raw: unknown, field: string) => Element[],
  table: Readonly<Record<string, SubPropSpec>>,
): Element[] {
  let out = current.map((el) => ({ ...el }));
  if (req.update !== undefined) {
    for (const upd of normalizeElements(req.update, `update_${plural}`, table)) {
      const target = out.find((el) => el[key] === upd[key]);
      if (target) Object.assign(target, upd);
    }
  }
  if (req.remove !== undefined) {
    const keys = (checkValue(`remove_${plural}`, 'list', req.remove) as unknown[]).map(String);
    out = out.filter((el) => !keys.includes(String(el[key])));
  }
  if (req.add !== undefined) out = out.concat(create(req.add, `add_${plural}`));
  return out;
}

export function applyFilesystemUpdate(current: readonly Element[], req: KeyedUpdate): Element[] {
  return applyKeyed(current, req, 'filesystems', 'target', createFilesystems, FILESYSTEM_SUBPROPS);
}

export function applyPciDeviceUpdate(current: readonly Element[], req: KeyedUpdate): Element[] {
  return applyKeyed(current, req, 'pci_devices', 'path', createPciDevices, PCI_DEVICE_SUBPROPS);
}
