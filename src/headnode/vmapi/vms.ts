/**
 * VMAPI's VM store (the `vmapi_vms` Moray bucket, sdc-vmapi lib/apis/moray.js): each VM kept
 * in `translateVm(vm, false)` form without the fields VMAPI drops on every put
 * (`package_name`, `package_version`), and searched in the form VMAPI writes to Moray
 * (`_toMorayVm`: timestamps in ms, JSON fields as text, tags in the `-key=value-` format, the
 * internal_metadata search array). Role tags live beside the VMs (the `vmapi_vm_role_tags`
 * bucket).
 */
import { matchesFilter, type LdapFilter } from './ldap.js';
import { translateVm, type VmObject } from './translate.js';

type Obj = Record<string, unknown>;

/** Fields VMAPI removes from every VM it puts (DEPRECATED_VM_FIELDS). */
const DEPRECATED_FIELDS = ['package_name', 'package_version'];
const JSON_TEXT_FIELDS = ['nics', 'datasets', 'snapshots', 'internal_metadata', 'customer_metadata'];
const TIMESTAMPS = ['create_timestamp', 'last_modified', 'destroyed'];
/** internal_metadata values longer than this are not searchable (MAX_METADATA_VALUE_LENGTH). */
const MAX_SEARCHABLE_MD = 100;

/** `objectToTagFormat`: `{foo: 'bar', n: 1}` as `-foo=bar-n=%n{1}-`. */
export function tagFormat(tags: Obj): string {
  const esc = (s: string): string => s.replace(/-/g, '%2D').replace(/=/g, '%3D');
  const parts = Object.entries(tags).map(([k, v]) => {
    const val = typeof v === 'number' ? `%n{${v}}` : typeof v === 'boolean' ? `%b{${v}}` : String(v);
    return `${esc(k)}=${esc(val)}`;
  });
  return `-${parts.join('-')}-`;
}

/** `_toMorayVm`: the record Moray stores and filters. */
export function morayForm(vm: VmObject): Obj {
  const copy: Obj = structuredClone(vm);
  for (const k of TIMESTAMPS) {
    if (typeof copy[k] === 'string') copy[k] = new Date(copy[k] as string).getTime();
  }
  for (const k of DEPRECATED_FIELDS) delete copy[k];
  for (const k of JSON_TEXT_FIELDS) {
    if (copy[k] && typeof copy[k] === 'object') copy[k] = JSON.stringify(copy[k]);
  }
  if (copy.disks && typeof copy.disks === 'object') {
    const d0 = (copy.disks as Obj[])[0];
    if (d0 && d0.image_uuid !== undefined) copy.image_uuid = d0.image_uuid;
    copy.disks = JSON.stringify(copy.disks);
  }
  if (copy.tags && typeof copy.tags === 'object') {
    if (Object.keys(copy.tags).length > 0) copy.tags = tagFormat(copy.tags as Obj);
    else delete copy.tags;
  }
  const search: string[] = [];
  const im = vm.internal_metadata;
  if (im && typeof im === 'object') {
    for (const [k, v] of Object.entries(im as Obj)) {
      if (!['string', 'number', 'boolean'].includes(typeof v)) continue;
      const s = String(v);
      if (s.length <= MAX_SEARCHABLE_MD) search.push(`${k}=${s}`);
    }
  }
  copy.internal_metadata_search_array = search;
  copy.data_version = 1;
  return copy;
}

interface Entry {
  vm: VmObject;
  moray?: Obj;
}

export class VmRegistry {
  private readonly vms = new Map<string, Entry>();
  private readonly roleTags = new Map<string, string[]>();

  /** `onPut(old, new)` runs after every put (VMAPI publishes the change on its changefeed). */
  constructor(private readonly onPut: (oldVm: VmObject | undefined, newVm: VmObject) => void = () => {}) {}

  get size(): number {
    return this.vms.size;
  }

  /** The stored form (no defaults filled in). */
  getRaw(uuid: string): VmObject | undefined {
    return this.vms.get(uuid)?.vm;
  }

  /** The API form (`translateVm(vm, true)`). */
  get(uuid: string): VmObject | undefined {
    const e = this.vms.get(uuid);
    return e ? translateVm(e.vm, true) : undefined;
  }

  /** `moray.putVm`: store the normalised object. */
  put(vm: Obj & { uuid: string }): VmObject {
    const stored = translateVm(vm, false);
    for (const k of DEPRECATED_FIELDS) delete stored[k];
    const old = this.vms.get(stored.uuid)?.vm;
    this.vms.set(stored.uuid, { vm: stored });
    this.onPut(old, stored);
    return stored;
  }

  /** `markAsDestroyed`: provisioning VMs become failed, others destroyed with a timestamp. */
  markAsDestroyed(uuid: string, fallback?: Obj): VmObject | undefined {
    const cur = this.vms.get(uuid)?.vm ?? (fallback ? translateVm({ ...fallback, uuid }, false) : undefined);
    if (!cur) return undefined;
    const state = cur.state === 'provisioning' ? 'failed' : 'destroyed';
    const next: Obj & { uuid: string } = { ...cur, state, zone_state: state };
    if (state === 'destroyed') next.destroyed = new Date().toISOString();
    return this.put(next);
  }

  /** Stored VMs whose Moray record matches the filter. */
  search(filter: LdapFilter): { vm: VmObject; record: Obj }[] {
    const out: { vm: VmObject; record: Obj }[] = [];
    for (const e of this.vms.values()) {
      e.moray ??= morayForm(e.vm);
      if (matchesFilter(filter, e.moray)) out.push({ vm: e.vm, record: e.moray });
    }
    return out;
  }

  getRoleTags(uuid: string): string[] {
    return [...(this.roleTags.get(uuid) ?? [])];
  }

  putRoleTags(uuid: string, tags: string[]): void {
    this.roleTags.set(uuid, [...tags]);
  }

  deleteRoleTags(uuid: string): void {
    this.roleTags.delete(uuid);
  }

  /** `getRoleTags`: the VMs carrying any of the role tags. */
  vmsWithRoleTags(tags: string[]): string[] {
    return [...this.roleTags].filter(([, t]) => t.some((x) => tags.includes(x))).map(([uuid]) => uuid);
  }

  snapshot(): { vms: VmObject[]; role_tags: Record<string, string[]> } {
    return { vms: [...this.vms.values()].map((e) => e.vm), role_tags: Object.fromEntries(this.roleTags) };
  }

  restore(doc: unknown): void {
    this.vms.clear();
    this.roleTags.clear();
    const d = (doc ?? {}) as { vms?: unknown; role_tags?: unknown };
    if (Array.isArray(d.vms)) {
      for (const v of d.vms) {
        if (v && typeof v === 'object' && typeof (v as VmObject).uuid === 'string') {
          this.vms.set((v as VmObject).uuid, { vm: v as VmObject });
        }
      }
    }
    if (d.role_tags && typeof d.role_tags === 'object') {
      for (const [k, v] of Object.entries(d.role_tags as Obj)) {
        if (Array.isArray(v)) this.roleTags.set(k, v.filter((x): x is string => typeof x === 'string'));
      }
    }
  }
}
