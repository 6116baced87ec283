/**
 * A mock CN as the rest of the daemon sees it. One object per CN: its data and nothing
 * that ticks. Timers, sockets' routing, HTTP clients and schedulers are shared and live in
 * src/daemon; the agents (src/agents/*) are handed a MockCn and keep their per-CN state
 * small.
 */
import type { Sysinfo } from '../common/sysinfo.js';
import type { VmStore } from '../vmadm/types.js';

/** Where one mock CN keeps its files: `<data-dir>/servers/<uuid>/...` (original layout). */
export interface ServerPaths {
  /** `<data-dir>/servers/<uuid>` */
  dir: string;
  /** `<dir>/sysinfo.json` */
  sysinfo: string;
  /** `<dir>/vms` */
  vms: string;
  /** `<dir>/agents` */
  agents: string;
  /** `<dir>/logs/cn-agent` */
  taskLogs: string;
}

export interface AgentAddress {
  ip: string;
  port: number;
}

/** One entry of `server.agents` in CNAPI (`POST /servers/:uuid {agents}`). */
export interface AgentRecord {
  name: string;
  version?: string;
  image_uuid?: string;
  uuid?: string;
}

/**
 * Whether the CN's host runs. 'down': it is off or still booting (a reboot, and later the
 * fleet's offline events): it sends CNAPI nothing (no registration, heartbeat or status), its
 * cn-agent does not listen, and it is not `registered`. 'up' otherwise.
 */
export type CnPower = 'up' | 'down';

/** Why a CN boots: made, rebooted (server_reboot, the reboot event), power restored, or found off at start. */
export type BootCause = 'create' | 'reboot' | 'power-loss' | 'offline' | 'flap' | 'daemon-start';

/** What a PXE boot gave the OS (src/boot): the platform, the kernel args, the admin NIC's lease. */
export interface BootedOs {
  platform: string;
  kernelArgs: Record<string, string>;
  /** The admin NIC's MAC (lower-case, colons) and the address its lease gave it. */
  mac: string;
  ip: string;
}

export interface PowerOnOptions {
  /** The event that caused the boot (the boot report groups a storm by it). */
  eventId?: string;
  /** How long the kernel takes this time (a reboot event's own boot time); the daemon's otherwise. */
  kernelMs?: number;
}

export interface PowerChange {
  /**
   * A shutdown (true: the last status report goes out first, as a CN's agents stop in order)
   * or a power loss (false: everything just stops).
   */
  graceful: boolean;
}

/**
 * What fault events (src/events) impose on a CN's reported figures and timing. Absent: none,
 * and nothing is computed for it.
 */
export interface CnConditions {
  /** The zpool is at least this full (0-1): status reports' disk figures follow (zpool-fill). */
  poolFill?: number;
  /** Available memory is at most this many bytes (memory-pressure). */
  availableMemoryBytes?: number;
  /** Each heartbeat goes out this much later than its interval (slow-heartbeat). */
  heartbeatLateMs?: number;
}

/** Where a refused agents POST is warned (a task's log). */
export interface AgentsPostLog {
  warn(...args: unknown[]): void;
}

export interface MockCn {
  readonly uuid: string;
  readonly paths: ServerPaths;
  readonly vms: VmStore;
  /** The hardware profile it was made with ('virtual' for CNs made before profiles were recorded). */
  readonly profile: string;
  /**
   * sysinfo as CNAPI gets it: the file plus the run-time `CN Agent IP` / `CN Agent Port` and
   * `Mockcloud Daemon`.
   */
  sysinfo: Sysinfo;
  /** Where this CN's cn-agent listens; set once its socket is bound. */
  agentAddress?: AgentAddress;
  /** The daemon hosting it (sysinfo `Mockcloud Daemon`: "<daemon id>@<host>"); set with the address. */
  hostedBy?: string;
  /** True once CNAPI accepted the sysinfo registration: tasks are refused (404) before. */
  registered: boolean;
  /** `POST /pause` sets it; tasks get 503 while set. */
  draining: boolean;
  /** 'up' unless the CN is down (see CnPower); changed only through `setPower`. */
  readonly power: CnPower;
  /** The agents list last read from `agents/` (what CNAPI was last sent). */
  readonly agents?: readonly AgentRecord[];
  /** Set by fault events only; see CnConditions. */
  conditions?: CnConditions;

  /** A VM changed or a task finished: send a status report soon (throttled, shared). */
  markStatusDirty(): void;
  /** A task rewrote sysinfo.json: re-read it and register it with CNAPI again. */
  reloadSysinfo(): Promise<void>;
  /**
   * Re-read the agents directory and post the list to CNAPI (`POST /servers/<uuid> {agents}`).
   * Rejects when the directory cannot be read; when CNAPI refuses the list or cannot be reached,
   * resolves with that as `postError`, warned on `log` as the real task's shared.js
   * refreshAgents does ('posting agents to cnapi'), and the agents tasks finish; resolves
   * without posting when no CNAPI is configured.
   */
  refreshAgents(log?: AgentsPostLog): Promise<{ agents: AgentRecord[]; postError?: Error }>;
  /**
   * Take the CN down or bring it back up. Resolves once the shared services followed: down,
   * its cn-agent socket is closed and its CNAPI traffic stopped; up, the socket listens again
   * and the CN registers anew (sysinfo first, then agents, heartbeats and status, as at start).
   * Setting the state it already has does nothing.
   */
  setPower(power: CnPower, change?: PowerChange): Promise<void>;
  /**
   * Boot the CN, which is off, as its firmware does (src/boot: DHCP to booter, its boot file,
   * the kernel), resolving once the OS came up (`cameUp` in power-cycle.ts). Undefined (the
   * caller brings the CN up itself) where the daemon gives CNs no firmware.
   */
  powerOn?(cause: BootCause, opts?: PowerOnOptions): Promise<void> | undefined;
}
