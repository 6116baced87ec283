/**
 * What an event is, as the control API takes it (POST /events, docs/events.md) and as the
 * engine keeps it. Validated once, at the edge (validate.ts); everything past it is typed.
 */

export const EVENT_TYPES = [
  'offline',
  'partition',
  'reboot',
  'power-loss',
  'flap',
  'slow-heartbeat',
  'vm-crash',
  'vm-reboot',
  'zpool-fill',
  'memory-pressure',
  'task-fault',
  'outbound-fault',
  'timing',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Exactly one selector of servers. */
export type TargetSpec =
  | { servers: string[] }
  | { percent: number }
  | { count: number }
  | { profile: string }
  | { all: true };

/** Where a scenario step came from: copied into the event log. */
export interface EventSource {
  scenario?: string;
  step?: number;
  line?: number;
  /** The client that asked, when not a scenario: "fleet page" for the page's buttons (an API event). */
  via?: string;
}

export interface FlapParams {
  periodMs: number;
  downMs: number;
}
export interface SlowHeartbeatParams {
  lateMs: number;
}
/** Which of the targets' running VMs: these uuids, or a percentage (every one by default). */
export interface VmPick {
  vms?: string[];
  percent?: number;
}
export interface VmCrashParams extends VmPick {
  exitStatus: number;
}
export type VmRebootParams = VmPick;
export interface RebootParams {
  /** How long the CN stays down; the daemon's --boot-seconds by default. */
  bootMs?: number;
}
export interface PowerLossParams {
  /** How long the power stays off before it is restored (0: at once). */
  offMs?: number;
  /** Power comes back to each CN at a random moment within this, after offMs (0: all at once). */
  spreadMs?: number;
  /** How long each CN's kernel takes to boot; the daemon's --boot-seconds by default. */
  bootMs?: number;
}
export interface ZpoolFillParams {
  /** The fill to reach, 0-100 (% of the pool allocated). */
  percent: number;
  overMs: number;
}
export type MemoryPressureParams = { availableMiB: number } | { percentUsed: number };
export interface TaskFaultParams {
  /** undefined: every task ('*'). */
  task?: string;
  delayMs?: number;
  error?: string;
  probability?: number;
  hang?: boolean;
}
export type OutboundApi = 'cnapi' | 'vmapi' | 'napi';
export interface OutboundFaultParams {
  /** undefined: all three ('*'). */
  api?: OutboundApi;
  delayMs?: number;
  /** Of the requests affected, the fraction that fail. */
  errorRate?: number;
  /** The fraction of requests affected (1 by default). */
  probability?: number;
}

/**
 * A while of other timing on the targets (docs/timing.md): their durations multiplied by
 * `factor`, and/or another built-in `profile`; only for `vms` of theirs, only for keys under
 * `keys` ("tasks", "vm.boot", "tasks.machine_create") when given.
 */
export interface TimingParams {
  factor?: number;
  profile?: string;
  vms?: string[];
  keys?: string[];
}

export interface ParamsByType {
  offline: Record<string, never>;
  partition: Record<string, never>;
  reboot: RebootParams;
  'power-loss': PowerLossParams;
  flap: FlapParams;
  'slow-heartbeat': SlowHeartbeatParams;
  'vm-crash': VmCrashParams;
  'vm-reboot': VmRebootParams;
  'zpool-fill': ZpoolFillParams;
  'memory-pressure': MemoryPressureParams;
  'task-fault': TaskFaultParams;
  'outbound-fault': OutboundFaultParams;
  timing: TimingParams;
}

/** A POST /events body after validation. */
export interface EventRequest<T extends EventType = EventType> {
  type: T;
  target: TargetSpec;
  durationMs?: number;
  params: ParamsByType[T];
  seed?: string;
  source?: EventSource;
}

/** An event as GET /events shows it. */
export interface EventView {
  id: string;
  type: EventType;
  servers: string[];
  startedAt: string;
  endsAt?: string;
  params: unknown;
  source?: EventSource;
  /** VMs acted on (vm-crash, vm-reboot). */
  vms?: string[];
  /** Targets the event could not act on, with why (a CN already down, a VM not running). */
  skipped?: { uuid: string; reason: string }[];
}

/** One line of `<data-dir>/events.jsonl`. */
export interface EventLogRecord {
  time: string;
  phase: 'start' | 'end' | 'mark';
  id?: string;
  type?: EventType;
  servers?: string[];
  params?: unknown;
  seed?: string | null;
  source?: EventSource;
  label?: string;
  vms?: string[];
  /** end: why it ended (duration, deleted, done, daemon-stop, failed). */
  reason?: string;
  error?: string;
}
