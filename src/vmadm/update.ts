/**
 * `vmadm update`: every documented key (simple properties, set_/remove_ of metadata, tags
 * and routes, add_/update_/remove_nics, add_/update_/remove_disks), with vmadm's memory
 * rules. Keys that are unknown, read-only or not for this brand are refused with an error
 * naming the key; the dummy backend dropped most keys silently.
 */
import { applyDiskUpdate } from './disks.js';
import { invalidProperty, invalidValue } from './errors.js';
import { resolveMemory } from './memory.js';
import { pickMemory } from './create.js';
import { applyNicUpdate } from './nics.js';
import { ENVELOPE_KEYS, NIC_PROPERTIES, PROPERTIES, READ_ONLY_FIELDS, UPDATE_ACTIONS, brandIn } from './properties.js';
import type { Vm, VmNic, VmUpdatePayload } from './types.js';
import { checkValue, isPlainObject } from './validate.js';

const MEMORY_KEYS = ['ram', 'max_physical_memory', 'max_locked_memory', 'max_swap'];
const MAPS = ['customer_metadata', 'internal_metadata', 'tags', 'routes'] as const;

/** Every key `update` accepts (besides the envelope keys), for callers that filter. */
export const UPDATE_KEYS: readonly string[] = [
  ...Object.entries(PROPERTIES)
    .filter(([, s]) => s.update !== undefined)
    .map(([k]) => k),
  ...Object.keys(UPDATE_ACTIONS),
];

export interface UpdateContext {
  serverUuid: string;
}

/**
 * Apply `payload` to `stored` (a mutable copy of the stored VM, changed in place).
 * Throws before changing anything when a key or value is bad.
 */
export function applyUpdate(stored: Record<string, unknown>, payload: VmUpdatePayload, ctx: UpdateContext): void {
  if (!isPlainObject(payload)) throw invalidValue('payload', 'the update payload must be an object');
  const brand = String(stored.brand);
  const uuid = String(stored.uuid);
  const simple: Record<string, unknown> = {};
  const actions: Record<string, unknown> = {};

  for (const [key, raw] of Object.entries(payload)) {
    if (raw === undefined) continue;
    if (ENVELOPE_KEYS.includes(key)) {
      checkEnvelope(key, raw, uuid, ctx.serverUuid);
      continue;
    }
    const action = UPDATE_ACTIONS[key];
    if (action) {
      if (!brandIn(action.update, brand)) throw invalidProperty('update', key, `not supported for brand ${brand}`);
      actions[key] = checkValue(key, action.type, raw);
      continue;
    }
    const spec = PROPERTIES[key];
    if (spec?.update) {
      if (!brandIn(spec.update, brand)) throw invalidProperty('update', key, `not supported for brand ${brand}`);
      simple[key] = raw === null ? null : checkValue(key, spec.type, raw);
      continue;
    }
    if (READ_ONLY_FIELDS.includes(key) || spec) {
      throw invalidProperty('update', key, hintFor(key));
    }
    throw invalidProperty('update', key, 'unknown property');
  }

  // Compute everything that can fail first; assign afterwards.
  const next: Record<string, unknown> = {};
  const removed: string[] = [];
  for (const [key, value] of Object.entries(simple)) {
    if (MEMORY_KEYS.includes(key)) continue;
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

  if (MEMORY_KEYS.some((k) => k in simple)) {
    const req = pickMemory(simple);
    const mem = resolveMemory(brand, req, pickMemory(stored));
    for (const k of MEMORY_KEYS) {
      const v = mem[k as keyof typeof mem];
      if (v !== undefined) next[k] = v;
    }
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
    next.nics = applyNicUpdate(Array.isArray(stored.nics) ? (stored.nics as VmNic[]) : [], {
      add: actions.add_nics,
      update: actions.update_nics,
      remove: actions.remove_nics,
    });
  }
  if ('add_disks' in actions || 'update_disks' in actions || 'remove_disks' in actions) {
    next.disks = applyDiskUpdate(stored as Vm, {
      add: actions.add_disks,
      update: actions.update_disks,
      remove: actions.remove_disks,
    });
  }

  for (const k of removed) delete stored[k];
  Object.assign(stored, next);
}

function checkEnvelope(key: string, raw: unknown, uuid: string, serverUuid: string): void {
  const mustBe = key === 'uuid' || key === 'vm_uuid' ? uuid : key === 'server_uuid' ? serverUuid : undefined;
  if (mustBe !== undefined && (typeof raw !== 'string' || raw.toLowerCase() !== mustBe)) {
    throw invalidValue(key, `${key} ${JSON.stringify(raw)} does not match ${mustBe}`);
  }
}

function hintFor(key: string): string {
  if ((MAPS as readonly string[]).includes(key)) return `read-only on update; use set_${key} / remove_${key}`;
  if (key === 'nics') return 'read-only on update; use add_nics / update_nics / remove_nics';
  if (key === 'disks') return 'read-only on update; use add_disks / update_disks / remove_disks';
  if (key === 'state' || key === 'zone_state') return 'read-only; use start / stop / reboot';
  if (key === 'snapshots') return 'read-only; use the snapshot operations';
  return 'read-only';
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

/**
 * What real vmadm does with a payload that carries more than update keys: CNAPI forwards
 * VMAPI's whole job params (`task`, `jobid`, `vm_uuid`, NAPI fields inside `add_nics`, ...)
 * and SmartOS vmadm drops every key it cannot update, with a warning, before validating the
 * rest. cn-agent's machine_update calls this at its edge; `applyUpdate` itself stays strict
 * so a direct caller's typo is an error, not a silent drop.
 */
export function pruneUpdatePayload(payload: VmUpdatePayload): { payload: VmUpdatePayload; dropped: string[] } {
  const kept: VmUpdatePayload = {};
  const dropped: string[] = [];
  for (const [key, value] of Object.entries(payload)) {
    const known = ENVELOPE_KEYS.includes(key) || UPDATE_ACTIONS[key] !== undefined || PROPERTIES[key]?.update !== undefined;
    if (!known) {
      dropped.push(key);
      continue;
    }
    if ((key === 'add_nics' || key === 'update_nics') && Array.isArray(value)) {
      kept[key] = value.map((nic: unknown, i: number) => pruneNic(nic, `${key}.${i}`, dropped));
    } else {
      kept[key] = value;
    }
  }
  return { payload: kept, dropped };
}

function pruneNic(nic: unknown, field: string, dropped: string[]): unknown {
  if (!isPlainObject(nic)) return nic;
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(nic)) {
    if (NIC_PROPERTIES[key] === undefined) dropped.push(`${field}.${key}`);
    else kept[key] = value;
  }
  return kept;
}
