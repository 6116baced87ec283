/**
 * The two components the daemon hosts but does not own, as the daemon uses them: the shared
 * cn-agent task server (src/agents/cn-agent, `CnAgentServer`) and the file-backed vmadm
 * (src/vmadm, `Vmadm`). Typed here by what the daemon calls, so tests can stand in for them.
 */
import type { EventFaultRule } from '../agents/cn-agent/faults.js';
import type { HistoryEntry } from '../agents/cn-agent/history.js';
import type { SysinfoIdentity } from '../common/sysinfo.js';
import type { AgentAddress, CnPower, MockCn } from '../mockcn/types.js';
import type { VmStore } from '../vmadm/types.js';

export interface CnAgentHost {
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
  /** Bind this CN's socket; resolves with where it listens. */
  attach(cn: MockCn, opts?: { ip?: string; port?: number }): Promise<AgentAddress>;
  detach(uuid: string): Promise<void> | void;
  /** The CN went down (stop listening) or came up (listen again); absent in stand-ins. */
  setPower?(uuid: string, power: CnPower): Promise<void> | void;
  readonly tasksInFlight?: number;
  /** Tasks started plus tasks ended, ever: it moves while the fleet takes or finishes work. */
  readonly tasksStartedOrEnded?: number;
  /** The cn-agent task fault seam (CnAgentServer.faults); absent in stand-ins. */
  readonly faults?: {
    set(spec: unknown): unknown;
    remove(id: string): boolean;
    clear(server?: string): void;
    list(): unknown[];
    /** A task-fault event's rule (src/events); absent in stand-ins. */
    addEventRule?(rule: EventFaultRule): string;
  };
  /** A CN's recent tasks, oldest first (cn-agent's `/history`); absent in stand-ins. */
  history?(uuid: string): readonly HistoryEntry[] | undefined;
  /** Counters for `mockcloud status` (tasks by outcome, ...). */
  stats?(): Record<string, unknown>;
}

export interface VmadmHost {
  openServer(serverUuid: string, identity: SysinfoIdentity): Promise<VmStore>;
  closeServer?(serverUuid: string): Promise<void> | void;
  close?(): Promise<void> | void;
}
