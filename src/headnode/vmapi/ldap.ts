/**
 * LDAP search filters over VMAPI's VM records, as Moray runs them on the `vmapi_vms` bucket
 * (sdc-vmapi lib/moray/moray-buckets-config.js): parsed with `ldap-filter` (the library
 * VMAPI and Moray use), values of indexed attributes compared as the index's type (numbers
 * as numbers, booleans as booleans, `[string]` indexes element by element), other
 * attributes as the raw strings the filter gives.
 */
import { parseLdapFilter, type LdapFilter } from '../ldap-filter.js';

export type { LdapFilter };

/** The indexes of VMAPI's `vmapi_vms` bucket and their types. */
export const VMS_INDEXES: Record<string, 'string' | 'number' | 'boolean' | '[string]'> = {
  uuid: 'string',
  owner_uuid: 'string',
  image_uuid: 'string',
  billing_id: 'string',
  server_uuid: 'string',
  package_name: 'string',
  package_version: 'string',
  tags: 'string',
  brand: 'string',
  state: 'string',
  alias: 'string',
  max_physical_memory: 'number',
  create_timestamp: 'number',
  docker: 'boolean',
  internal_metadata_search_array: '[string]',
  data_version: 'number',
};

/** Moray's InvalidQueryError, as VMAPI relays an error that is not a restify one. */
export class InvalidQueryError extends Error {
  constructor(filter: string) {
    super(`${filter} is an invalid filter`);
    this.name = 'InvalidQueryError';
  }
}

/** Parse a filter and type its values as Moray does for indexed attributes. */
export function compileFilter(text: string): LdapFilter {
  let f: LdapFilter;
  try {
    f = parseLdapFilter(text);
  } catch {
    throw new InvalidQueryError(text);
  }
  typeValues(f);
  return f;
}

function typeValues(f: LdapFilter): void {
  if (f.filters) for (const c of f.filters) typeValues(c);
  if (f.filter) typeValues(f.filter);
  if (f.attribute === undefined || typeof f.value !== 'string') return;
  const type = VMS_INDEXES[f.attribute];
  if (type === 'number') {
    const n = Number(f.value);
    if (!Number.isNaN(n)) f.value = n;
  } else if (type === 'boolean') {
    if (f.value === 'true' || f.value === 'false') f.value = f.value === 'true';
  }
}

/** Does the (Moray-form) record match the compiled filter? Attribute names are case-sensitive. */
export function matchesFilter(f: LdapFilter, record: Record<string, unknown>): boolean {
  return f.matches(record, true);
}
