/**
 * PAPI's package schema and the form packages take in its Moray bucket.
 *
 * The schema is the one a DC's PAPI is configured with (sdc-papi
 * sapi_manifests/papi/template, `cpu_cap` required as without IGNORE_CPU_CAP): each attribute's
 * type, and whether it is indexed, required or immutable. The bucket's indexes follow from it
 * as sdc-papi lib/backend.js `schema2MorayIndex` derives them, and a package is stored as its
 * `encode` writes it (empty arrays and hashes dropped, `default` and `group` under `_default`
 * and `_group` since Postgres reserves those names, doubles as strings, dates as ms) and read
 * back as its `decode` does.
 */

export type PapiType = 'uuid' | 'string' | 'boolean' | 'number' | 'double' | 'date' | 'object' | '[uuid]' | '[object]';

export interface PapiAttribute {
  type: PapiType;
  index?: boolean;
  unique?: boolean;
  required?: boolean;
  immutable?: boolean;
}

const attr = (type: PapiType, flags: Omit<PapiAttribute, 'type'> = {}): PapiAttribute => ({ type, ...flags });
const indexed = { index: true } as const;
const fixed = { index: true, required: true, immutable: true } as const;

/** In the template's order. */
export const PACKAGE_SCHEMA: Readonly<Record<string, PapiAttribute>> = Object.freeze({
  brand: attr('string', indexed),
  uuid: attr('uuid', { unique: true, required: true, immutable: true }),
  name: attr('string', fixed),
  version: attr('string', fixed),
  owner_uuids: attr('[uuid]', indexed),
  active: attr('boolean', { index: true, required: true }),
  vcpus: attr('number', { index: true, immutable: true }),
  cpu_cap: attr('number', fixed),
  default: attr('boolean', { index: false }),
  group: attr('string', indexed),
  description: attr('string', indexed),
  max_lwps: attr('number', fixed),
  max_physical_memory: attr('number', fixed),
  max_swap: attr('number', fixed),
  common_name: attr('string', indexed),
  quota: attr('number', fixed),
  networks: attr('[uuid]', indexed),
  os: attr('string', { index: true, immutable: true }),
  min_platform: attr('object', { index: false }),
  parent: attr('string', indexed),
  traits: attr('object', { index: false }),
  zfs_io_priority: attr('number', fixed),
  fss: attr('number', indexed),
  cpu_burst_ratio: attr('double', indexed),
  ram_ratio: attr('double', indexed),
  created_at: attr('date', indexed),
  updated_at: attr('date', indexed),
  billing_tag: attr('string', indexed),
  alloc_server_spread: attr('string'),
  flexible_disk: attr('boolean', indexed),
  disks: attr('[object]', { index: false }),
});

/** The bucket's name: Moray names it in its errors. */
export const PACKAGES_BUCKET = 'sdc_packages';

/** Names Postgres reserves: stored (and indexed) with a leading `_`. */
const DB_RESERVED_NAMES = ['default', 'group'];

export type MorayIndexType = 'string' | 'number' | 'boolean' | '[string]';

/** The bucket's indexes (schema2MorayIndex), by the column name Moray knows. */
export const PACKAGE_INDEXES: Readonly<Record<string, MorayIndexType>> = Object.freeze(
  Object.fromEntries(
    Object.entries(PACKAGE_SCHEMA)
      .filter(([, a]) => a.index || a.unique)
      .map(([name, a]): [string, MorayIndexType] => {
        const type: MorayIndexType =
          a.type === 'number' || a.type === 'date' ? 'number' : a.type === 'boolean' ? 'boolean' : a.type === '[uuid]' ? '[string]' : 'string';
        return [DB_RESERVED_NAMES.includes(name) ? `_${name}` : name, type];
      }),
  ),
);

export type Pkg = Record<string, unknown>;

/** A package as the bucket holds it (sdc-papi lib/backend.js `encode`). */
export function encodePackage(pkg: Pkg): Pkg {
  const out: Pkg = {};
  for (const [k, v] of Object.entries(pkg)) {
    if (v !== null && typeof v === 'object' && (Array.isArray(v) ? v.length === 0 : Object.keys(v).length === 0)) continue;
    out[DB_RESERVED_NAMES.includes(k) ? `_${k}` : k] = v;
  }
  for (const [name, a] of Object.entries(PACKAGE_SCHEMA)) {
    const v = out[name];
    if (!v) continue;
    if (a.type === 'double') out[name] = `${String(v)}`;
    if (a.type === 'date' && typeof v === 'string') out[name] = new Date(v).getTime();
  }
  return out;
}

/** A stored package as PAPI answers it (`decode`). */
export function decodePackage(stored: Pkg): Pkg {
  const out: Pkg = { ...stored };
  for (const name of DB_RESERVED_NAMES) {
    if (out[`_${name}`] !== undefined) {
      out[name] = out[`_${name}`];
      delete out[`_${name}`];
    }
  }
  for (const [name, a] of Object.entries(PACKAGE_SCHEMA)) {
    const v = out[name];
    if (!v) continue;
    if (a.type === 'double') out[name] = Number(v);
    if (a.type === 'date') out[name] = new Date(v as number).toISOString();
  }
  return out;
}
