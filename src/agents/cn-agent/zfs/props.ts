/**
 * The ZFS properties a mock CN knows, in the order `zfs get all` lists them, and how
 * `zfs set` takes a value for each: what it refuses (read-only properties, values of the
 * wrong kind, properties that do not apply to the dataset's type), in libzfs's words, and the
 * parseable form (`zfs get -p`) it stores.
 */

export type DatasetType = 'filesystem' | 'volume' | 'snapshot';

interface PropSpec {
  /** number: sizes with K/M/G/... suffixes; index: one of `values`; string: mountpoint. */
  kind: 'readonly' | 'number' | 'index' | 'string';
  /** Where the property means something: filesystems, volumes (and their snapshots). */
  applies: 'all' | 'filesystem' | 'volume' | 'fsvol';
  /** Children take the parent's value unless they set their own. */
  inherit?: boolean;
  /** Index values as `zprop_values` lists them. */
  values?: readonly string[];
  valuesText?: string;
  /** `none` means 0 (quotas and reservations). */
  none?: boolean;
  /** The value before anything is set. */
  default?: string;
}

const ON_OFF = { kind: 'index', values: ['on', 'off'], valuesText: 'on | off' } as const;

const SPECS: Record<string, PropSpec> = {
  type: { kind: 'readonly', applies: 'all' },
  creation: { kind: 'readonly', applies: 'all' },
  used: { kind: 'readonly', applies: 'all' },
  available: { kind: 'readonly', applies: 'fsvol' },
  referenced: { kind: 'readonly', applies: 'all' },
  compressratio: { kind: 'readonly', applies: 'all' },
  mounted: { kind: 'readonly', applies: 'filesystem' },
  quota: { kind: 'number', applies: 'filesystem', none: true, default: '0' },
  reservation: { kind: 'number', applies: 'fsvol', none: true, default: '0' },
  recordsize: { kind: 'number', applies: 'filesystem', inherit: true, default: '131072' },
  mountpoint: { kind: 'string', applies: 'filesystem', inherit: true },
  compression: {
    kind: 'index',
    applies: 'fsvol',
    inherit: true,
    values: ['on', 'off', 'lzjb', 'gzip', 'gzip-1', 'gzip-2', 'gzip-3', 'gzip-4', 'gzip-5', 'gzip-6', 'gzip-7', 'gzip-8', 'gzip-9', 'zle', 'lz4'],
    valuesText: 'on | off | lzjb | gzip | gzip-[1-9] | zle | lz4',
    default: 'off',
  },
  zoned: { ...ON_OFF, applies: 'filesystem', inherit: true, default: 'off' },
  refquota: { kind: 'number', applies: 'filesystem', none: true, default: '0' },
  refreservation: { kind: 'number', applies: 'fsvol', none: true, default: '0' },
  origin: { kind: 'readonly', applies: 'fsvol' },
  volsize: { kind: 'number', applies: 'volume' },
  volblocksize: { kind: 'readonly', applies: 'volume' },
  atime: { ...ON_OFF, applies: 'filesystem', inherit: true, default: 'on' },
  readonly: { ...ON_OFF, applies: 'fsvol', inherit: true, default: 'off' },
  canmount: { kind: 'index', applies: 'filesystem', values: ['on', 'off', 'noauto'], valuesText: 'on | off | noauto', default: 'on' },
  checksum: {
    kind: 'index',
    applies: 'fsvol',
    inherit: true,
    values: ['on', 'off', 'fletcher2', 'fletcher4', 'sha256', 'sha512', 'skein', 'edonr'],
    valuesText: 'on | off | fletcher2 | fletcher4 | sha256 | sha512 | skein | edonr',
    default: 'on',
  },
  devices: { ...ON_OFF, applies: 'filesystem', inherit: true, default: 'on' },
  exec: { ...ON_OFF, applies: 'filesystem', inherit: true, default: 'on' },
  setuid: { ...ON_OFF, applies: 'filesystem', inherit: true, default: 'on' },
  snapdir: { kind: 'index', applies: 'filesystem', inherit: true, values: ['hidden', 'visible'], valuesText: 'hidden | visible', default: 'hidden' },
  sync: {
    kind: 'index',
    applies: 'fsvol',
    inherit: true,
    values: ['standard', 'always', 'disabled'],
    valuesText: 'standard | always | disabled',
    default: 'standard',
  },
  logbias: { kind: 'index', applies: 'fsvol', inherit: true, values: ['latency', 'throughput'], valuesText: 'latency | throughput', default: 'latency' },
  primarycache: {
    kind: 'index',
    applies: 'fsvol',
    inherit: true,
    values: ['all', 'none', 'metadata'],
    valuesText: 'all | none | metadata',
    default: 'all',
  },
};

