/**
 * VMAPI's VM store (the `vmapi_vms` bucket): objects kept in `translateVm(vm, false)`
 * form, listed with ListVms' filters, `state=active` meaning "neither destroyed nor
 * failed", default order uuid descending (sdc-vmapi lib/apis/moray.js).
 */
import { translateVm, type VmObject } from './translate.js';

export interface ListFilter {
  uuid?: string;
  uuids?: string[];
  owner_uuid?: string;
  server_uuid?: string;
  image_uuid?: string;
  billing_id?: string;
  brand?: string;
  alias?: string;
  /** Exact alias match (VMAPI's `_update` uniqueness check). */
  aliasExact?: boolean;
  ram?: number;
  state?: string;
  docker?: boolean;
  create_timestamp?: number;
  package_name?: string;
  package_version?: string;
  tags?: Record<string, unknown>;
  internal_metadata?: Record<string, string>;
  predicate?: unknown;
  sort?: { attribute: string; order: 'ASC' | 'DESC' };
}

export class VmRegistry {
  private readonly vms = new Map<string, VmObject>();

  get size(): number {
    return this.vms.size;
  }

  /** The stored form (no defaults filled in). */
  getRaw(uuid: string): VmObject | undefined {
    return this.vms.get(uuid);
  }

  /** The API form (`translateVm(vm, true)`). */
  get(uuid: string): VmObject | undefined {
    const vm = this.vms.get(uuid);
    return vm ? translateVm(vm, true) : undefined;
  }

  /** `moray.putVm`: store the normalised object. */
  put(vm: Record<string, unknown> & { uuid: string }): VmObject {
    const stored = translateVm(vm, false);
    this.vms.set(stored.uuid, stored);
    return stored;
  }

  /** `markAsDestroyed`: provisioning VMs become failed, others destroyed with a timestamp. */
  markAsDestroyed(uuid: string, fallback?: Record<string, unknown>): VmObject | undefined {
    const cur = this.vms.get(uuid) ?? (fallback ? translateVm({ ...fallback, uuid }, false) : undefined);
    if (!cur) return undefined;
    const state = cur.state === 'provisioning' ? 'failed' : 'destroyed';
    const next: Record<string, unknown> & { uuid: string } = { ...cur, state, zone_state: state };
    if (state === 'destroyed') next.destroyed = new Date().toISOString();
    return this.put(next);
  }

  snapshot(): VmObject[] {
    return [...this.vms.values()];
  }

  restore(list: unknown): void {
    this.vms.clear();
    if (!Array.isArray(list)) return;
    for (const v of list) {
      if (v && typeof v === 'object' && typeof (v as VmObject).uuid === 'string') this.vms.set((v as VmObject).uuid, v as VmObject);
    }
  }

  /** Matching VMs in API form, sorted; `count` is before paging (x-joyent-resource-count). */
  list(f: ListFilter, offset = 0, limit = 1000): { vms: VmObject[]; count: number } {
    const matched = [...this.vms.values()].filter((vm) => matches(vm, f));
    const { attribute, order } = f.sort ?? { attribute: 'uuid', order: 'DESC' };
    const dir = order === 'ASC' ? 1 : -1;
    matched.sort((a, b) => {
      const c = compare(a[attribute], b[attribute]) * dir;
      return c !== 0 ? c : compare(b.uuid, a.uuid);
    });
    return { vms: matched.slice(offset, offset + limit).map((v) => translateVm(v, true)), count: matched.length };
  }
}

function compare(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === undefined || a === null) return -1;
  if (b === undefined || b === null) return 1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a) < String(b) ? -1 : 1;
}

function matches(vm: VmObject, f: ListFilter): boolean {
  if (f.uuid && vm.uuid !== f.uuid) return false;
  if (f.uuids && !f.uuids.includes(vm.uuid)) return false;
  if (f.owner_uuid && vm.owner_uuid !== f.owner_uuid) return false;
  if (f.server_uuid && vm.server_uuid !== f.server_uuid) return false;
  if (f.image_uuid && vm.image_uuid !== f.image_uuid) return false;
  if (f.billing_id && vm.billing_id !== f.billing_id) return false;
  if (f.brand && vm.brand !== f.brand) return false;
  if (f.alias !== undefined) {
    const alias = typeof vm.alias === 'string' ? vm.alias : '';
    if (f.aliasExact ? alias !== f.alias : !alias.startsWith(f.alias)) return false;
  }
  if (f.ram !== undefined && Number(vm.max_physical_memory) !== f.ram) return false;
  if (f.state) {
    if (f.state === 'active') {
      if (vm.state === 'destroyed' || vm.state === 'failed') return false;
    } else if (vm.state !== f.state) return false;
  }
  if (f.docker !== undefined && Boolean(vm.docker) !== f.docker) return false;
  if (f.create_timestamp !== undefined && Date.parse(String(vm.create_timestamp)) !== f.create_timestamp) return false;
  if (f.package_name !== undefined && vm.package_name !== f.package_name) return false;
  if (f.package_version !== undefined && vm.package_version !== f.package_version) return false;
  if (f.tags) {
    const tags = (vm.tags ?? {}) as Record<string, unknown>;
    for (const [k, v] of Object.entries(f.tags)) if (String(tags[k]) !== String(v) || !(k in tags)) return false;
  }
  if (f.internal_metadata) {
    const im = (vm.internal_metadata ?? {}) as Record<string, unknown>;
    for (const [k, v] of Object.entries(f.internal_metadata)) if (String(im[k]) !== v) return false;
  }
  if (f.predicate !== undefined && !evalPredicate(f.predicate, vm)) return false;
  return true;
}

/** VMAPI's JSON predicates: `{and|or: [...]}`, `{eq|ne|lt|le|gt|ge: [field, value]}`. */
export function evalPredicate(p: unknown, vm: Record<string, unknown>): boolean {
  if (!p || typeof p !== 'object') throw new Error('predicate must be an object');
  const entries = Object.entries(p as Record<string, unknown>);
  if (entries.length !== 1) throw new Error('predicate must have exactly one operator');
  const [op, arg] = entries[0]!;
  if (op === 'and' || op === 'or') {
    if (!Array.isArray(arg)) throw new Error(`${op} takes an array`);
    return op === 'and' ? arg.every((x) => evalPredicate(x, vm)) : arg.some((x) => evalPredicate(x, vm));
  }
  if (!Array.isArray(arg) || arg.length !== 2 || typeof arg[0] !== 'string') {
    throw new Error(`${op} takes [field, value]`);
  }
  const [field, want] = arg as [string, unknown];
  const field2 = field === 'ram' ? 'max_physical_memory' : field;
  const have = field2 === 'tags' ? undefined : vm[field2];
  const eq = (): boolean => {
    if (typeof want === 'string' && want.includes('*')) {
      const re = new RegExp(`^${want.split('*').map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
      return re.test(String(have ?? ''));
    }
    return String(have) === String(want);
  };
  switch (op) {
    case 'eq':
      return eq();
    case 'ne':
      return !eq();
    case 'lt':
      return compare(have, want) < 0;
    case 'le':
      return compare(have, want) <= 0;
    case 'gt':
      return compare(have, want) > 0;
    case 'ge':
      return compare(have, want) >= 0;
    default:
      throw new Error(`unknown predicate operator ${op}`);
  }
}
