/**
 * VMAPI's parameter validation (sdc-vmapi lib/common/validation.js), for the subset this
 * VMAPI serves: ListVms' strict query validation, CreateVm's field validators and
 * defaults, UpdateVm's mutable fields and metadata diffs, and the error shape
 * `409 ValidationFailed {code, message, errors: [{field, code, message}]}`.
 */
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { MockcloudError, type FieldError } from '../../common/errors.js';
import { isUuid } from '../../common/uuid.js';
import type { ListFilter } from './vms.js';
import { evalPredicate } from './vms.js';

export const MAX_LIST_VMS_LIMIT = 1000;
export const VALID_VM_BRANDS = ['bhyve', 'joyent', 'joyent-minimal', 'kvm', 'lx'];
const VALID_LIST_STATES = ['running', 'stopped', 'active', 'destroyed'];
const ALIAS_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
const DNS_NAME_RE = /^[a-z0-9][a-z0-9-]{0,62}(?:\.[a-z0-9][a-z0-9-]{0,62})*$/i;
const RAM_RE = /^0$|^([1-9][0-9]*$)/;
const MIN_SWAP = 256;
const DEFAULT_QUOTA = 10;

export type P = Record<string, unknown>;

export function validationFailed(message: string, errs: FieldError[]): MockcloudError {
  return new MockcloudError('ValidationFailed', message, { errors: errs });
}

export const fieldErr = {
  missing: (field: string, message = 'Missing parameter'): FieldError => ({ field, code: 'MissingParameter', message }),
  invalid: (field: string, message = 'Invalid parameter'): FieldError => ({ field, code: 'Invalid', message }),
  uuid: (field = 'uuid', message = 'Invalid UUID'): FieldError => ({ field, code: 'Invalid', message }),
  duplicate: (field: string, message = 'Already exists'): FieldError => ({ field, code: 'Duplicate', message }),
};

type Validator = (p: P) => FieldError[];

function str(field: string, opts: { re?: RegExp; max?: number; required?: boolean } = {}): Validator {
  return (p) => {
    const v = p[field];
    if (v === undefined) return opts.required ? [fieldErr.missing(field)] : [];
    if (typeof v !== 'string') return [fieldErr.invalid(field, 'Not a valid string')];
    const errs: FieldError[] = [];
    if (opts.max !== undefined && v.length > opts.max) {
      errs.push(fieldErr.invalid(field, `String is longer than maximum of ${opts.max} characters`));
    }
    if (opts.re && !opts.re.test(v)) errs.push(fieldErr.invalid(field, `String does not match regexp: ${opts.re}`));
    return errs;
  };
}

function num(field: string, opts: { min?: number; max?: number; required?: boolean } = {}): Validator {
  return (p) => {
    const v = p[field];
    if (v === undefined) return opts.required ? [fieldErr.missing(field)] : [];
    const n = Number.parseInt(String(v), 10);
    const min = opts.min ?? 0;
    if (!(n >= min) || (opts.max !== undefined && !(n <= opts.max))) {
      const bounds = [`>= ${min}`, ...(opts.max !== undefined ? [`<= ${opts.max}`] : [])].join(' and ');
      return [fieldErr.invalid(field, `Not a valid number: number must be ${bounds}`)];
    }
    p[field] = Number(v);
    return [];
  };
}

function bool(field: string): Validator {
  return (p) => {
    const v = p[field];
    if (v === undefined || typeof v === 'boolean') return [];
    if (v === 'true' || v === 'false') {
      p[field] = v === 'true';
      return [];
    }
    return [fieldErr.invalid(field)];
  };
}

function uuid(field: string, required = false): Validator {
  return (p) => {
    const v = p[field];
    if (v === undefined) return required ? [fieldErr.missing(field)] : [];
    return isUuid(v) ? [] : [fieldErr.uuid(field)];
  };
}

