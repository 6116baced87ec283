/**
 * PAPI's checks of a package and of the attributes a write names (sdc-papi
 * lib/validations.js `validate`, lib/papi.js `unrecognisedParams` and updatePkg's immutables),
 * each complaint `{field, code, message}` in PAPI's order and words, and the 409 they make.
 */
import { MockcloudError, type FieldError } from '../../common/errors.js';
import { PACKAGE_SCHEMA, type Pkg } from './schema.js';

const BAD_NAME_RE = /[_\-.][_\-.]/;
const NAME_RE = /^[a-zA-Z0-9]([a-zA-Z0-9_\-.]+)?[a-zA-Z0-9]$/;
const UUID_RE = /^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$/;
const VALID_BRANDS = ['bhyve', 'joyent', 'joyent-minimal', 'kvm', 'lx'];
const VALID_SPREADS = ['min-ram', 'random', 'min-owner'];

const MIN_RAM = 64;
const MIN_SWAP = 128;
const MIN_DISK = 1024;
const MIN_CPUCAP = 20;
const MIN_LWPS = 250;
const MIN_VCPUS = 1;
const MAX_VCPUS = 64;
const MAX_ZFSIO = 16383;

/** Params a write takes besides the schema's attributes. */
const CONTROL_PARAMS = ['force', 'skip_validation', 'v'];

/** PAPI's `validationError`: 409 with `code: InvalidArgument` and the complaints. */
export function validationError(message: string, errors: FieldError[]): MockcloudError {
  return new MockcloudError('Conflict', message, { restCode: 'InvalidArgument', errors });
}

const validUuid = (v: unknown): boolean => typeof v === 'string' && UUID_RE.test(v);

/** `validNumber`: absent counts as valid (required attributes are checked before). */
function validNumber(v: unknown, min = 0, max?: number): boolean {
  if (v === undefined) return true;
  const n = Number(v);
  return max ? n >= min && n <= max : n >= min;
}

