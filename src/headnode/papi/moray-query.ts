/**
 * A search of PAPI's bucket as Moray runs one (moray lib/objects/common.js): the filter is
 * parsed, checked the way Moray builds its SQL WHERE clause from it (which parts an index
 * can serve; what it refuses), each record is matched as Moray re-checks rows locally (values
 * of indexed attributes typed as their index: numbers with parseInt, booleans by /^true$/i),
 * then sorted and paged (`LIMIT` 1000 unless told, `OFFSET`), with the count of every match.
 *
 * Moray's refusals, which PAPI relays:
 * - InvalidQuery: not a filter, or no part of it an index serves;
 * - NotIndexed: an AND with no indexed part, an OR with an unindexed branch, a substring of
 *   an array index: "<bucket> does not have indexes that support <filter>";
 * - Other: approx filters and ext filters other than caseIgnore(Substrings)Match.
 */
import { parseLdapFilter, type LdapFilter } from '../ldap-filter.js';
import type { MorayIndexType } from './schema.js';

export class MorayQueryError extends Error {
  constructor(
    readonly kind: 'InvalidQuery' | 'NotIndexed' | 'Other',
    message: string,
  ) {
    super(message);
    this.name = `${kind}Error`;
  }
}

type Indexes = Readonly<Record<string, MorayIndexType>>;
type Rec = Record<string, unknown>;

const INTERNAL_FIELDS = ['_etag', '_key', '_id', '_mtime', '_txn_snap'];
const DEFAULT_LIMIT = 1000;

export interface FindOptions {
  /** Sort attribute and order (ASC unless DESC). */
  sort: { attribute: string; order: 'ASC' | 'DESC' };
  limit?: number;
  offset?: number;
}

export interface FindResult {
  records: Rec[];
  /** Every match, before paging (Moray's `_count`). */
  total: number;
}

/** findObjects over `records` (each with its `_id`). */
export function findObjects(bucket: string, indexes: Indexes, text: string, records: Iterable<Rec>, opts: FindOptions): FindResult {
  const filter = compile(bucket, indexes, text);
  const matched = [...records].filter((r) => filter.matches(r));
  const { attribute, order } = opts.sort;
  if (indexes[attribute] === undefined && !INTERNAL_FIELDS.includes(attribute)) {
    throw new MorayQueryError('Other', `column "${attribute}" does not exist`);
  }
  matched.sort((a, b) => compareForSort(a[attribute], b[attribute], order) || Number(a._id) - Number(b._id));
  const offset = opts.offset ?? 0;
  const limit = opts.limit || DEFAULT_LIMIT;
  return { records: matched.slice(offset, offset + limit), total: matched.length };
}

/** Postgres' order: NULLs last ascending, first descending. */
function compareForSort(a: unknown, b: unknown, order: 'ASC' | 'DESC'): number {
  const dir = order === 'DESC' ? -1 : 1;
  const aNull = a === undefined || a === null;
  const bNull = b === undefined || b === null;
  if (aNull || bNull) return aNull === bNull ? 0 : (aNull ? 1 : -1) * dir;
  const x = Array.isArray(a) ? String(a) : a;
  const y = Array.isArray(b) ? String(b) : b;
  if (typeof x === 'number' && typeof y === 'number') return (x - y) * dir;
  return String(x) < String(y) ? -dir : String(x) > String(y) ? dir : 0;
}

/** Parse, decorate and check a filter as Moray does before it runs a query. */
export function compile(bucket: string, indexes: Indexes, text: string): LdapFilter {
  let filter: LdapFilter;
  try {
    filter = parseLdapFilter(text);
  } catch {
    throw new MorayQueryError('InvalidQuery', `${text} is an invalid filter`);
  }
  decorate(filter);
  if (!clauseOf(bucket, indexes, filter)) throw new MorayQueryError('InvalidQuery', `${morayString(filter)} is an invalid filter`);
  return filter;
}

/** decorateFilter: the case-ignoring ext filters get their matchers; others are refused. */
function decorate(f: LdapFilter): void {
  for (const c of f.filters ?? []) decorate(c);
  if (f.filter) decorate(f.filter);
  if (f.type === 'approx') throw new MorayQueryError('Other', 'approx filters not allowed');
  if (f.type !== 'ext') return;
  const attr = String(f.attribute);
  const value = String(f.value ?? '');
  if (f.rule === 'caseIgnoreMatch' || f.rule === '2.5.13.2') {
    f.matches = (target) => valuesOf(target, attr).some((v) => typeof v === 'string' && v.toLowerCase() === value.toLowerCase());
  } else if (f.rule === 'caseIgnoreSubstringsMatch' || f.rule === '2.5.13.4') {
    const inner = parseLdapFilter(`(${attr}=${value.toLowerCase()})`);
    f.initial = inner.initial;
    f.any = inner.any;
    f.final = inner.final;
    f.matches = (target) => valuesOf(target, attr).some((v) => typeof v === 'string' && inner.matches({ [attr]: v.toLowerCase() }));
  } else {
    throw new MorayQueryError('Other', 'unsupported ext filter');
  }
}