function oneOf(field: string, list: string[], required = false): Validator {
  return (p) => {
    const v = p[field];
    if (v === undefined) return required ? [fieldErr.missing(field)] : [];
    return list.includes(v as string) ? [] : [fieldErr.invalid(field, `Must be one of: ${[...list].sort().join(', ')}`)];
  };
}

/** Metadata objects hold strings, numbers and booleans only; JSON text is parsed. */
function metadata(field: string): Validator {
  return (p) => {
    let v = p[field];
    if (v === undefined) return [];
    if (typeof v === 'string') {
      try {
        v = JSON.parse(v);
        p[field] = v;
      } catch {
        return [fieldErr.invalid(field, 'Malformed JSON')];
      }
    }
    if (!v || typeof v !== 'object' || Array.isArray(v)) return [fieldErr.invalid(field)];
    for (const [k, val] of Object.entries(v as P)) {
      if (!['string', 'number', 'boolean'].includes(typeof val)) return [fieldErr.invalid(`${field}.${k}`, 'Forbidden Data Type')];
    }
    return [];
  };
}

function arrayOf(field: string): Validator {
  return (p) => (p[field] !== undefined && !Array.isArray(p[field]) ? [fieldErr.invalid(field, 'Not an array')] : []);
}

// ---- ListVms

const VM_FIELD_NAMES = new Set([
  'alias', 'autoboot', 'billing_id', 'brand', 'cpu_cap', 'cpu_shares', 'cpu_type', 'create_timestamp',
  'customer_metadata', 'datasets', 'destroyed', 'disks', 'docker', 'firewall_enabled', 'image_uuid',
  'internal_metadata', 'last_modified', 'limit_priv', 'max_locked_memory', 'max_lwps', 'max_physical_memory',
  'max_swap', 'nics', 'owner_uuid', 'platform_buildstamp', 'quota', 'ram', 'resolvers', 'role_tags',
  'server_uuid', 'snapshots', 'state', 'tags', 'uuid', 'vcpus', 'zfs_filesystem', 'zfs_io_priority',
  'zone_state', 'zonepath', 'zpool', 'boot_timestamp', 'dns_domain', 'exit_status', 'exit_timestamp',
  'hostname', 'package_name', 'package_version', 'pid', 'tmpfs', 'free_space', 'flexible_disk_size',
]);

const LIST_VALIDATORS: Record<string, Validator> = {
  alias: str('alias', { re: ALIAS_RE }),
  billing_id: uuid('billing_id'),
  brand: oneOf('brand', VALID_VM_BRANDS),
  create_timestamp: (p) => {
    const v = p.create_timestamp;
    if (v === undefined) return [];
    const t = /^\d+$/.test(String(v)) ? Number(v) : Date.parse(String(v));
    if (Number.isNaN(t)) return [fieldErr.invalid('create_timestamp', `Invalid timestamp: ${String(v)}`)];
    p.create_timestamp = t;
    return [];
  },
  docker: bool('docker'),
  fields: (p) => {
    const v = p.fields;
    if (v === undefined) return [];
    if (typeof v !== 'string') return [fieldErr.invalid('fields')];
    const bad = v.split(',').filter((f) => f !== '*' && !VM_FIELD_NAMES.has(f));
    return bad.length ? [fieldErr.invalid('fields', `unknown VM fields: ${bad.join(', ')}`)] : [];
  },
  image_uuid: uuid('image_uuid'),
  internal_metadata: () => [],
  limit: num('limit', { min: 1, max: MAX_LIST_VMS_LIMIT }),
  offset: num('offset'),
  owner_uuid: uuid('owner_uuid'),
  package_name: str('package_name'),
  package_version: str('package_version'),
  predicate: (p) => {
    const v = p.predicate;
    if (!v) return [];
    let pred: unknown;
    try {
      pred = JSON.parse(String(v));
    } catch {
      return [fieldErr.invalid('predicate', 'Unable to parse predicate as JSON')];
    }
    if (!pred || typeof pred !== 'object' || Object.keys(pred).length === 0) {
      return [fieldErr.invalid('predicate', 'Empty predicate')];
    }
    try {
      evalPredicate(pred, {});
    } catch (e) {
      return [fieldErr.invalid('predicate', `Predicate syntax error: ${(e as Error).message}`)];
    }
    p.predicate = pred;
    return [];
  },
  ram: str('ram', { re: RAM_RE }),
  server_uuid: uuid('server_uuid'),
  sort: (p) => {
    const v = p.sort;
    if (v === undefined) return [];
    const [attr, order, ...rest] = String(v).split('.');
    if (!attr || rest.length || !VM_FIELD_NAMES.has(attr) || (order && !/^(asc|desc)$/i.test(order))) {
      return [fieldErr.invalid('sort')];
    }
    return [];
  },
  state: oneOf('state', VALID_LIST_STATES),
  tag: () => [],
  uuid: uuid('uuid'),
  uuids: (p) => {
    const v = p.uuids;
    if (v === undefined) return [];
    return String(v)
      .split(',')
      .every((u) => isUuid(u))
      ? []
      : [fieldErr.invalid('uuids')];
  },
};

