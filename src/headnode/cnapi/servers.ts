/**
 * CNAPI's server records (the `cnapi_servers` bucket) and the rules CNAPI applies to them:
 * `ModelServer.upsert` (non-updatable keys, the SDC Agents and memory_provisionable_bytes
 * back-compat, only SERVER_KEYS persisted), `initialValues` for new servers,
 * `updateFromSysinfo`'s field mapping, `updateFromStatusUpdate`'s mapping, and `getFinal`'s
 * extras filtering (sdc-cnapi lib/models/server.js).
 */
import { applyRecordEntries, TrackedMap, type RecordEntry } from '../journal.js';
import type { Sysinfo } from '../../common/sysinfo.js';

export type ServerRecord = Record<string, unknown> & { uuid: string };

export const DISK_USAGE_KEYS = [
  'disk_cores_quota_bytes',
  'disk_cores_quota_used_bytes',
  'disk_installed_images_used_bytes',
  'disk_kvm_quota_bytes',
  'disk_kvm_quota_used_bytes',
  'disk_kvm_zvol_used_bytes',
  'disk_kvm_zvol_volsize_bytes',
  'disk_pool_alloc_bytes',
  'disk_pool_size_bytes',
  'disk_system_used_bytes',
  'disk_zone_quota_bytes',
  'disk_zone_quota_used_bytes',
] as const;

export const MEMORY_USAGE_KEYS = [
  'memory_arc_bytes',
  'memory_available_bytes',
  'memory_provisionable_bytes',
  'memory_total_bytes',
] as const;

const GENERAL_KEYS = [
  'agents',
  'boot_modules',
  'boot_params',
  'boot_platform',
  'comments',
  'created',
  'current_platform',
  'datacenter',
  'default_console',
  'headnode',
  'hostname',
  'kernel_flags',
  'last_boot',
  'next_reboot',
  'overprovision_ratios',
  'rack_identifier',
  'ram',
  'reservation_ratio',
  'reserved',
  'reservoir',
  'serial',
  'setting_up',
  'setup',
  'status',
  'sysinfo',
  'system_type',
  'traits',
  'transitional_status',
  'uuid',
  'vms',
] as const;

/** Only these keys are ever stored, as in CNAPI. */
const SERVER_KEYS = new Set<string>([...DISK_USAGE_KEYS, ...GENERAL_KEYS, ...MEMORY_USAGE_KEYS]);
const NON_UPDATABLE_KEYS = new Set(['created', 'hostname', 'uuid']);

/** The `extras` of ServerList / ServerGet. */
export interface Extras {
  agents?: boolean;
  disk?: boolean;
  last_heartbeat?: boolean;
  memory?: boolean;
  status?: boolean;
  sysinfo?: boolean;
  vms?: boolean;
  capacity?: boolean;
  all?: boolean;
}

export const EXTRAS_ALL: Extras = {
  agents: true,
  disk: true,
  last_heartbeat: true,
  memory: true,
  status: true,
  sysinfo: true,
  vms: true,
};

export interface UpsertOptions {
  /** false: the server must exist (heartbeat reconciler); throws NotFound otherwise. */
  allowCreate?: boolean;
}

export interface UpsertResult {
  created: boolean;
  modified: boolean;
  record: ServerRecord;
}

export class ServerNotFound extends Error {}

export class ServerRegistry {
  /** Records are replaced, never changed in place, so the map sees every change (journal). */
  private readonly servers = new TrackedMap<string, ServerRecord>();
  private readonly datacenter: string;
  /** The `rabbitmq` boot argument CNAPI gives every server (`user:password:host:port`). */
  readonly rabbitmq: string;

  constructor(opts: { datacenter: string; rabbitmq?: string }) {
    this.datacenter = opts.datacenter;
    this.rabbitmq = opts.rabbitmq ?? 'guest:guest:127.0.0.1:5672';
  }

  get size(): number {
    return this.servers.size;
  }

  get(uuid: string): ServerRecord | undefined {
    return this.servers.get(uuid);
  }

  /** All records, sorted by uuid as CNAPI's moray query sorts them. */
  list(): ServerRecord[] {
    return [...this.servers.values()].sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
  }

  delete(uuid: string): boolean {
    return this.servers.delete(uuid);
  }

  /** Everything, for persistence. */
  snapshot(): ServerRecord[] {
    return [...this.servers.values()];
  }

  /** The records changed since the last call, whole (null: deleted), for the journal. */
  drainJournal(): RecordEntry<ServerRecord>[] {
    return this.servers.takeChanged().map((uuid) => ({ k: uuid, v: this.servers.get(uuid) ?? null }));
  }

