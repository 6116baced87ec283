/**
 * The contract of the file-backed vmadm (issue 2). Everything that touches a VM (cn-agent
 * tasks, vm-agent, net-agent, cmon-agent, status reports, the CLI) goes through a VmStore.
 *
 * VM objects follow SmartOS vmadm(1M) and node-vmadm's dummy backend field names.
 * A `Vm` as returned by load/lookup/events is the *loaded* form: the stored object plus
 * the derived fields vmadm fills in (last_modified, zonename, zone_state, pid, zoneid,
 * boot_timestamp / exit_*, server_uuid, datacenter_name, platform_buildstamp).
 */

export type VmState =
  | 'configured'
  | 'provisioning'
  | 'running'
  | 'stopping'
  | 'shutting_down'
  | 'stopped'
  | 'down'
  | 'failed'
  | 'receiving'
  | 'destroyed';

export type VmBrand = 'joyent' | 'joyent-minimal' | 'lx' | 'bhyve' | 'kvm' | 'builder';

export interface VmNic {
  mac: string;
  ip?: string;
  ips?: string[];
  netmask?: string;
  gateway?: string;
  gateways?: string[];
  interface?: string;
  nic_tag?: string;
  network_uuid?: string;
  vlan_id?: number;
  mtu?: number;
  model?: string;
  primary?: boolean;
  allow_dhcp_spoofing?: boolean;
  allow_ip_spoofing?: boolean;
  allow_mac_spoofing?: boolean;
  allow_restricted_traffic?: boolean;
  allow_unfiltered_promisc?: boolean;
  [key: string]: unknown;
}

export interface VmDisk {
  path?: string;
  size?: number;
  image_uuid?: string;
  image_size?: number;
  image_name?: string;
  boot?: boolean;
  model?: string;
  media?: string;
  zfs_filesystem?: string;
  refreservation?: number;
  [key: string]: unknown;
}

export interface VmSnapshot {
  name: string;
  created_at: string;
  /** MiB written since the snapshot (ZFS `written`); 0 on a mock CN. */
  size?: number;
}

export interface Vm {
  uuid: string;
  brand: VmBrand | string;
  state: VmState | string;
  zone_state?: string;
  autoboot?: boolean;
  alias?: string;
  owner_uuid?: string;
  image_uuid?: string;
  billing_id?: string;
  server_uuid?: string;
  ram?: number;
  max_physical_memory?: number;
  max_locked_memory?: number;
  max_swap?: number;
  max_lwps?: number;
  quota?: number;
  cpu_cap?: number;
  cpu_shares?: number;
  vcpus?: number;
  zfs_io_priority?: number;
  zpool?: string;
  zfs_filesystem?: string;
  zonepath?: string;
  zonename?: string;
  limit_priv?: string;
  create_timestamp?: string;
  last_modified?: string;
  boot_timestamp?: string;
  exit_status?: number;
  exit_timestamp?: string;
  pid?: number;
  zoneid?: number;
  do_not_inventory?: boolean;
  customer_metadata?: Record<string, unknown>;
  internal_metadata?: Record<string, unknown>;
  tags?: Record<string, unknown>;
  routes?: Record<string, string>;
  resolvers?: string[];
  nics?: VmNic[];
  disks?: VmDisk[];
  snapshots?: VmSnapshot[];
  datasets?: string[];
  [key: string]: unknown;
}

/**
 * The payload of `create`: VM properties without the fields vmadm fills in. `brand`
 * defaults to `joyent`; NICs may come without `mac` (vmadm generates one). Checked at
 * run time (keys the brand does not take are removed with a warning), so anything
 * JSON-shaped type-checks here.
 */
export interface VmCreatePayload {
  uuid?: string;
  brand?: VmBrand | string;
  alias?: string;
  autoboot?: boolean;
  owner_uuid?: string;
  image_uuid?: string;
  billing_id?: string;
  ram?: number;
  max_physical_memory?: number;
  max_locked_memory?: number;
  max_swap?: number;
  quota?: number;
  cpu_cap?: number;
  cpu_shares?: number;
  vcpus?: number;
  do_not_inventory?: boolean;
  customer_metadata?: Record<string, unknown>;
  internal_metadata?: Record<string, unknown>;
  tags?: Record<string, unknown>;
  routes?: Record<string, string>;
  resolvers?: string[];
  nics?: Partial<VmNic>[] | Record<string, never>;
  disks?: VmDisk[] | Record<string, never>;
  [key: string]: unknown;
}