/** Validate ListVms' query strictly and turn it into a filter plus paging. */
export function parseListParams(q: P): { filter: ListFilter; offset: number; limit: number; fields?: string[] } {
  const p: P = { ...q };
  const errs: FieldError[] = [];
  for (const name of Object.keys(p)) {
    const base = name.includes('.') ? name.slice(0, name.indexOf('.')) : name;
    if (!LIST_VALIDATORS[base] || (name.includes('.') && !['tag', 'internal_metadata'].includes(base))) {
      errs.push(fieldErr.invalid(name));
    }
  }
  for (const v of Object.values(LIST_VALIDATORS)) errs.push(...v(p));
  if (errs.length) throw validationFailed('Invalid Parameters', errs);

  const filter: ListFilter = {};
  const copy = ['uuid', 'owner_uuid', 'server_uuid', 'image_uuid', 'billing_id', 'brand', 'alias', 'state', 'package_name', 'package_version'] as const;
  for (const k of copy) if (typeof p[k] === 'string') (filter as Record<string, unknown>)[k] = p[k];
  if (typeof p.uuids === 'string') filter.uuids = p.uuids.split(',');
  if (typeof p.ram === 'string') filter.ram = Number(p.ram);
  if (typeof p.docker === 'boolean') filter.docker = p.docker;
  if (typeof p.create_timestamp === 'number') filter.create_timestamp = p.create_timestamp;
  if (p.predicate !== undefined && p.predicate !== '') filter.predicate = p.predicate;
  for (const [k, v] of Object.entries(p)) {
    if (k.startsWith('tag.')) (filter.tags ??= {})[k.slice(4)] = v;
    if (k.startsWith('internal_metadata.')) (filter.internal_metadata ??= {})[k.slice(18)] = String(v);
  }
  if (typeof p.sort === 'string') {
    const [attr, order] = p.sort.split('.');
    filter.sort = { attribute: attr === 'ram' ? 'max_physical_memory' : attr!, order: /^desc$/i.test(order ?? '') ? 'DESC' : 'ASC' };
  }
  return {
    filter,
    offset: typeof p.offset === 'number' ? p.offset : 0,
    limit: typeof p.limit === 'number' ? p.limit : MAX_LIST_VMS_LIMIT,
    fields: typeof p.fields === 'string' ? p.fields.split(',') : undefined,
  };
}

// ---- CreateVm