function valuesOf(target: Rec, attr: string): unknown[] {
  const key = Object.keys(target).find((k) => k === attr) ?? Object.keys(target).find((k) => k.toLowerCase() === attr.toLowerCase());
  const v = key === undefined ? undefined : target[key];
  return Array.isArray(v) ? v : [v];
}

/** Moray's `_value`: the filter value typed as the attribute's index; undefined = no index. */
function typedValue(indexes: Indexes, attr: string, val: unknown): { isArray: boolean; value: unknown } {
  const type = indexes[attr];
  if (type !== undefined) {
    if (type === 'boolean') return { isArray: false, value: /^true$/i.test(String(val)) };
    if (type === 'number') return { isArray: false, value: Number.parseInt(String(val), 10) };
    return { isArray: type === '[string]', value: val };
  }
  if (attr === '_id' || attr === '_txn_snap' || attr === '_mtime') return { isArray: false, value: Number.parseInt(String(val), 10) };
  if (attr === '_etag' || attr === '_key') return { isArray: false, value: val };
  return { isArray: false, value: undefined };
}

/**
 * compileQuery: whether an index serves this part of the filter (a WHERE clause), typing the
 * filter's values as it goes; throws Moray's NotIndexedError where it does.
 */
function clauseOf(bucket: string, indexes: Indexes, f: LdapFilter): boolean {
  const notIndexed = (part: LdapFilter): MorayQueryError =>
    new MorayQueryError('NotIndexed', `${bucket} does not have indexes that support ${morayString(part)}`);
  const attr = String(f.attribute ?? '');
  const append = (): boolean => {
    const v = typedValue(indexes, attr, f.value);
    if (v.value === undefined) return false;
    if (indexes[attr] === 'number' || indexes[attr] === 'boolean' || INTERNAL_FIELDS.includes(attr)) f.value = v.value;
    return true;
  };
  const substr = (): boolean => {
    let valid = true;
    for (const part of [f.initial, ...(f.any ?? []), f.final]) {
      if (!part) continue;
      const v = typedValue(indexes, attr, part);
      if (v.isArray) throw notIndexed(f);
      if (v.value === undefined) valid = false;
    }
    return valid;
  };
  switch (f.type) {
    case 'and': {
      const served = (f.filters ?? []).map((c) => clauseOf(bucket, indexes, c)).filter(Boolean);
      if (served.length === 0) throw notIndexed(f);
      return true;
    }
    case 'or':
      for (const c of f.filters ?? []) if (!clauseOf(bucket, indexes, c)) throw notIndexed(f);
      if ((f.filters ?? []).length === 0) throw notIndexed(f);
      return true;
    case 'not':
      return f.filter ? clauseOf(bucket, indexes, f.filter) : false;
    case 'substring':
      if (indexes[attr] === undefined && !/^_\w+/.test(attr)) return false;
      return substr();
    case 'present':
      return indexes[attr] !== undefined;
    case 'ext':
      return f.rule === 'caseIgnoreMatch' || f.rule === '2.5.13.2' ? append() : substr();
    default:
      return append();
  }
}

/** A filter written back as Moray's ldap-filter writes it, special characters escaped. */
export function morayString(f: LdapFilter): string {
  const esc = (v: unknown): string => String(v).replace(/[\\*()=]/g, (c) => `\\${c}`);
  switch (f.type) {
    case 'and':
    case 'or':
      return `(${f.type === 'and' ? '&' : '|'}${(f.filters ?? []).map(morayString).join('')})`;
    case 'not':
      return `(!${f.filter ? morayString(f.filter) : ''})`;
    case 'present':
      return `(${String(f.attribute)}=*)`;
    case 'substring':
      return `(${String(f.attribute)}=${esc(f.initial ?? '')}*${(f.any ?? []).map((a) => `${esc(a)}*`).join('')}${esc(f.final ?? '')})`;
    case 'ge':
      return `(${String(f.attribute)}>=${esc(f.value)})`;
    case 'le':
      return `(${String(f.attribute)}<=${esc(f.value)})`;
    case 'approx':
      return `(${String(f.attribute)}~=${esc(f.value)})`;
    case 'ext':
      return `(${String(f.attribute)}:${f.rule ? `${f.rule}:` : ''}=${String(f.value)})`;
    default:
      return `(${String(f.attribute)}=${esc(f.value)})`;
  }
}
