/**
 * What the fleet page reads from the daemon and may ask of it, as one small interface the
 * daemon implements (src/daemon/fleet-page.ts): the page's server never reaches into the
 * daemon's objects, and the daemon stays the only owner of the fleet.
 */
import type { HistoryEntry } from '../agents/cn-agent/history.js';
import type { BootSummary, BootView } from '../boot/records.js';
import { serverState, type FaultState } from '../events/server-state.js';
import type { EventView } from '../events/types.js';
import type { MockCn } from '../mockcn/types.js';
import { isHeadnodeSysinfo } from '../mockcn/sysinfo-template.js';

/** A mock CN as the page shows it. */
export interface PageCn extends MockCn {
  readonly hostname: string;
}

/** Running totals since the daemon started; the feed turns them into rates. */
export interface FleetCounters {
  /** Heartbeats CNAPI accepted. */
  heartbeats: number;
  /** cn-agent tasks started. */
  tasks: number;
  /** Tasks answered, and their summed time to the answer (ms). */
  tasksAnswered: number;
  taskMsTotal: number;
  /** Failures: the daemon's error counts (CNAPI/VMAPI/NAPI requests, ...) plus failed tasks. */
  errors: number;
}

export interface FleetSource {
  list(): readonly PageCn[];
  get(uuid: string): PageCn | undefined;
  /** When CNAPI last accepted the CN's heartbeat (epoch ms), while the CN is up. */
  lastHeartbeatAt(uuid: string): number | undefined;
  /** The last heartbeat CNAPI accepted from the CN, also from before it went down (epoch ms). */
  lastKnownHeartbeatAt?(uuid: string): number | undefined;
  /** The CNs' heartbeat interval (ms). */
  readonly heartbeatIntervalMs: number;
  /** False when no CNAPI is configured (standalone): nothing heartbeats, nothing is late. */
  readonly heartbeats: boolean;
  activeEvents(): readonly EventView[];
  /** What an event does to the CN now (EventsEngine.faultState). */
  faultState(uuid: string): FaultState;
  /** `<data-dir>/events.jsonl`: the events applied before, for a CN's detail. */
  readonly eventLogPath: string;
  taskHistory(uuid: string): readonly HistoryEntry[] | undefined;
  counters(): FleetCounters;
  /**
   * What the CN's agent plug-ins say of it (config-agent: `configAgeSeconds`, `configStale`;
   * firewaller: `fwRules`, `fwRvms`); absent: nothing.
   */
  agentFacts?(uuid: string): Record<string, unknown>;
  /** The CN's last boot (src/boot), if it booted in this run. */
  boot?(uuid: string): BootView | undefined;
  /** Whether the CN is booting now (off, its boot under way: DHCP, boot file, kernel). */
  booting?(uuid: string): boolean;
  /** The latest storm's summary: the boots of the last event that booted CNs, else every boot. */
  bootSummary?(): (BootSummary & { eventId: string | null }) | undefined;
  /** The control API's own POST /events and DELETE /events/:id handlers (same validation). */
  startEvent(body: unknown): Promise<unknown>;
  endEvent(id: string): Promise<unknown>;
}

/** A cell's state, by index in the feed's `states` legend. */
export const CELL_STATES = ['running', 'late', 'offline', 'partitioned', 'rebooting', 'starting', 'booting'] as const;
export type CellState = (typeof CELL_STATES)[number];
export const RUNNING = 0;
export const LATE = 1;
export const OFFLINE = 2;
export const PARTITIONED = 3;
export const REBOOTING = 4;
export const STARTING = 5;
export const BOOTING = 6;

/** Heartbeats older than this are late: two intervals and a second (CNAPI's 11 s at 5 s). */
export function lateAfterMs(heartbeatIntervalMs: number): number {
  return heartbeatIntervalMs * 2 + 1000;
}

/**
 * A CN's state for its cell: what events make of it, as the metrics count it (serverState:
 * offline, rebooting, partitioned; down with its boot under way is booting), else starting
 * until registered and heartbeating, late when its last heartbeat is older than `lateMs`, else
 * running.
 */
export function cellState(
  cn: MockCn,
  fault: FaultState,
  lastHeartbeat: number | undefined,
  now: number,
  lateMs: number,
  heartbeats: boolean,
  booting = false,
): number {
  const s = serverState(cn.power, fault);
  if (s === 'rebooting' && booting) return BOOTING;
  if (s !== 'running') return s === 'offline' ? OFFLINE : s === 'rebooting' ? REBOOTING : PARTITIONED;
  if (!cn.registered) return STARTING;
  if (!heartbeats) return RUNNING;
  if (lastHeartbeat === undefined) return STARTING;
  return now - lastHeartbeat > lateMs ? LATE : RUNNING;
}

/** The fleet's compute nodes: the dev DC's headnode server gets no cell. */
export function isComputeNode(cn: MockCn): boolean {
  return !isHeadnodeSysinfo(cn.sysinfo);
}
