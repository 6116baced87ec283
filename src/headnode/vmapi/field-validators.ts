/**
 * The per-field validators CreateVm and UpdateVm share (sdc-vmapi lib/common/validation.js
 * `validators`), and the checks they are built from: metadata objects (only strings, numbers
 * and booleans; no `*_pw` customer metadata keys; Triton tags checked by `triton-tags`, the
 * library VMAPI uses), networks, locality hints, firewall rules and volumes.
 */
import net from 'node:net';
import { createRequire } from 'node:module';
import { elem, validationFailed, validUUID, VmapiError, type ErrorElem } from './errors.js';
import { arrayOf, bool, num, numberProblem, oneOf, str, uuid, type P, type Validator } from './validators.js';
import { VALID_VM_BRANDS } from './vm-fields.js';

const require = createRequire(import.meta.url);
const tritonTags = require('triton-tags') as {
  isTritonTag(key: string): boolean;
  validateTritonTag(key: string, val: unknown): string | null;
};

/**
 * VMAPI's alias pattern, written as sdc-vmapi writes it: its source is in the error message
 * ("String does not match regexp: ..."), which clients and VMAPI's tests compare.
 */
// eslint-disable-next-line no-useless-escape
export const ALIAS_RE = /^[a-zA-Z0-9][a-zA-Z0-9\_\.\-]*$/;
const DNS_NAME_RE = /^[a-z0-9][a-z0-9-]{0,62}(?:\.[a-z0-9][a-z0-9-]{0,62})*$/i;
const PW_SUFFIX = /^(.*)_pw$/;
const VOLUME_NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/;
/** Tags sdc-docker owns (DOCKER_TAG_DEFAULT_RE): not to be set or removed through VMAPI. */
export const DOCKER_TAG_RE = /^(?:sdc_docker$|docker:label:triton\.|docker:label:(?:com|io|org)\.docker(?:project)?\.)/;

/** `validMetadata`: throws VMAPI's 409 "Invalid Parameter" naming the first bad key. */
export function validMetadata(name: string, obj: unknown, preventDocker = false): void {
  const entries = obj !== null && typeof obj === 'object' ? Object.entries(obj as P) : [];
  for (const [key, val] of entries) {
    if (!['string', 'boolean', 'number'].includes(typeof val)) {
      throw validationFailed('Invalid Parameter', [elem.invalid(`${name}.${key}`, 'Forbidden Data Type')]);
    }
    if (name === 'customer_metadata' && PW_SUFFIX.test(key)) {
      throw validationFailed('Invalid Parameter', [elem.invalid(`${name}.${key}`, 'Forbidden Metadata Key')]);
    }
  }
  if (name === 'tags') {
    for (const [key, val] of entries) {
      let msg: string | null = null;
      if (tritonTags.isTritonTag(key)) msg = tritonTags.validateTritonTag(key, val);
      else if (preventDocker && DOCKER_TAG_RE.test(key)) msg = `Special tag "${key}" not supported`;
      if (msg) throw validationFailed('Invalid Parameter', [elem.invalid(name, msg)]);
    }
  }
}

/** `validDeleteMetadata`: sdc-docker's tags may not be removed. */
export function validDeleteMetadata(name: string, key: string): void {
  if (name === 'tags' && DOCKER_TAG_RE.test(key)) {
    throw validationFailed('Invalid Parameter', [elem.invalid(name, `Special tag "${key}" may not be deleted`)]);
  }
}

/** The first error element of a thrown VMAPI validation error, else `fallback`. */
export function firstElem(e: unknown, fallback: ErrorElem): ErrorElem {
  return e instanceof VmapiError && e.elems?.[0] ? e.elems[0] : fallback;
}

function metadata(field: string): Validator {
  return (p) => {
    if (p[field] === undefined) return [];
    try {
      if (typeof p[field] === 'string') p[field] = JSON.parse(p[field] as string);
      validMetadata(field, p[field]);
    } catch (e) {
      return [firstElem(e, elem.invalid(field))];
    }
    return [];
  };
}

/** `validNetworks`: normalise to `{ipv4_uuid|name, ipv4_count|ipv4_ips, primary?}`; throws with VMAPI's message. */
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
    else {
      obj = (item ?? {}) as P;
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
        if ('ipv6_uuid' in obj || 'ipv6_count' in obj || 'ipv6_ips' in obj) throw new Error('IPv6 options are not currently supported');
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
    }
    if (obj.ipv4_uuid && !validUUID(obj.ipv4_uuid)) throw new Error(`Invalid uuid ${String(obj.uuid)}`);
    if (!obj.ipv4_uuid && !obj.name) throw new Error('Network object must specify a UUID or a name');
    out.push(obj);
  }
  if (primaries > 1) throw new Error('Cannot specify more than one primary network');
  if (isProvision && primaries === 0) {
    if (!out[0]) throw new TypeError("Cannot set properties of undefined (setting 'primary')");
    out[0].primary = true;
  }
  return out;
}

/** `validLocality`. */
function validLocality(obj: unknown): void {
  if (!obj || typeof obj !== 'object') throw new Error('malformed locality object');
  for (const hintName of ['near', 'far']) {
    const hint = (obj as P)[hintName];
    if (!hint) continue;
    if (typeof hint !== 'string' && !Array.isArray(hint)) throw new Error('locality entry is neither string nor array');
    if (typeof hint === 'string' && !validUUID(hint)) throw new Error('locality contains malformed UUID');
    if (Array.isArray(hint) && !hint.every((h) => validUUID(h))) throw new Error('locality contains malformed UUID');
  }
}