/** The payload of `update`: vmadm(1M)'s update keys (set_*, remove_*, add_nics, ...). */
export type VmUpdatePayload = Record<string, unknown>;

export interface LoadOptions {
  /** Only these keys in the result. */
  fields?: string[];
  /** Find VMs with do_not_inventory too. */
  include_dni?: boolean;
}

/**
 * A lookup filter, as `vmadm lookup` takes it: `field=value` pairs where the field may be
 * nested (`nics.*.ip`, `tags.role`), a value starting with `~` is a regex, and numeric
 * fields accept `<`, `>`, `<=`, `>=` comparisons written as the operator prefixed to the value.
 */
export type LookupSearch = Record<string, unknown>;

export interface LookupOptions extends LoadOptions {}

export type VmEventType = 'create' | 'modify' | 'delete';

/** One vminfod-style change record (node-vmadm lib/diff.js format). */
export interface VmChange {
  path: (string | null)[];
  prettyPath: string;
  action: 'added' | 'removed' | 'changed';
  oldValue?: unknown;
  newValue?: unknown;
  /** With vmadm's identifier map: the mac (nics) or path (disks) of the element changed. */
  ident?: unknown;
}

export interface VmEvent {
  type: VmEventType;
  zonename: string;
  uuid: string;
  /** The full VM after the change; for `delete`, the last VM before it went away. */
  vm: Vm;
  changes?: VmChange[];
  /** Monotonic per server, so consumers can order and de-duplicate. */
  seq: number;
  date: string;
}

export type VmEventListener = (ev: VmEvent) => void;

export interface VmSubscription {
  /** The VMs at the instant of subscription; every later change arrives as an event. */
  ready: Map<string, Vm>;
  unsubscribe(): void;
}

export interface StopOptions {
  force?: boolean;
  timeout?: number;
  /** Told around each stage's wait (see WaitHooks). */
  hooks?: WaitHooks | undefined;
}

/**
 * Told around each stage's wait of an operation: the caller (a cn-agent task) gives its place
 * among the daemon's working tasks back while the VM only takes time, and takes it back after.
 */
export interface WaitHooks {
  beforeWait(): void;
  afterWait(): Promise<void>;
}

/**
 * A VM's own stages (docs/timing.md `vm.*`): how long a real SmartOS VM spends installing,
 * booting, provisioning, shutting down, halting and being destroyed.
 */
export type VmStage = 'install' | 'boot' | 'provision' | 'shutdown' | 'halt' | 'uninstall';

/**
 * What paces a store's multi-step operations (the daemon's timing on its shared scheduler).
 * With no pacer, or a stage of 0 ms, the operation is written as at once, as before timing.
 */
export interface VmPacer {
  /** How long `stage` takes for this VM now (a fresh draw each call); 0: no time. */
  stageMs(stage: VmStage, vm: { uuid: string; brand?: unknown }): number;
  /** Resolves after `ms`; rejects when `signal` aborts (the store closing cuts waits short). */
  wait(ms: number, signal: AbortSignal): Promise<void>;
}

/** Where a write logs vmadm's warnings (e.g. the keys it removed); the store's log when absent. */
export interface WarningLog {
  warn(...args: unknown[]): void;
}

export interface WriteOptions {
  log?: WarningLog;
  /** Told around each stage's wait (a paced create, start, delete...). */
  hooks?: WaitHooks | undefined;
}

/** One server's VMs: an in-memory index over `<root>/servers/<uuid>/vms/*.json`. */
export interface VmStore {
  readonly serverUuid: string;
  /** Number of VMs (DNI included). */
  readonly size: number;