  /** The stored records with the journal's entries applied. */
  restore(records: unknown, entries: readonly unknown[] = []): void {
    this.servers.clear();
    const valid = (r: unknown): r is ServerRecord => !!r && typeof r === 'object' && typeof (r as ServerRecord).uuid === 'string';
    const stored = Array.isArray(records) ? records.filter(valid) : [];
    const changes = (entries as RecordEntry<ServerRecord>[]).filter((e) => typeof e?.k === 'string' && (e.v === null || valid(e.v)));
    for (const r of applyRecordEntries(stored, 'uuid', changes)) this.servers.set(r.uuid, r);
    this.servers.forgetChanges();
  }

  /**
   * The `default` server record (ModelServer.setDefaultServer): the boot parameters, platform
   * and console new servers start with. CNAPI creates it at its first start.
   */
  ensureDefault(liveImage: string): ServerRecord {
    let d = this.servers.get('default');
    if (!d) {
      d = {
        uuid: 'default',
        default_console: 'serial',
        serial: 'ttyb',
        boot_params: {},
        kernel_flags: {},
        boot_modules: [],
        boot_platform: liveImage,
      };
      this.servers.set('default', d);
    }
    return d;
  }

  /** `PUT /boot/default`: the default record is replaced whole. */
  replaceDefault(values: Record<string, unknown>): void {
    const d: ServerRecord = { uuid: 'default' };
    for (const [k, v] of Object.entries(values)) if (v !== undefined && k !== 'uuid') d[k] = structuredClone(v);
    this.servers.set('default', d);
  }

  /**
   * The default boot parameters (ModelServer.getBootParamsDefault): the default record's, with
   * CNAPI's `rabbitmq` first and `smt_enabled` (SAPI's default, true) unless set.
   */
  defaultBootParams(): { platform: unknown; kernel_args: Record<string, unknown>; kernel_flags: Record<string, unknown>; boot_modules: unknown; default_console: unknown; serial: unknown } {
    const d: Record<string, unknown> = this.servers.get('default') ?? {};
    const kernelArgs: Record<string, unknown> = { rabbitmq: this.rabbitmq, ...((d.boot_params ?? {}) as Record<string, unknown>) };
    if (!Object.prototype.hasOwnProperty.call(kernelArgs, 'smt_enabled')) kernelArgs.smt_enabled = true;
    return {
      platform: d.boot_platform,
      kernel_args: kernelArgs,
      kernel_flags: { ...((d.kernel_flags ?? {}) as Record<string, unknown>) },
      boot_modules: d.boot_modules,
      default_console: d.default_console,
      serial: d.serial,
    };
  }

  /** A fresh record, as `ModelServer.initialValues` builds it: the default boot parameters and CNAPI's defaults. */
  initialValues(uuid: string): ServerRecord {
    const boot = this.servers.has('default') ? this.defaultBootParams() : undefined;
    return {
      uuid,
      agents: [],
      comments: '',
      datacenter: this.datacenter,
      rack_identifier: '',
      reservation_ratio: 0.15,
      reserved: false,
      reservoir: false,
      status: 'running',
      sysinfo: {},
      traits: {},
      vms: {},
      boot_params: boot?.kernel_args ?? {},
      boot_platform: boot ? boot.platform : 'latest',
      default_console: (boot?.default_console as string | undefined) || 'serial',
      kernel_flags: boot?.kernel_flags ?? {},
      serial: (boot?.serial as string | undefined) || 'ttyb',
      created: new Date().toISOString(),
    };
  }

  /** `ModelServer.upsert`: apply `props`, keep the CNAPI invariants, store only SERVER_KEYS. */
  upsert(uuid: string, props: Record<string, unknown>, opts: UpsertOptions = {}): UpsertResult {
    const existing = this.servers.get(uuid);
    if (!existing && opts.allowCreate === false) throw new ServerNotFound(`server ${uuid} not found`);
    const isNew = !existing;
    const old: ServerRecord = existing ?? this.initialValues(uuid);
    const next: ServerRecord = structuredClone(old);
    next.uuid = uuid;
    let modified = isNew;

    for (const [k, v] of Object.entries(props)) {
      if (v === undefined) continue;
      if (!isNew && NON_UPDATABLE_KEYS.has(k)) continue;
      if (!deepEqual(next[k], v)) {
        next[k] = structuredClone(v);
        modified = true;
      }
    }

    // Back-compat: agents from sysinfo 'SDC Agents' only while cn-agent has posted none.
    const sysinfo = props.sysinfo as Sysinfo | undefined;
    if (sysinfo) {
      const agents = next.agents;
      if (!agents || (Array.isArray(agents) && agents.length === 0 && sysinfo['SDC Agents'])) {
        next.agents = sysinfo['SDC Agents'];
        modified = true;
      }
    }

    // Back-compat: memory_provisionable_bytes follows ram, reservation ratio and VMs.
    if (
      next.reservation_ratio &&
      next.vms &&
      (props.reservation_ratio !== undefined || props.vms || props.sysinfo || props.memory_total_bytes)
    ) {
      const si = next.sysinfo as Partial<Sysinfo> | undefined;
      let total = 0;
      if (si && si['MiB of Memory']) total = Number(si['MiB of Memory']) * 1024 * 1024;
      else if (typeof next.memory_total_bytes === 'number') total = next.memory_total_bytes;
      if (total > 0) {
        const ratio = Number(next.reservation_ratio);
        const vmsMiB = Object.values(next.vms as Record<string, { max_physical_memory?: number }>).reduce(
          (sum, vm) => sum + (Number(vm?.max_physical_memory) || 0),
          0,
        );
        next.memory_provisionable_bytes = Math.floor(total - total * ratio - vmsMiB * 1024 * 1024);
        modified = true;
      }
    }

    // DAPI hard-codes overprovision ratios, so CNAPI never stores them.
    delete next.overprovision_ratios;

    // A reboot is over once the server runs again (see CNAPI's long comment on this).
    if (
      old.transitional_status &&
      next.status === 'running' &&
      (old.last_boot !== next.last_boot || old.status === 'unknown')
    ) {
      delete next.transitional_status;
      modified = true;
    }

    if (modified) {
      for (const k of Object.keys(next)) if (!SERVER_KEYS.has(k)) delete next[k];
      this.servers.set(uuid, next);
    }
    return { created: isNew, modified, record: modified ? next : old };
  }
}