/** Every native property, in `zfs get all` order. */
export const KNOWN_PROPERTIES: readonly string[] = Object.keys(SPECS);

export const INHERITED_PROPERTIES: readonly string[] = KNOWN_PROPERTIES.filter((p) => SPECS[p]!.inherit);

export function propertyDefault(name: string): string | undefined {
  return SPECS[name]?.default;
}

/** A user property: a name with a colon, of lower-case letters, digits and `-_.:`. */
export function isUserProperty(name: string): boolean {
  return name.includes(':') && /^[a-z0-9\-_.:]+$/.test(name);
}

export function isKnownProperty(name: string): boolean {
  return Object.prototype.hasOwnProperty.call(SPECS, name) || isUserProperty(name);
}

/** The property applies to a dataset of `type` (snapshots: what their dataset's type has). */
export function appliesTo(name: string, type: DatasetType, headType: DatasetType): boolean {
  const spec = SPECS[name];
  if (!spec) return true;
  const t = type === 'snapshot' ? headType : type;
  if (spec.applies === 'all') return true;
  if (spec.applies === 'fsvol') return true;
  return spec.applies === t;
}

const SHIFT_SUFFIXES = 'BKMGTPEZ';

/** libzfs nicestrtonum: `5G` → 5368709120; the reason on failure. */
export function parseSize(value: string): { bytes: number } | { error: string } {
  const first = value[0];
  if (first === undefined || ((first < '0' || first > '9') && first !== '.')) return { error: `bad numeric value '${value}'` };
  const m = /^(\d*\.?\d*)(.*)$/s.exec(value)!;
  if (m[1] === '.') return { error: `invalid numeric suffix '${value}'` };
  const suffix = m[2]!;
  let shift = 0;
  if (suffix !== '') {
    const i = SHIFT_SUFFIXES.indexOf(suffix[0]!.toUpperCase());
    const okTail = suffix.length === 1 || (suffix.length === 2 && suffix[1]!.toUpperCase() === 'B' && i !== 0);
    if (i < 0 || !okTail) return { error: `invalid numeric suffix '${suffix}'` };
    shift = 10 * i;
  }
  const bytes = Math.floor(Number(m[1]) * 2 ** shift);
  if (!Number.isFinite(bytes) || bytes > Number.MAX_SAFE_INTEGER) return { error: 'numeric value is too large' };
  return { bytes };
}

/**
 * Check `value` for `name` on a dataset of `type` as `zfs set` does; the parseable value to
 * store, or the reason libzfs gives (after "cannot set property for '<dataset>': ").
 */
export function checkSet(name: string, value: string, type: DatasetType, headType: DatasetType): { value: string } | { error: string } {
  const spec = SPECS[name];
  if (!spec) {
    if (!isUserProperty(name)) return { error: `invalid property '${name}'` };
    if (name.length >= 256) return { error: `property name '${name}' is too long` };
    if (value.length >= 8192) return { error: 'value is too long' };
    return { value };
  }
  if (type === 'snapshot') return { error: 'this property can not be modified for snapshots' };
  if (!appliesTo(name, type, headType)) return { error: `'${name}' does not apply to datasets of this type` };
  if (spec.kind === 'readonly') return { error: `'${name}' is readonly` };
  if (spec.kind === 'index') {
    if (!spec.values!.includes(value)) return { error: `'${name}' must be one of '${spec.valuesText}'` };
    return { value };
  }
  if (spec.kind === 'string') {
    if (value === 'none' || value === 'legacy') return { value };
    if (!value.startsWith('/')) return { error: `'${name}' must be an absolute path, 'none', or 'legacy'` };
    return { value: value.length > 1 ? value.replace(/\/+$/, '') : value };
  }
  if (value === 'none') {
    if (!spec.none) return { error: `'${name}=none' is not allowed` };
    return { value: '0' };
  }
  const parsed = parseSize(value);
  if ('error' in parsed) return parsed;
  if (parsed.bytes === 0 && (name === 'quota' || name === 'refquota')) return { error: "use 'none' to disable quota/refquota" };
  if (name === 'recordsize' && (parsed.bytes < 512 || parsed.bytes > 1024 * 1024 || (parsed.bytes & (parsed.bytes - 1)) !== 0)) {
    return { error: `'${name}' must be power of 2 from 512B to 1024KB` };
  }
  if (name === 'volsize' && (parsed.bytes === 0 || parsed.bytes % 8192 !== 0)) {
    return { error: parsed.bytes === 0 ? 'volume size cannot be zero' : "'volsize' must be a multiple of volume block size (8K)" };
  }
  return { value: String(parsed.bytes) };
}
