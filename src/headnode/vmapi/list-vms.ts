/**
 * ListVms' search (sdc-vmapi lib/apis/moray.js `_createSearch`, `listVms`, `countVms`): the raw
 * LDAP `query` (with `(ram` read as `(max_physical_memory`), the JSON `predicate` and the plain
 * parameters become one LDAP filter, run over the Moray form of every VM; results sorted by
 * the `sort` parameter and then uuid descending (the strict total order markers rely on),
 * paged by `offset`/`limit` or by `marker`, and counted before paging.
 */
import { compileFilter, VMS_INDEXES, type LdapFilter } from './ldap.js';
import { predicateToLdap } from './predicate.js';
import { translateVm, type VmObject } from './translate.js';
import type { VmRegistry } from './vms.js';

type Obj = Record<string, unknown>;

export const MAX_LIST_VMS_LIMIT = 1000;
const SELECT_ALL = '(uuid=*)';

/** `_addTagsFilter` for one `tag.<key>=<value>` parameter. */
function tagFilter(key: string, value: unknown): string {
  const tagKey = key.replace(/-/g, '%2D');
  const v = String(value);
  if (v === 'true' || v === 'false') return `(|(tags=*-${tagKey}=%b{${v}}-*)(tags=*-${tagKey}=${v}-*))`;
  if (!Number.isNaN(Number(v))) return `(|(tags=*-${tagKey}=%n{${v}}-*)(tags=*-${tagKey}=${v}-*))`;
  return `(tags=*-${tagKey}=${v.replace(/-/g, '%2D')}-*)`;
}

/** `_vmsListParams`: the filters of the plain parameters (already validated and typed). */
function paramFilters(p: Obj): string[] {
  const f: string[] = [];
  const eq = (k: string, v: unknown): string => `(${k}=${String(v)})`;
  if (p.uuid) f.push(eq('uuid', p.uuid));
  else if (Array.isArray(p.uuids)) f.push(`(|${p.uuids.map((u) => eq('uuid', u)).join('')})`);
  for (const k of ['owner_uuid', 'image_uuid', 'server_uuid', 'billing_id', 'package_name', 'package_version', 'brand']) {
    if (p[k]) f.push(eq(k, p[k]));
  }
  if (typeof p.docker === 'boolean') f.push(p.docker ? '(docker=true)' : '(!(docker=true))');
  if (p.alias) f.push(p._update ? eq('alias', p.alias) : eq('alias', `${String(p.alias)}*`));
  if (p.ram || p.max_physical_memory) f.push(eq('max_physical_memory', p.ram || p.max_physical_memory));
  if (p.state) f.push(p.state === 'active' ? '(&(!(state=destroyed))(!(state=failed)))' : eq('state', p.state));
  if (p.create_timestamp !== undefined) f.push(eq('create_timestamp', p.create_timestamp));
  for (const [k, v] of Object.entries(p)) {
    const m = /tag\.(.*)/.exec(k);
    if (m) f.push(tagFilter(m[1]!, v));
  }
  for (const [k, v] of Object.entries(p)) {
    if (k.startsWith('internal_metadata.')) f.push(`(internal_metadata_search_array=${k.slice(18)}=${String(v)})`);
  }
  return f;
}

/** `_createSearch`: the one filter of a ListVms request. */
export function searchFilter(p: Obj): string {
  const parts: string[] = [];
  if (p.query) parts.push(String(p.query).replace(/\(ram/g, '(max_physical_memory'));
  if (p.predicate) parts.push(predicateToLdap(JSON.parse(String(p.predicate))));
  parts.push(...paramFilters(p));
  if (parts.length === 0) return SELECT_ALL;
  if (parts.length === 1) return parts[0]!;
  return `(&${parts.join('')})`;
}

export interface SortOption {
  attribute: string;
  order: 'ASC' | 'DESC';
}

/** `_sortOptionsFromSortParam`: the sort, then uuid descending unless uuid is the sort. */
export function sortOptions(sort: unknown): SortOption[] {
  const out: SortOption[] = [];
  if (typeof sort === 'string' && sort) {
    const [prop, order] = sort.split('.');
    out.push({ attribute: prop === 'ram' ? 'max_physical_memory' : prop!, order: /^desc$/i.test(order ?? '') ? 'DESC' : 'ASC' });
  }
  if (!out.some((o) => o.attribute === 'uuid')) out.push({ attribute: 'uuid', order: 'DESC' });
  return out;
}

/** Moray's ORDER BY on typed columns: NULLs last ascending, first descending. */
function compareRecords(a: Obj, b: Obj, sort: SortOption[]): number {
  for (const { attribute, order } of sort) {
    const x = a[attribute];
    const y = b[attribute];
    let c: number;
    const nx = x === undefined || x === null;
    const ny = y === undefined || y === null;
    if (nx || ny) c = nx && ny ? 0 : nx ? 1 : -1;
    else if (VMS_INDEXES[attribute] === 'number') c = Number(x) - Number(y);
    else c = String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0;
    if (order === 'DESC') c = -c;
    if (c !== 0) return c;
  }
  return 0;
}

/** `_buildFiltersFromMarker`: each marker key bounds the results in its sort direction. */
function markerFilter(marker: Obj, sort: SortOption[]): string {
  const order = new Map(sort.map((s) => [s.attribute, s.order]));
  const esc = (s: string): string => s.replace(/[*()\\\0]/g, (c) => `\\${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return Object.entries(marker)
    .map(([k, v]) => `(${k}${(order.get(k) ?? 'DESC') === 'DESC' ? '<=' : '>='}${esc(String(v))})`)
    .join('');
}

/** countVms, then listVms: the page of VMs in API form and the total count. */
export function runListVms(registry: VmRegistry, p: Obj): { vms: VmObject[]; count: number } {
  const text = searchFilter(p);
  const filter: LdapFilter = compileFilter(text);
  const all = registry.search(filter);
  const count = all.length;
  const sort = sortOptions(p.sort);
  let rows = all;
  const marker = p.marker as Obj | undefined;
  if (marker) {
    const bounds = compileFilter(`(&${text}${markerFilter(marker, sort)})`);
    rows = registry.search(bounds);
  }
  rows.sort((a, b) => compareRecords(a.record, b.record, sort));
  const offset = typeof p.offset === 'number' ? p.offset : 0;
  let limit = typeof p.limit === 'number' ? p.limit : MAX_LIST_VMS_LIMIT;
  if (marker) limit += 1;
  const page = rows
    .slice(offset, offset + limit)
    .filter((r) => !(marker && marker.uuid !== undefined && marker.uuid === r.vm.uuid))
    .map((r) => translateVm(r.vm, true));
  return { vms: page, count };
}