/** `ModelServer.updateFromSysinfo`'s mapping of sysinfo to server fields. */
export function fieldsFromSysinfo(sysinfo: Sysinfo): Record<string, unknown> {
  const out: Record<string, unknown> = { sysinfo };
  const epochToIso = (v: unknown): string | undefined =>
    v === undefined ? undefined : new Date(Number(v) * 1000).toISOString();
  const set = (field: string, value: unknown): void => {
    if (value !== undefined) out[field] = value;
  };
  set('created', safeIso(() => epochToIso(sysinfo['Zpool Creation'])));
  set('current_platform', sysinfo['Live Image']);
  set(
    'headnode',
    sysinfo['Boot Parameters'] === undefined ? undefined : sysinfo['Boot Parameters']?.headnode === 'true',
  );
  set('hostname', sysinfo.Hostname);
  set('system_type', sysinfo['System Type']);
  set('last_boot', safeIso(() => epochToIso(sysinfo['Boot Time'])));
  set('ram', sysinfo['MiB of Memory'] === undefined ? undefined : Number.parseInt(String(sysinfo['MiB of Memory']), 10));
  set('setup', sysinfo.Setup === 'true' || sysinfo.Setup === true);
  return out;
}

/** A sysinfo date CNAPI could not convert would throw in toISOString; keep the record sane. */
function safeIso(fn: () => string | undefined): string | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}

/** `updateFromStatusUpdate`: cn-agent's status sample to server fields. */
export function fieldsFromStatus(update: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const meminfo = (update.meminfo ?? {}) as Record<string, unknown>;
  const diskinfo = (update.diskinfo ?? {}) as Record<string, unknown>;
  const mem: [string, string][] = [
    ['availrmem_bytes', 'memory_available_bytes'],
    ['arcsize_bytes', 'memory_arc_bytes'],
    ['total_bytes', 'memory_total_bytes'],
  ];
  for (const [from, to] of mem) if (Object.prototype.hasOwnProperty.call(meminfo, from)) out[to] = meminfo[from];
  for (const key of DISK_USAGE_KEYS) {
    const from = key.slice('disk_'.length);
    if (Object.prototype.hasOwnProperty.call(diskinfo, from)) out[key] = diskinfo[from];
  }
  out.vms = update.vms;
  return out;
}

/**
 * `getFinal`: a copy of the record with the extras' fields kept. `lastHeartbeat` is the
 * deprecated field CNAPI adds from the beats this instance has seen (null if none).
 */
export function renderServer(
  record: ServerRecord,
  extrasIn: Extras,
  lastHeartbeat: string | null,
): Record<string, unknown> {
  const extras: Extras = extrasIn.all ? { ...EXTRAS_ALL } : { status: true, ...extrasIn };
  // A shallow copy: only top-level keys change here and the result is serialised at once.
  const s: Record<string, unknown> = { ...record };
  if (extras.last_heartbeat) s.last_heartbeat = lastHeartbeat;
  else delete s.last_heartbeat;
  if (!extras.status) delete s.status;
  else s.status = s.status || 'unknown';
  if (!extras.memory) for (const k of MEMORY_USAGE_KEYS) delete s[k];
  if (!extras.disk) for (const k of DISK_USAGE_KEYS) delete s[k];
  if (!extras.vms) delete s.vms;
  if (!extras.agents) delete s.agents;
  delete s.overprovision_ratios;
  if (s.status === 'unknown' && s.transitional_status) s.status = s.transitional_status;
  return s;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a as object);
  const kb = Object.keys(b as object);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}
