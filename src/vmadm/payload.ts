/**
 * What vmadm does with a create or update payload before it looks at values: the keys
 * node-vmadm strips (its own options), and the removal of every key the VM's brand does
 * not take for the action, top level and inside the elements of `nics`, `disks`,
 * `filesystems` and `pci_devices` (and their add_/update_ forms). SmartOS VM.js
 * normalizePayload logs each removed key as a warning and goes on; only bad values of the
 * keys that stay fail the request.
 */
import { ELEMENT_SUBPROPS, PROPERTIES, brandTakes } from './properties.js';
import { isPlainObject, jsonClone } from './validate.js';

export type PayloadAction = 'create' | 'update';

/** node-vmadm's own options, deleted from the payload before vmadm sees it (lib/index.sunos.js). */
const TRANSPORT_KEYS: Readonly<Record<PayloadAction, readonly string[]>> = {
  create: ['log', 'req_id', 'vmadmLogger'],
  update: ['log', 'req_id', 'vmadmLogger', 'include_dni'],
};

/**
 * A deep copy of the payload without node-vmadm's options (dropped before copying: a
 * `log` may be a logger that JSON cannot copy).
 */
export function copyWithoutTransportKeys(payload: Record<string, unknown>, action: PayloadAction): Record<string, unknown> {
  const shallow = { ...payload };
  for (const k of TRANSPORT_KEYS[action]) delete shallow[k];
  return jsonClone(shallow);
}

/**
 * Remove, in place, the keys `brand` does not take for `action`; returns their names the way
 * vmadm names them in its warnings (`vcpus`, `nics.*.belongs_to_uuid`).
 */
export function pruneForBrand(brand: string, action: PayloadAction, payload: Record<string, unknown>): string[] {
  const dropped: string[] = [];
  for (const [key, value] of Object.entries(payload)) {
    if (value === undefined) {
      delete payload[key];
      continue;
    }
    const spec = PROPERTIES[key];
    if (!spec || !brandTakes(spec[action], brand)) {
      dropped.push(key);
      delete payload[key];
      continue;
    }
    if (spec.type === 'object-array' && Array.isArray(value)) pruneElements(brand, key, value, dropped);
  }
  return dropped;
}

function pruneElements(brand: string, key: string, elements: unknown[], dropped: string[]): void {
  const update = key.startsWith('update_');
  const base = key.replace(/^(add_|update_)/, '');
  const table = ELEMENT_SUBPROPS[base];
  if (!table) return;
  for (const element of elements) {
    if (!isPlainObject(element)) continue; // a bad value: the normaliser refuses it
    for (const sub of Object.keys(element)) {
      const spec = table[sub];
      if (spec && brandTakes(update ? spec.update : spec.add, brand)) continue;
      const name = `${base}.*.${sub}`;
      if (!dropped.includes(name)) dropped.push(name);
      delete element[sub];
    }
  }
}