/** `validNetworks`: strings or objects, normalised to `{ipv4_uuid|name, ipv4_count|ipv4_ips, primary?}`. */
export function validNetworks(input: unknown, isProvision: boolean): P[] {
  let arr: unknown[];
  if (Array.isArray(input)) arr = input;
  else if (typeof input === 'string') arr = input.split(',');
  else throw new Error('Malformed networks object');
  const out: P[] = [];
  let primaries = 0;
  for (const item of arr) {
    let obj: P;
    if (typeof item === 'string') obj = { ipv4_uuid: item, ipv4_count: 1 };
    else if (item && typeof item === 'object') {
      obj = { ...(item as P) };
      if (obj.primary === true || obj.primary === 'true') primaries++;
      if ('uuid' in obj && ('ipv4_uuid' in obj || 'ipv6_uuid' in obj)) {
        throw new Error('Network object uses both old uuid form and new ipvX_uuid form');
      }
      if ('uuid' in obj) {
        obj.ipv4_uuid = obj.uuid;
        delete obj.uuid;
        if ('ip' in obj) {
          obj.ipv4_ips = [obj.ip];
          delete obj.ip;
        } else obj.ipv4_count = 1;
      } else {
        if ('ipv6_uuid' in obj || 'ipv6_count' in obj || 'ipv6_ips' in obj) {
          throw new Error('IPv6 options are not currently supported');
        }
        if ('ipv4_count' in obj && 'ipv4_ips' in obj) throw new Error('cannot specify both an IP count and specific IPs');
        if ('ipv4_count' in obj) {
          if (typeof obj.ipv4_count !== 'number') throw new Error('ipv4_count must be a number');
          if (obj.ipv4_count !== 1) throw new Error('ipv4_count must be set to one');
        }
        if ('ipv4_ips' in obj) {
          const ips = obj.ipv4_ips;
          if (!Array.isArray(ips)) throw new Error('ipv4_ips must be an array');
          if (ips.length !== 1) throw new Error('ipv4_ips may only have a single entry');
          if (!ips.every((ip) => net.isIPv4(String(ip)))) throw new Error('ipv4_ips contains invalid IPv4 addresses');
        }
        if (!('ipv4_count' in obj) && !('ipv4_ips' in obj)) obj.ipv4_count = 1;
      }
    } else throw new Error('Malformed networks object');
    if (obj.ipv4_uuid !== undefined && !isUuid(obj.ipv4_uuid)) throw new Error(`Invalid uuid ${String(obj.ipv4_uuid)}`);
    if (obj.ipv4_uuid === undefined && !obj.name) throw new Error('Network object must specify a UUID or a name');
    out.push(obj);
  }
  if (primaries > 1) throw new Error('Cannot specify more than one primary network');
  if (isProvision && primaries === 0 && out[0]) out[0].primary = true;
  return out;
}

const CREATE_VALIDATORS: Validator[] = [
  str('alias', { re: ALIAS_RE, max: 189 }),
  bool('autoboot'),
  uuid('billing_id'),
  oneOf('brand', VALID_VM_BRANDS, true),
  num('cpu_cap'),
  num('cpu_shares'),
  str('cpu_type'),
  metadata('customer_metadata'),
  bool('delegate_dataset'),
  str('disk_driver'),
  str('dns_domain', { re: DNS_NAME_RE, max: 255 }),
  bool('docker'),
  bool('do_not_inventory'),
  bool('firewall_enabled'),
  arrayOf('firewall_rules'),
  str('fs_allowed'),
  str('hostname', { re: DNS_NAME_RE, max: 64 }),
  bool('indestructible_delegated'),
  bool('indestructible_zoneroot'),
  str('init_name'),
  metadata('internal_metadata'),
  str('kernel_version'),
  str('limit_priv'),
  bool('maintain_resolvers'),
  num('max_locked_memory'),
  num('max_lwps'),
  num('max_physical_memory'),
  num('max_swap'),
  num('mdata_exec_timeout', { min: 1 }),
  (p) => {
    if (!p.networks) return [fieldErr.missing('networks')];
    try {
      p.networks = validNetworks(p.networks, true);
      return [];
    } catch (e) {
      return [fieldErr.invalid('networks', (e as Error).message)];
    }
  },
  str('nic_driver'),
  uuid('owner_uuid', true),
  num('quota'),
  num('ram'),
  arrayOf('resolvers'),
  uuid('server_uuid'),
  metadata('tags'),
  num('tmpfs'),
  uuid('uuid'),
  num('vcpus', { min: 1 }),
  num('zfs_io_priority'),
];

