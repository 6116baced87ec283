/**
 * ListPackages' search (sdc-papi lib/papi.js `listPkgs`, `searchFilter`, `esc`): the query
 * params that name schema attributes become an LDAP filter (a JSON array gives alternatives,
 * `owner_uuids` also matches packages without owners, `default` and `group` are searched
 * under their stored names); `filter` gives one outright. Paging and order are Moray's.
 */
import { PACKAGE_SCHEMA } from './schema.js';

export type QueryParams = Record<string, unknown>;

/** The filter for the params, or undefined when they select nothing (PAPI answers 404). */
export function searchFilter(params: QueryParams): string | undefined {
  let searchedOnIndex = false;
  const constraints: string[] = [];
  for (const key of Object.keys(params)) {
    const column = PACKAGE_SCHEMA[key];
    if (column === undefined) continue;
    searchedOnIndex = true;
    if (column.type === 'object') continue;
    let value: unknown = params[key];
    if (value === undefined) continue;
    if (typeof value === 'string') {
      try {
        value = JSON.parse(value);
      } catch {
        // not JSON: the text itself
      }
    }
    const name = key === 'group' ? '_group' : key === 'default' ? '_default' : key;
    let constraint: string | undefined;
    if (Array.isArray(value)) {
      const chunks = value.map((v) => `(${name}=${esc(v)})`);
      if (name === 'owner_uuids') chunks.push('(!(owner_uuids=*))');
      constraint = chunks.length > 1 ? `(|${chunks.join('')})` : chunks[0];
    } else if (name !== 'owner_uuids') {
      constraint = `(${name}=${esc(value)})`;
    } else {
      constraint = `(|(${name}=${esc(value)})(!(owner_uuids=*)))`;
    }
    if (constraint !== undefined) constraints.push(constraint);
  }
  if (constraints.length === 0 && !searchedOnIndex) constraints.push('(uuid=*)');
  return constraints.length > 1 ? `(&${constraints.join('')})` : constraints[0];
}

/** `esc`: LDIF escapes for a search value, `*` kept as a wildcard. */
function esc(val: unknown): string {
  if (typeof val !== 'string') return String(val);
  return val
    .replace(/\\(?![0-9a-f][0-9a-f]})/gi, '{\\5c}')
    .replace(/\//g, '{\\2f}')
    .replace(/\(/g, '{\\28}')
    .replace(/\)/g, '{\\29}')
    .replace(/=/g, '{\\3d}')
    .replace(/,/g, '{\\2c}');
}