/** `validateFirewallRule`. */
function validFirewallRule(rule: unknown): void {
  if (typeof rule !== 'object' || Array.isArray(rule) || rule === null) throw new Error('Not an array of objects');
  const r = rule as P;
  if (!validUUID(r.uuid)) throw new Error('Invalid rule: uuid must be a UUID');
  if (typeof r.rule !== 'string') throw new Error('Invalid rule: rule must be a string');
  if (r.global !== undefined) throw new Error('Invalid rule: cannot specify global rules');
  if (!validUUID(r.owner_uuid)) throw new Error('Invalid rule: owner_uuid must be a UUID');
  if (typeof r.enabled !== 'boolean') throw new Error('Invalid rule: enabled must be a boolean');
}

function validMountpoint(m: unknown): boolean {
  return typeof m === 'string' && m.length > 0 && m[0] === '/' && !m.includes('\0') && /[^/]/.test(m);
}

/** `createValidateVolumes`. */
function volumes(field: string): Validator {
  return (p) => {
    const vols = p[field];
    if (vols === undefined) return [];
    if (!Array.isArray(vols)) return [elem.invalid(field, `${field} must be an array of objects`)];
    const errs: ErrorElem[] = [];
    if (vols.length === 0) errs.push(elem.invalid(field, `${field} must be a non-empty array of objects`));
    for (const v of vols) {
      if (typeof v !== 'object' || v === null) {
        errs.push(elem.invalid(field, `${field} must be a non-empty array of objects`));
        continue;
      }
      const vol = v as P;
      const shown = JSON.stringify(vol);
      if (vol.mode !== undefined && !['ro', 'rw'].includes(vol.mode as string)) {
        errs.push(elem.invalid(field, `volume mode for volume ${shown} must be one of ro, rw`));
      }
      if (typeof vol.name !== 'string' || !VOLUME_NAME_RE.test(vol.name)) {
        errs.push(elem.invalid(field, `Invalid volume name for volume ${shown}`));
      }
      if (!validMountpoint(vol.mountpoint)) errs.push(elem.invalid(field, `Invalid volume mount point for volume ${shown}`));
    }
    return errs;
  };
}

/** VMAPI's `validators` table, keyed by VM field name. */
export const FIELD_VALIDATORS: Record<string, Validator> = {
  alias: str('alias', { re: ALIAS_RE, max: 189 }),
  autoboot: bool('autoboot'),
  billing_id: uuid('billing_id'),
  brand: oneOf('brand', VALID_VM_BRANDS, true),
  cpu_cap: num('cpu_cap'),
  cpu_shares: num('cpu_shares'),
  cpu_type: str('cpu_type'),
  customer_metadata: metadata('customer_metadata'),
  delegate_dataset: bool('delegate_dataset'),
  disk_driver: str('disk_driver'),
  dns_domain: str('dns_domain', { re: DNS_NAME_RE, max: 255 }),
  docker: bool('docker'),
  do_not_inventory: bool('do_not_inventory'),
  firewall_enabled: bool('firewall_enabled'),
  firewall_rules: (p) => {
    const rules = p.firewall_rules;
    if (rules === undefined) return [];
    if (!Array.isArray(rules)) return [elem.invalid('firewall_rules', 'Not an array')];
    try {
      rules.forEach(validFirewallRule);
    } catch (e) {
      return [elem.invalid('firewall_rules', (e as Error).message)];
    }
    return [];
  },
  fs_allowed: str('fs_allowed'),
  hostname: str('hostname', { re: DNS_NAME_RE, max: 64 }),
  indestructible_delegated: bool('indestructible_delegated'),
  indestructible_zoneroot: bool('indestructible_zoneroot'),
  init_name: str('init_name'),
  internal_metadata: metadata('internal_metadata'),
  kernel_version: str('kernel_version'),
  limit_priv: str('limit_priv'),
  locality: (p) => {
    if (!p.locality) return [];
    try {
      validLocality(p.locality);
    } catch (e) {
      return [elem.invalid('locality', (e as Error).message)];
    }
    return [];
  },
  maintain_resolvers: bool('maintain_resolvers'),
  max_locked_memory: num('max_locked_memory'),
  max_lwps: num('max_lwps'),
  max_physical_memory: num('max_physical_memory'),
  max_swap: num('max_swap'),
  mdata_exec_timeout: num('mdata_exec_timeout', { min: 1 }),
  networks: (p) => {
    if (!p.networks) return [elem.missing('networks')];
    try {
      p.networks = validNetworks(p.networks, true);
    } catch (e) {
      return [elem.invalid('networks', (e as Error).message)];
    }
    return [];
  },
  nic_driver: str('nic_driver'),
  overprovision_cpu: num('overprovision_cpu', { min: 1 }),
  overprovision_memory: num('overprovision_memory', { min: 1 }),
  owner_uuid: uuid('owner_uuid', true),
  package_name: str('package_name'),
  package_version: str('package_version'),
  quota: num('quota'),
  ram: num('ram', { min: 1 }),
  resolvers: arrayOf('resolvers'),
  server_uuid: uuid('server_uuid'),
  tags: metadata('tags'),
  ticket: uuid('ticket'),
  tmpfs: num('tmpfs'),
  uuid: uuid('uuid'),
  vcpus: num('vcpus', { min: 1 }),
  volumes: volumes('volumes'),
  zfs_data_compression: str('zfs_data_compression'),
  zfs_io_priority: num('zfs_io_priority'),
  zfs_snapshot_limit: (p) => {
    const v = p.zfs_snapshot_limit;
    if (v === undefined) {
      delete p.zfs_snapshot_limit;
      return [];
    }
    if (v === null) return [];
    const problem = numberProblem(v);
    if (problem) return [elem.invalid(String(v), `Not a valid number: ${problem}`)];
    p.zfs_snapshot_limit = Number(v);
    return [];
  },
  zlog_max_size: num('zlog_max_size'),
};