  /**
   * Synchronous reads from the in-memory index, for hot paths (status, metrics). Without
   * `fields` they return the index's own objects, deep-frozen and shared: read-only
   * (mutating one throws). Without `include_dni`, do_not_inventory VMs are left out.
   */
  get(uuid: string, opts?: LoadOptions): Vm | undefined;
  list(opts?: LoadOptions): Vm[];

  /** Copies the caller may change. A missing (or DNI, without include_dni) VM: VmNotFound. */
  load(uuid: string, opts?: LoadOptions): Promise<Vm>;
  exists(uuid: string, opts?: LoadOptions): Promise<boolean>;
  lookup(search?: LookupSearch, opts?: LookupOptions): Promise<Vm[]>;
  lookupUuids(search?: LookupSearch, opts?: LookupOptions): Promise<string[]>;

  /**
   * Writes resolve once the file is durable, the index shows the change and its event
   * was dispatched; they return a copy of the VM after the change. Keys the brand does not
   * take are removed and logged (as vmadm does); a bad value rejects with a
   * ValidationFailed MockcloudError whose `errors[0].field` names the key; a missing VM
   * with VmNotFound (restCode VmNotFound). Mutations also act on DNI VMs.
   */
  create(payload: VmCreatePayload, opts?: WriteOptions): Promise<Vm>;
  update(uuid: string, payload: VmUpdatePayload, opts?: WriteOptions): Promise<Vm>;
  delete(uuid: string, opts?: WriteOptions): Promise<void>;

  /** A running VM is left as it is (the real vmadm exits 0 there). */
  start(uuid: string, opts?: WriteOptions): Promise<Vm>;
  /** A VM that is not running is not an error; a plain stop still sets autoboot=false. */
  stop(uuid: string, opts?: StopOptions): Promise<Vm>;
  reboot(uuid: string, opts?: StopOptions): Promise<Vm>;
  kill(uuid: string, opts?: { signal?: string }): Promise<Vm>;
  /**
   * The CN is shutting down: a running VM halts (shutting_down, then stopped) with its
   * `autoboot` left as it is, unlike `stop`; a VM in any other state is left alone.
   */
  halt(uuid: string): Promise<Vm>;
  /**
   * The running VM's init dies (a fault event): it stops with `exit_status` and a fresh
   * `exit_timestamp`, autoboot untouched. A VM not running: VmNotFound/Conflict as `kill`.
   */
  crash?(uuid: string, exitStatus: number): Promise<Vm>;
  /** Always ends running, as on a real CN. */
  reprovision(uuid: string, opts: { image_uuid: string; hooks?: WaitHooks | undefined }): Promise<Vm>;

  createSnapshot(uuid: string, name: string): Promise<Vm>;
  deleteSnapshot(uuid: string, name: string): Promise<Vm>;
  /** Halts the VM if it runs, rolls back, and starts it (always, like vmadm). */
  rollbackSnapshot(uuid: string, name: string, opts?: WriteOptions): Promise<Vm>;

  /**
   * `zonecfg -z <uuid> 'select attr name=create-timestamp; set value=<ts>; end'`: what a VM
   * migration does to keep the VM's original creation time on its new CN (vmadm itself
   * refuses `create_timestamp`). VmNotFound when there is no such VM. Optional: stand-ins
   * may leave it out.
   */
  setCreateTimestamp?(uuid: string, timestamp: string): Promise<Vm>;

  /** VM.info's object (`vmadm info` prints it as JSON); `host` is where VNC listens (the admin IP). */
  info(uuid: string, types?: string[], opts?: { host?: string | undefined }): Promise<Record<string, unknown>>;
  sysrq(uuid: string, request: string): Promise<void>;

  /**
   * Subscribe to this server's VM events (DNI VMs included); the ready snapshot and the
   * stream are atomic. Listeners run synchronously inside the write: keep them quick
   * (queue work); a listener that throws is logged and skipped. Event VMs are the shared
   * frozen index objects.
   */
  subscribe(listener: VmEventListener): VmSubscription;

  /** Re-read the directory and emit events for hand edits (see docs/vmadm.md). */
  rescan(): Promise<void>;
}