/** CreateVm's synchronous checks (`validateCreateVmParams` before its async lookups). */
export function validateCreateParams(p: P): FieldError[] {
  const errs: FieldError[] = [];
  for (const v of CREATE_VALIDATORS) errs.push(...v(p));
  if (!p.billing_id) {
    if ((p.brand === 'bhyve' || p.brand === 'kvm') && !p.ram) {
      errs.push(fieldErr.missing('ram', `Is required for ${String(p.brand)}`));
    } else if (!p.max_physical_memory && !p.ram) errs.push(fieldErr.missing('ram'));
  }
  if (p.max_swap !== undefined && Number(p.max_swap) < MIN_SWAP) {
    errs.push(fieldErr.invalid('max_swap', `Cannot be less than ${MIN_SWAP}`));
  }
  if (p.brand === 'bhyve' || p.brand === 'kvm') {
    if (!p.disks) errs.push(fieldErr.missing('disks'));
    else if (!Array.isArray(p.disks) || p.disks.length < 1) errs.push(fieldErr.invalid('disks'));
    else {
      const d0 = p.disks[0] as P;
      if (!d0 || !d0.image_uuid) errs.push(fieldErr.missing('disks.0.image_uuid'));
      else if (!isUuid(d0.image_uuid)) errs.push(fieldErr.uuid('disks.0.image_uuid'));
      p.disks.forEach((d, i) => {
        if (i > 0 && (!d || (d as P).size === undefined)) errs.push(fieldErr.missing(`disks.${i}.size`));
      });
    }
  } else if (p.image_uuid === undefined) errs.push(fieldErr.missing('image_uuid'));
  else if (!isUuid(p.image_uuid)) errs.push(fieldErr.uuid('image_uuid'));
  return errs;
}

/** `setDefaultValues` for a provision without a package. */
export function setDefaultValues(p: P, image: P | undefined): void {
  if (p.uuid === undefined) p.uuid = randomUUID();
  if (p.ram) {
    p.ram = Number.parseInt(String(p.ram), 10);
    if (p.max_physical_memory === undefined) p.max_physical_memory = p.ram;
  }
  if (p.billing_id === undefined) {
    const ram = Number(p.ram) || 0;
    if (p.max_swap === undefined) p.max_swap = Math.max(ram * 2, MIN_SWAP);
    if (p.quota === undefined) p.quota = DEFAULT_QUOTA;
    if (p.cpu_shares === undefined) p.cpu_shares = ram > 128 ? Math.floor(ram / 128) : 1;
  }
  if (p.firewall_enabled === undefined) p.firewall_enabled = false;
  if ((p.brand === 'bhyve' || p.brand === 'kvm') && Array.isArray(p.disks) && p.disks[0] && image) {
    const d0 = p.disks[0] as P;
    d0.image_name = image.name;
    if (!d0.image_size) d0.image_size = image.image_size;
    if (p.brand === 'bhyve') d0.boot = true;
  }
}

// ---- UpdateVm (action=update)

