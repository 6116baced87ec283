/**
 * DAPI's input checks (sdc-designation lib/validations.js), which CNAPI's `/allocate` runs
 * before the allocator and reports field by field: each returns the message DAPI gives, or
 * null. The structural checks DAPI delegates to JSON schemas (joyent/schemas lib/dapi: NIC tag
 * requirements, traits, server objects) are written out here with the messages jsprim's
 * `validateJsonObject` produces for them (`property "<path>": <reason>`).
 */

type Obj = Record<string, unknown>;

const UUID_RE = /^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$/;
const PLATFORM_RE = /^20\d\d[01]\d[0123]\dT[012]\d[012345]\d\d\dZ$/;
const SDC_VERSION_RE = /^\d\.\d$/;
/** Slack when comparing RAM figures that may be floats. */
const SAFETY_DELTA = 0.01;
const VALID_SPREADS = ['min-ram', 'max-ram', 'random', 'min-owner'];
const AFFINITY_STRING_KEYS = ['key', 'operator', 'value', 'valueType'];
const AFFINITY_VALUE_TYPES = ['exact', 'glob', 're'];

export function isHash(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// ---- JSON-schema style checks, with jsprim's message shape

/** The JSON-schema type name json-schema reports a value as. */
function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/** `<value> - <type> value found, but a <expected> is required`, as json-schema words it. */
function typeMismatch(v: unknown, expected: string): string {
  // json-schema reports null as an object; the value is printed as String() lower-cased.
  const found = v === null ? 'object' : jsonType(v);
  return `${String(v).toLowerCase()} - ${found} value found, but a ${expected} is required`;
}

function prop(path: string, reason: string): string {
  return `property "${path}": ${reason}`;
}

/** NIC tag requirements: an array of arrays of non-empty strings. */
export function validateNicTagRequirements(reqs: unknown): string | null {
  if (!Array.isArray(reqs)) return prop('', typeMismatch(reqs, 'array'));
  for (let i = 0; i < reqs.length; i++) {
    const alts: unknown = reqs[i];
    if (!Array.isArray(alts)) return prop(String(i), typeMismatch(alts, 'array'));
    for (let j = 0; j < alts.length; j++) {
      const tag: unknown = alts[j];
      if (typeof tag !== 'string') return prop(`${i}[${j}]`, typeMismatch(tag, 'string'));
      if (tag.length === 0) return prop(`${i}[${j}]`, 'must be at least 1 characters long');
    }
  }
  return null;
}

/** Traits: an object of booleans, strings or arrays of strings. */
export function validateTraits(traits: unknown): string | null {
  if (!isHash(traits)) return prop('', typeMismatch(traits, 'object'));
  for (const [name, v] of Object.entries(traits)) {
    if (typeof v === 'boolean' || typeof v === 'string') continue;
    if (Array.isArray(v)) {
      const bad = v.findIndex((x) => typeof x !== 'string');
      if (bad === -1) continue;
      return prop(`${name}[${bad}]`, typeMismatch(v[bad], 'string'));
    }
    return prop(name, `${String(v).toLowerCase()} - ${jsonType(v)} value found, but a boolean or string or array is required`);
  }
  return null;
}

/** The server object DAPI accepts (hard-filter-invalid-servers): required figures and shapes. */
export function validateServer(server: Obj): string | null {
  const check = (path: string, v: unknown, rule: FieldRule): string | null => {
    if (v === undefined) return rule.required ? prop(path, 'is missing and it is required') : null;
    if (rule.type === 'integer' || rule.type === 'number') {
      if (typeof v !== 'number') return prop(path, typeMismatch(v, rule.type));
      if (rule.type === 'integer' && !Number.isInteger(v)) return prop(path, typeMismatch(v, 'integer'));
      if (rule.min !== undefined && v < rule.min) return prop(path, `must have a minimum value of ${rule.min}`);
      if (rule.max !== undefined && v > rule.max) return prop(path, `must have a maximum value of ${rule.max}`);
      return null;
    }
    if (rule.type === 'boolean') return typeof v === 'boolean' ? null : prop(path, typeMismatch(v, 'boolean'));
    if (rule.type === 'string') {
      if (typeof v !== 'string') return prop(path, typeMismatch(v, 'string'));
      if (rule.nonEmpty && v.length === 0) return prop(path, 'must be at least 1 characters long');
      if (rule.pattern && !rule.pattern.test(v)) return prop(path, `does not match the regex pattern ${rule.pattern.source}`);
      return null;
    }
    return isHash(v) ? null : prop(path, typeMismatch(v, 'object'));
  };
  for (const [name, rule] of SERVER_FIELDS) {
    const msg = check(name, server[name], rule);
    if (msg) return msg;
  }
  const ratios = server.overprovision_ratios;
  if (isHash(ratios)) {
    for (const [k, v] of Object.entries(ratios)) {
      if (!['ram', 'disk', 'cpu', 'io', 'net'].includes(k)) return prop(`overprovision_ratios.${k}`, 'unsupported property');
      const msg = check(`overprovision_ratios.${k}`, v, { type: 'number', min: 0 });
      if (msg) return msg;
    }
  }
  const si = server.sysinfo as Obj;
  for (const [name, rule] of SYSINFO_FIELDS) {
    const msg = check(`sysinfo.${name}`, si[name], rule);
    if (msg) return msg;
  }
  for (const [nicName, nic] of Object.entries(si['Network Interfaces'] as Obj)) {
    const path = `sysinfo.Network Interfaces.${nicName}`;
    if (!isHash(nic)) return prop(path, typeMismatch(nic, 'object'));
    const status = nic['Link Status'];
    if (status === undefined) return prop(`${path}.Link Status`, 'is missing and it is required');
    if (!['up', 'down', 'unknown'].includes(String(status))) {
      return prop(`${path}.Link Status`, 'does not have a value in the enumeration up, down, unknown');
    }
    const names = nic['NIC Names'];
    if (names === undefined) return prop(`${path}.NIC Names`, 'is missing and it is required');
    if (!Array.isArray(names)) return prop(`${path}.NIC Names`, typeMismatch(names, 'array'));
    const bad = names.findIndex((n) => typeof n !== 'string' || n.length === 0);
    if (bad !== -1) {
      const n: unknown = names[bad];
      return prop(`${path}.NIC Names[${bad}]`, typeof n === 'string' ? 'must be at least 1 characters long' : typeMismatch(n, 'string'));
    }
  }
  if (server.traits !== undefined) {
    const msg = validateTraits(server.traits);
    if (msg) return msg.replace(/^property "/, 'property "traits.').replace('traits."', 'traits"');
  }
  const vms = server.vms;
  if (isHash(vms)) {
    for (const [vmUuid, vm] of Object.entries(vms)) {
      if (!isHash(vm)) return prop(`vms.${vmUuid}`, typeMismatch(vm, 'object'));
      for (const [name, rule] of VM_FIELDS) {
        const msg = check(`vms.${vmUuid}.${name}`, vm[name], rule);
        if (msg) return msg;
      }
    }
  }
  return null;
}

interface FieldRule {
  type: 'integer' | 'number' | 'boolean' | 'string' | 'object';
  required?: boolean;
  min?: number;
  max?: number;
  nonEmpty?: boolean;
  pattern?: RegExp;
}

const posInt: FieldRule = { type: 'integer', min: 1, required: true };
const nonNegInt: FieldRule = { type: 'integer', min: 0, required: true };

const SERVER_FIELDS: [string, FieldRule][] = [
  ['uuid', { type: 'string', required: true, pattern: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/ }],
  ['memory_available_bytes', nonNegInt],
  ['memory_total_bytes', posInt],
  ['disk_pool_size_bytes', posInt],
  ['disk_pool_alloc_bytes', nonNegInt],
  ['disk_system_used_bytes', nonNegInt],
  ['disk_installed_images_used_bytes', nonNegInt],
  ['disk_cores_quota_used_bytes', nonNegInt],
  ['disk_zone_quota_bytes', nonNegInt],
  ['disk_kvm_quota_bytes', nonNegInt],
  ['disk_kvm_zvol_volsize_bytes', nonNegInt],
  ['reserved', { type: 'boolean', required: true }],
  ['setup', { type: 'boolean', required: true }],
  ['reservation_ratio', { type: 'number', required: true, min: 0, max: 1 }],
  ['overprovision_ratios', { type: 'object' }],
  ['sysinfo', { type: 'object', required: true }],
];

const SYSINFO_FIELDS: [string, FieldRule][] = [
  ['Bhyve Capable', { type: 'boolean' }],
  ['Bhyve Max Vcpus', { type: 'integer', min: 0 }],
  ['CPU Total Cores', { type: 'integer', min: 1 }],
  ['CPU Online Count', { type: 'integer', min: 1 }],
  ['HVM API', { type: 'boolean' }],
  ['Network Interfaces', { type: 'object', required: true }],
  ['Live Image', { type: 'string', required: true, nonEmpty: true }],
  ['SDC Version', { type: 'string', nonEmpty: true }],
];

const VM_FIELDS: [string, FieldRule][] = [
  ['owner_uuid', { type: 'string', required: true, pattern: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/ }],
  ['max_physical_memory', posInt],
  ['quota', { type: 'number', min: 0 }],
  ['cpu_cap', { type: 'integer', min: 1 }],
  ['state', { type: 'string', required: true, nonEmpty: true }],
];

// ---- DAPI's own checks (validations.js)

function validatePlatformLimits(requirements: Obj, name: string, prefix: string): string | null {
  const platforms = requirements[name];
  if (platforms === undefined) return null;
  const path = prefix + name;
  if (!isHash(platforms)) return `"${path}" is not a hash`;
  for (const [version, timestamp] of Object.entries(platforms)) {
    if (!SDC_VERSION_RE.test(version)) return `"${path}" contains an invalid SDC version`;
    if (typeof timestamp !== 'string' || !PLATFORM_RE.test(timestamp)) return `"${path}" contains an invalid platform date`;
  }
  return null;
}

function validateAffinity(affinities: unknown): string | null {
  if (!affinities) return null;
  if (!Array.isArray(affinities)) return '"affinity" is not an array';
  for (const a of affinities as Obj[]) {
    for (const k of AFFINITY_STRING_KEYS) if (typeof a?.[k] !== 'string') return `"affinity.${k}" is not a string`;
    if (typeof a.isSoft !== 'boolean') return '"affinity.isSoft" is not a boolean';
    if (a.operator !== '==' && a.operator !== '!=') return '"affinity.operator" has invalid operator';
    if (!AFFINITY_VALUE_TYPES.includes(String(a.valueType))) return '"affinity.valueType" has invalid value';
  }
  return null;
}

function validateLocality(locality: unknown): string | null {
  if (!locality) return null;
  if (!isHash(locality)) return '"locality" is has wrong type';
  for (const hintName of ['near', 'far']) {
    const hint = locality[hintName];
    const key = `"locality.${hintName}"`;
    if (!hint) continue;
    if (typeof hint !== 'string' && !Array.isArray(hint)) return `${key} is neither string nor array`;
    if (typeof hint === 'string' && !UUID_RE.test(hint)) return `${key} is not a UUID`;
    if (Array.isArray(hint) && !hint.every((u) => typeof u === 'string' && UUID_RE.test(u))) return `${key} contains an malformed UUID`;
  }
  if (locality.strict !== undefined && typeof locality.strict !== 'boolean') return '"locality.strict" is given, but not boolean';
  return null;
}

function validateVm(vm: unknown): string | null {
  if (!isHash(vm)) return 'VM object is an invalid type';
  if (typeof vm.owner_uuid !== 'string' || !UUID_RE.test(vm.owner_uuid)) return 'VM "owner_uuid" is not a valid UUID';
  if (typeof vm.ram !== 'number') return 'VM "ram" is not a number';
  if (vm.quota && typeof vm.quota !== 'number') return 'VM "quota" is not a number';
  if (vm.cpu_cap && typeof vm.cpu_cap !== 'number') return 'VM "cpu_cap" is not a number';
  if (vm.traits) {
    const msg = validateTraits(vm.traits);
    if (msg) return `VM ${msg}`;
  }
  if (vm.affinity) {
    const msg = validateAffinity(vm.affinity);
    if (msg) return `VM ${msg}`;
  }
  if (vm.locality) {
    const msg = validateLocality(vm.locality);
    if (msg) return `VM ${msg}`;
  }
  const tags = vm.nic_tags;
  if (tags) {
    if (!Array.isArray(tags)) return 'VM "nic_tags" is not an array';
    if (!tags.every((t) => typeof t === 'string')) return 'VM "nic_tags" contains invalid type in array';
  }
  return null;
}

/** The VM of an allocation request, against the image's RAM requirements. */
export function validateVmPayload(vm: unknown, requirements: unknown): string | null {
  const msg = validateVm(vm);
  if (msg) return msg;
  const v = vm as Obj;
  if (typeof v.vm_uuid !== 'string' || !UUID_RE.test(v.vm_uuid)) return '"vm.vm_uuid" is an invalid UUID';
  const metadata = v.internal_metadata;
  if (metadata) {
    if (typeof metadata !== 'object') return '"vm.internal_metadata" is not a hash';
    const md = metadata as Obj;
    let volFrom = md['docker:volumesfrom'];
    if (volFrom) {
      try {
        volFrom = JSON.parse(String(volFrom));
      } catch {
        return '"vm.internal_metadata[\'docker:volumesfrom\']" is not valid JSON';
      }
      if (!Array.isArray(volFrom)) return '"vm.internal_metadata[\'docker:volumesfrom\']" does not contain an array';
      // DAPI keeps the parsed list for the volumes-from filter.
      md['docker:volumesfrom'] = volFrom;
    }
  }
  if (isHash(requirements)) {
    const ram = Number(v.ram);
    const minRam = Number(requirements.min_ram);
    const maxRam = Number(requirements.max_ram);
    if (minRam && ram < minRam - SAFETY_DELTA) return '"vm.ram" is smaller than "image.requirements.min_ram"';
    if (maxRam && ram > maxRam + SAFETY_DELTA) return '"vm.ram" is larger than "image.requirements.max_ram"';
  }
  return null;
}

export function validateImage(image: unknown): string | null {
  if (!isHash(image)) return '"image" has invalid type';
  if (image.image_size && typeof image.image_size !== 'number') return '"image.image_size" has invalid type';
  if (image.traits) {
    const msg = validateTraits(image.traits);
    if (msg) return msg;
  }
  if (image.requirements) {
    const reqs = image.requirements;
    if (!isHash(reqs)) return '"image.requirements" has invalid type';
    const msg = validatePlatformLimits(reqs, 'min_platform', 'requirements.') ?? validatePlatformLimits(reqs, 'max_platform', 'requirements.');
    if (msg) return msg;
  }
  return null;
}

/** A package; string-encoded platform limits and traits are parsed in place, as DAPI does. */
export function validatePackage(pkg: unknown): string | null {
  if (!isHash(pkg)) return '"package" has invalid type';
  for (const [key, name] of [
    ['overprovision_cpu', 'overprovision_cpu'],
    ['overprovision_memory', 'overprovision_memory'],
    ['overprovision_storage', 'overprovision_storage'],
    ['overprovision_network', 'overprovision_network'],
    ['overprovision_io', 'overprovision_io'],
  ] as const) {
    const v = pkg[key];
    if (v && Number.isNaN(Number(v))) return `"package.${name}" has invalid type`;
  }
  if (pkg.alloc_server_spread && !VALID_SPREADS.includes(String(pkg.alloc_server_spread))) {
    return '"alloc_server_spread" has invalid value';
  }
  const parse = (name: string, check: () => string | null): string | null => {
    const v = pkg[name];
    if (!v) return null;
    if (typeof v === 'string') {
      try {
        pkg[name] = JSON.parse(v);
      } catch {
        return `"package.${name}" has invalid type`;
      }
    }
    return check();
  };
  const minErr = parse('min_platform', () => validatePlatformLimits(pkg, 'min_platform', 'package.'));
  if (minErr) return minErr;
  const maxErr = parse('max_platform', () => validatePlatformLimits(pkg, 'max_platform', 'package.'));
  if (maxErr) return maxErr;
  const traitErr = parse('traits', () => validateTraits(pkg.traits));
  if (traitErr) return `"package.traits": ${traitErr}`;
  return null;
}
