/**
 * What the metrics read, as the daemon hands it over: the counters its components already keep
 * (read at scrape time, never per CN and never on a timer) and the fleet itself. Typed by what
 * is read, so the components stay free of prom-client.
 */
import type { AdmissionStats } from '../agents/cn-agent/admission.js';
import type { MessageKind, ReporterCounters } from '../agents/cn-agent/cnapi-reporter/reporter.js';
import type { RejectionCounters } from '../agents/cn-agent/server.js';
import type { ConnectionGuardStats, ConnectionLimits } from '../common/connection-guard.js';
import type { EventCounts, FaultState } from '../events/index.js';
import type { MockCn } from '../mockcn/types.js';
import type { CnAgentPlugin } from '../runtime/agent-plugin.js';

/** The CNAPI reporter's counts (CnapiReporter). */
export interface ReporterView {
  readonly counters: Readonly<Record<MessageKind, ReporterCounters>>;
  /** CNs whose last request of each kind failed (they are retrying). */
  readonly failingCns: Readonly<Record<MessageKind, number>>;
}

/** cn-agent's task counts (CnAgentServer); admission and rejections absent in stand-ins. */
export interface TaskView {
  inFlight: number;
  admission?: AdmissionStats;
  rejected?: Readonly<RejectionCounters>;
  /** The CN sockets' connections: open now, closed by a deadline or the cap, and the cap. */
  connections?: ConnectionGuardStats & { limits: ConnectionLimits };
}

export interface MetricSources {
  /** Every mock CN the daemon hosts (the headnode server among them). */
  servers(): Iterable<MockCn>;
  /** What events do to a CN now (EventsEngine.faultState): taken offline, cut off, or nothing. */
  faultState(uuid: string): FaultState;
  reporter(): ReporterView | undefined;
  tasks(): TaskView | undefined;
  events(): EventCounts | undefined;
  /** The agent plug-ins (vm-agent, net-agent, ...), read through their `stats()`. */
  plugins(): readonly CnAgentPlugin[];
  scheduler: { readonly size: number; readonly errors: number };
  http: {
    readonly stats: { readonly retries: number };
    readonly backgroundQueued: number;
  };
  /** The daemon's error counts by kind (`mockcloud status` errors). */
  errors(): ReadonlyMap<string, number>;
}