/** lib/validations.js `validate`: every complaint about a package, or none. */
export function validatePackage(pkg: Pkg): FieldError[] {
  const errs: FieldError[] = [];
  const missing = (field: string, message: string): void => void errs.push({ field, code: 'Missing', message });
  const invalid = (field: string, message: string): void => void errs.push({ field, code: 'Invalid', message });

  for (const name of Object.keys(PACKAGE_SCHEMA).sort()) {
    const val = pkg[name];
    const info = PACKAGE_SCHEMA[name]!;
    const actual = typeof val;
    if (info.required) {
      if (actual === 'undefined') {
        missing(name, 'is missing');
        continue;
      }
      if (actual === 'string' && (val as string).length === 0) {
        missing(name, 'is empty');
        continue;
      }
    }
    if (actual === 'undefined') continue;
    switch (info.type) {
      case 'string':
        if (actual !== 'string') invalid(name, 'must be string');
        break;
      case 'boolean':
        if (actual !== 'boolean') invalid(name, 'must be boolean');
        break;
      case 'uuid':
        if (!validUuid(val)) invalid(name, 'must be UUID');
        break;
      case 'number':
        if (actual !== 'number') invalid(name, 'must be integer');
        break;
      case 'double':
        if (actual !== 'number') invalid(name, 'must be float');
        break;
      case '[uuid]':
        if (!Array.isArray(val)) invalid(name, 'must be an array');
        else if (!val.every(validUuid)) invalid(name, 'must only contain UUIDs');
        break;
      case '[object]':
        if (!Array.isArray(val)) invalid(name, 'must be an array');
        else if (name === 'disks' && val.some((d) => !isDisk(d))) invalid(name, 'must only contain Objects with "size" property');
        break;
      case 'object':
        if (actual !== 'object' || Array.isArray(val)) invalid(name, 'must be a hash');
        break;
      case 'date':
        break;
    }
  }
  for (const name of Object.keys(pkg).sort()) {
    if (!PACKAGE_SCHEMA[name]) invalid(name, 'is not a supported attribute');
  }

  if (typeof pkg.alloc_server_spread === 'string' && !VALID_SPREADS.includes(pkg.alloc_server_spread)) {
    invalid('alloc_server_spread', `must be one of: ${VALID_SPREADS.join(', ')}`);
  }
  if (pkg.brand !== undefined && !VALID_BRANDS.includes(pkg.brand as string)) {
    invalid('brand', `must be one of: ${VALID_BRANDS.join(', ')}`);
  }
  if (!validNumber(pkg.max_physical_memory, MIN_RAM)) invalid('max_physical_memory', `must be greater or equal to ${MIN_RAM}`);
  const name = pkg.name;
  if (name && (typeof name !== 'string' || !NAME_RE.test(name) || BAD_NAME_RE.test(name))) {
    invalid('name', `must match ${NAME_RE.toString()} and not contain repeated '-', '_' or '.' characters`);
  }
  if (!validNumber(pkg.max_swap, MIN_SWAP)) invalid('max_swap', `must be greater or equal to ${MIN_SWAP}`);
  if (Number.parseInt(String(pkg.max_swap), 10) < Number.parseInt(String(pkg.max_physical_memory), 10)) {
    invalid('max_swap', 'cannot be less than max_physical_memory');
  }
  if (!validNumber(pkg.quota, MIN_DISK)) invalid('quota', `must be greater or equal to ${MIN_DISK}`);
  if (pkg.quota && Number(pkg.quota) % 1024 !== 0) invalid('quota', 'must be a multiple of 1024');
  if (pkg.cpu_cap && !validNumber(pkg.cpu_cap, MIN_CPUCAP)) invalid('cpu_cap', `must be greater or equal to ${MIN_CPUCAP}`);
  if (!validNumber(pkg.max_lwps, MIN_LWPS)) invalid('max_lwps', `must be greater or equal to ${MIN_LWPS}`);
  if (!validNumber(pkg.zfs_io_priority, 0, MAX_ZFSIO)) {
    invalid('zfs_io_priority', `must be greater or equal to 0, and less than or equal to ${MAX_ZFSIO}`);
  }
  if (!validNumber(pkg.vcpus, MIN_VCPUS, MAX_VCPUS)) {
    invalid('vcpus', `must be greater or equal to ${MIN_VCPUS}, and less or equal to ${MAX_VCPUS}`);
  }
  if (pkg.disks && pkg.flexible_disk !== true) invalid('disks', 'disks can be specified only for flexible_disk packages');
  return errs;
}

/** A `disks` element: only `size`, a non-negative integer or "remaining" (`{}` passes). */
function isDisk(d: unknown): boolean {
  if (d === null || d === undefined) return false;
  return Object.entries(Object(d) as object).every(([k, v]) => k === 'size' && (v === 'remaining' || (Number.isInteger(v) && (v as number) >= 0)));
}

/** `unrecognisedParams`: a write may name only the schema's attributes and PAPI's own params. */
export function checkRecognised(params: Pkg): void {
  const errs: FieldError[] = [];
  for (const p of Object.keys(params)) {
    if (CONTROL_PARAMS.includes(p)) continue;
    if (!PACKAGE_SCHEMA[p]) errs.push({ field: p, code: 'Invalid', message: 'is an unsupported attribute' });
  }
  if (errs.length > 0) throw validationError('Unrecognised attributes', errs);
}

/** updatePkg: an immutable attribute given with another value than the package's. */
export function checkImmutables(params: Pkg, pkg: Pkg): void {
  const errs: FieldError[] = [];
  const immutable = Object.keys(PACKAGE_SCHEMA)
    .filter((k) => PACKAGE_SCHEMA[k]!.immutable)
    .sort();
  for (const k of immutable) {
    if (params[k] !== undefined && params[k] !== pkg[k]) errs.push({ field: k, code: 'Invalid', message: 'is immutable' });
  }
  if (errs.length > 0) throw validationError('Attempt to update immutables', errs);
}