const MUTABLE_VALIDATORS: Record<string, Validator> = {
  alias: str('alias', { re: ALIAS_RE, max: 189 }),
  autoboot: bool('autoboot'),
  billing_id: uuid('billing_id'),
  cpu_cap: num('cpu_cap'),
  cpu_shares: num('cpu_shares'),
  do_not_inventory: bool('do_not_inventory'),
  firewall_enabled: bool('firewall_enabled'),
  fs_allowed: str('fs_allowed'),
  indestructible_delegated: bool('indestructible_delegated'),
  indestructible_zoneroot: bool('indestructible_zoneroot'),
  limit_priv: str('limit_priv'),
  maintain_resolvers: bool('maintain_resolvers'),
  max_locked_memory: num('max_locked_memory'),
  max_lwps: num('max_lwps'),
  max_physical_memory: num('max_physical_memory'),
  max_swap: num('max_swap'),
  package_name: str('package_name'),
  package_version: str('package_version'),
  quota: num('quota'),
  ram: num('ram'),
  resolvers: arrayOf('resolvers'),
  tmpfs: num('tmpfs'),
  zfs_io_priority: num('zfs_io_priority'),
};

/**
 * `validateUpdateVmParams`: the mutable fields as given, and customer_metadata /
 * internal_metadata / tags turned into `set_<x>` plus `remove_<x>` for keys that go away.
 * Returns the payload with its `subtask` (resize, change_owner, rename or '').
 */
export function validateUpdateParams(vm: P, obj: P): P {
  const errs: FieldError[] = [];
  const params: P = {};
  for (const [name, v] of Object.entries(MUTABLE_VALIDATORS)) {
    const e = v(obj);
    errs.push(...e);
    if (obj[name] !== undefined && e.length === 0) params[name] = obj[name];
  }
  if (errs.length) throw validationFailed('Invalid VM update parameters', errs);
  if (obj.new_owner_uuid !== undefined) {
    if (isUuid(obj.new_owner_uuid)) params.new_owner_uuid = obj.new_owner_uuid;
    else errs.push(fieldErr.uuid('new_owner_uuid'));
  }
  for (const key of ['customer_metadata', 'internal_metadata', 'tags']) {
    if (!obj[key]) continue;
    let md = obj[key];
    if (typeof md === 'string') {
      try {
        md = JSON.parse(md);
      } catch {
        errs.push(fieldErr.invalid(key, 'Malformed JSON'));
        continue;
      }
    }
    if (!md || typeof md !== 'object' || Array.isArray(md)) {
      errs.push(fieldErr.invalid(key, 'Invalid data type'));
      continue;
    }
    const bad = Object.entries(md as P).find(([, v]) => !['string', 'number', 'boolean'].includes(typeof v));
    if (bad) {
      errs.push(fieldErr.invalid(`${key}.${bad[0]}`, 'Forbidden Data Type'));
      continue;
    }
    if (Object.keys(md as P).length === 0) {
      errs.push(fieldErr.invalid(key, `At least one ${key} key must be provided`));
      continue;
    }
    params[`set_${key}`] = md;
    const current = (vm[key] ?? {}) as P;
    const removals = Object.keys(current).filter((k) => !(md as P)[k]);
    if (removals.length) params[`remove_${key}`] = removals;
  }
  if (Array.isArray(obj.update_disks)) params.update_disks = obj.update_disks;
  else if (obj.update_disks !== undefined) errs.push(fieldErr.invalid('update_disks', 'Not an array'));
  if (Object.keys(params).length === 0) {
    throw validationFailed(errs.length ? 'Invalid VM update parameters' : 'No VM parameters provided', errs);
  }
  if (errs.length) throw validationFailed('Invalid VM update parameters', errs);
  if (vm.brand === 'bhyve' && params.max_physical_memory !== undefined) {
    params.ram = params.max_physical_memory;
    delete params.max_physical_memory;
  }
  params.subtask =
    params.billing_id !== undefined || params.ram !== undefined || params.max_physical_memory !== undefined
      ? 'resize'
      : params.new_owner_uuid
        ? 'change_owner'
        : params.alias
          ? 'rename'
          : '';
  if (params.subtask === 'resize' && vm.brand === 'kvm') {
    throw validationFailed('Invalid VM update parameters', [fieldErr.invalid('brand', `Cannot resize a ${String(vm.brand)} VM`)]);
  }
  return params;
}
