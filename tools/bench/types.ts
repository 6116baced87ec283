/** The benchmark's options and results (the JSON it writes has this shape). */
import type { LatencySummary } from './stats.js';

export interface BenchOptions {
  steps: number[];
  quick: boolean;
  /** Steady-state measuring window, s. */
  windowSeconds: number;
  /** Wait after every CN has heartbeated before measuring, s. */
  settleSeconds: number;
  /** Tasks of each kind (nop, machine_create) for the latency figures. */
  tasksPerKind: number;
  /** Tasks in flight for the latency figures (1: each task's own latency under the fleet's load). */
  taskConcurrency: number;
  /** Tasks in flight for the second, loaded run (0: none). */
  loadConcurrency: number;
  /** Tasks sent all at once in the burst phase (0: no burst). */
  burstTasks: number;
  vmsPerCn: number;
  vmConcurrency: number;
  /** Time bound of the VM creation phase, s. */
  vmBudgetSeconds: number;
  /** Shortened CNAPI timings for CI runs (daemon config `timings`); absent = the real agent's. */
  timings?: { heartbeatIntervalMs: number; startSpreadMs: number; statusThrottleMs?: number; statusIntervalMs?: number };
  jsonPath: string;
  /** undefined = write no document. */
  docPath: string | undefined;
  keep: boolean;
  /** Re-render outputs from this results JSON instead of running. */
  from?: string;
  /** Write a CPU profile of the largest step's idle daemon and summarise it. */
  profile: boolean;
  bindIp: string;
  daemonLogLevel: string;
  /** CNs of the mirror step (capture and load, issue 18); 0 = no mirror step. */
  mirrorCns?: number;
  /** Run only the mirror step, not the fleet steps. */
  mirrorOnly?: boolean;
  /** The agents step (issue 29): a fleet of this many CNs with config-agent and firewaller off, then on. */
  agentsCns?: number;
  /** Run only the agents step. */
  agentsOnly?: boolean;
  /** CNs of the timing step (issue 26); 0 = no timing step. */
  timingCns?: number;
  /** machine_create tasks of the timing step's burst (default twice the CNs). */
  timingBurst?: number;
  /** Time bound of the timing step's burst, s. */
  timingBudgetSeconds?: number;
  /** Run only the timing step. */
  timingOnly?: boolean;
}

export type TaskLatency = LatencySummary & { failed: number; failures: string[]; perSecond: number };

export interface TaskFigures {
  concurrency: number;
  nop: TaskLatency;
  machineCreate: TaskLatency;
}

export interface HostInfo {
  cpus: number;
  cpuModel: string;
  memoryBytes: number;
  kernel: string;
  node: string;
}

export interface ProfileSummary {
  /** What the daemon was doing: 'create-servers', 'start', 'idle'. */
  phase: string;
  file: string;
  /** Functions by self time, as % of the busy (non-idle) samples. */
  top: { fn: string; where: string; selfPercent: number }[];
  /** Files (modules) by self time, as % of the busy samples. */
  files: { file: string; selfPercent: number }[];
  /** Share of the profiled period the daemon's main thread was not idle. */
  busyPercent: number;
  totalMs: number;
}

export interface HeapSummary {
  file: string;
  /** Live JS heap after a full GC, bytes (sum of self sizes). */
  totalBytes: number;
  /** Kinds of heap objects by self size: objects by constructor, others by V8 type. */
  top: { kind: string; bytes: number; count: number }[];
}

export interface StepResult {
  n: number;
  ok: boolean;
  /** What went wrong (a failed step keeps the figures it got). */
  errors: string[];
  seconds: number;
  baseline?: { rssBytes: number; cpuPercent: number };
  createServers?: {
    requested: number;
    created: number;
    failed: number;
    seconds: number;
    perSecond: number;
    nicAllocations: number;
  };
  start?: {
    secondsToAllRegistered: number;
    secondsToAllHeartbeated: number;
    registered: number;
    heartbeating: number;
  };
  idle?: {
    rssBytes: number;
    rssPerCnBytes: number;
    heapUsedBytes?: number;
    cpuPercent: number;
    windowSeconds: number;
    heartbeatsPerSecond: number;
    /** N / heartbeat interval: what every CN beating on time would give. */
    expectedHeartbeatsPerSecond: number;
    statusReportsPerSecond: number;
    worstHeartbeatGapMs: number;
    silentCns: number;
    cnapiErrors: number;
  };
  tasks?: TaskFigures;
  /** The same tasks again with `loadConcurrency` in flight: latency when tasks queue up. */
  tasksUnderLoad?: TaskFigures;
  /** `burstTasks` nop tasks sent at once over the CNs: what the fleet's heartbeats went through. */
  burst?: {
    tasks: number;
    answered: number;
    /** 503 ServiceUnavailable: beyond the daemon's task queue. */
    refused: number;
    /** Anything else: other status codes, resets, timeouts. */
    failed: number;
    failures: string[];
    p50Ms: number;
    p99Ms: number;
    maxMs: number;
    seconds: number;
    /** The worst gap between two heartbeats of one CN from the burst's start to some 50 s after its end (a heartbeat interval and a second, then AFTER_BURST_SETTLE_MS). */
    worstHeartbeatGapMs: number;
    silentCns: number;
    /** Heartbeats the daemon could not deliver meanwhile (its /status counters). */
    heartbeatsFailed: number;
    /** How late the daemon's event loop ran meanwhile (its /status). */
    eventLoopDelayMaxMs?: number;
    eventLoopDelayP99Ms?: number;
  };
  vms?: {
    perCn: number;
    target: number;
    created: number;
    failed: number;
    seconds: number;
    perSecond: number;
    timedOut: boolean;
    rssBeforeBytes: number;
    rssAfterCreateBytes: number;
    /** RSS of the daemon restarted over the same data dir (VMs loaded from disk), idle. */
    rssAfterRestartBytes: number;
    /** JS heap in use at the same moment (the daemon's /status). */
    heapUsedAfterRestartBytes?: number;
    /** Daemon CPU over the idle window with the VMs loaded, % of one core. */
    cpuPercentWithVms?: number;
    bytesPerVm: number;
    secondsToAllHeartbeatedWithVms: number;
    vmapiVmsStored: number;
  };
  /** CPU profiles of the largest step (--profile). */
  profiles?: ProfileSummary[];
  heap?: HeapSummary;
}

export interface BenchReport {
  version: 1;
  startedAt: string;
  finishedAt: string;
  host: HostInfo;
  options: Omit<BenchOptions, 'jsonPath' | 'docPath' | 'from'>;
  /** The CNAPI timings the daemon ran with (the real agent's unless a CI run shortened them). */
  heartbeatIntervalMs: number;
  steps: StepResult[];
  /** The mirror step (--mirror N). */
  mirror?: MirrorResult;
  /** The agents step (--agents N). */
  agents?: AgentsResult;
  /** The timing step (--timing N). */
  timing?: TimingResult;
  /**
   * When a section was measured, where a run of that step alone (--timing-only and the like)
   * was written into an earlier full run's results (partial-run.ts); absent: at finishedAt.
   */
  sectionsMeasuredAt?: Partial<Record<SectionName, string>>;
}

/** The report's sections that a step run alone brings. */
export type SectionName = 'mirror' | 'agents' | 'timing';

/** config-agent and firewaller at scale (tools/bench/agents-step.ts). */
export interface AgentsResult {
  n: number;
  vmsPerCn: number;
  ok: boolean;
  errors: string[];
  seconds: number;
  off?: { cpuPercent: number; rssBytes: number; rssPerCnBytes: number };
  on?: { cpuPercent: number; rssBytes: number; rssPerCnBytes: number };
  /** Requests while the agents started (each CN's first check and sync). */
  startRequests?: { sapiConfigs: number; fwapiResolves: number };
  /** Idle request rates, and what the real agents would send. */
  rates?: { sapiPerSecond: number; sapiRealPerSecond: number; fwapiPerSecond: number; fwapiRealPerSecond: number };
  /** FWAPI's rule to the CNs hosting web VMs: how many stores it reached, how fast. */
  rule?: { cns: number; reached: number; seconds: number };
}

/** N CNs on the smartos timing profile: the idle fleet against instant, a burst of machine_create (tools/bench/timing-step.ts). */
export interface TimingResult {
  n: number;
  burst: number;
  ok: boolean;
  errors: string[];
  seconds: number;
  /** Connections the burst held open at once (bounded by the open-file limit beside N sockets). */
  heldConnections?: number;
  /** Each idle window in the order measured (each profile twice, in a daemon of its own each time). */
  idleWindows?: { timing: string; cpuPercent: number; rssBytes: number; worstHeartbeatGapMs: number }[];
  /** A profile's windows together: mean CPU % and RSS, the worst gap. */
  idleInstant?: { cpuPercent: number; rssBytes: number; worstHeartbeatGapMs: number };
  idleSmartos?: { cpuPercent: number; rssBytes: number; worstHeartbeatGapMs: number };
  /** Idle CPU on smartos / on instant. */
  idleCpuRatio?: number;
  burstResult?: {
    sent: number;
    ok: number;
    failed: number;
    failures: string[];
    timedOut: boolean;
    seconds: number;
    p50Ms: number;
    p99Ms: number;
    worstHeartbeatGapMs: number;
    silentCns: number;
    peakInFlight: number;
    rssBeforeBytes: number;
    rssAtPeakBytes: number;
    rssPerInFlightTaskBytes: number;
    /** The RSS per task in flight by part (process.memoryUsage() at the plateau less before). */
    perInFlightTaskBytes?: { heapUsed: number; heapTotal: number; external: number; other: number };
    /** The last sample, after the burst (every task ended, its VM kept). */
    rssAfterBytes?: number;
    heapUsedAfterBytes?: number;
    heapUsedBeforeBytes?: number;
    /** VMs the burst had made at the plateau (the median sample's). */
    vmsMadeAtPeak?: number;
    /** JS heap in use a VM made keeps, once the burst's garbage is collected. */
    heapPerVmMadeBytes?: number;
    /** RSS per task in flight, the VMs already made at the plateau taken out (at heapPerVmMadeBytes each): what the target judges. */
    rssPerInFlightTaskNoVmsBytes?: number;
    /** The event loop's worst delay in any 1 s of the burst (ms). */
    worstLoopDelayMs?: number;
    /** The scheduler's worst lateness of a hot job (a heartbeat) seen in the samples (ms). */
    worstHotLagMs?: number;
    /** The sink's own event loop's worst delay in the burst (ms): it times heartbeats as it reads them. */
    sinkLoopDelayMaxMs?: number;
    /**
     * The daemon's heartbeat thread over the burst: its loop's worst delay (ms), its time on a
     * CPU and runnable waiting for one (s; Linux), and its worst wait in any one second (ms).
     */
    heartbeatThread?: { loopDelayMaxMs: number; cpuSeconds?: number; runqueueWaitSeconds?: number; worstRunqueueWaitMs?: number };
    /** Heartbeat gaps in the burst, and of them those over 6 s. */
    gaps?: number;
    gapsOver6s?: number;
    /** Heartbeats sent over 0.5 s / 1 s after they were due, and CNAPI POSTs (heartbeats and status) answered that slowly, as the daemon saw them, from the start of the burst to the end of its settle. */
    heartbeatsLate?: { count: number; over500ms: number; over1s: number };
    cnapiPostsSlow?: { count: number; over500ms: number; over1s: number };
  };
}

/** `mockcloud mirror capture` and `load` of a DC of n CNs with vmsPerCn VMs each (tools/bench/mirror-step.ts). */
export interface MirrorResult {
  n: number;
  vmsPerCn: number;
  ok: boolean;
  errors: string[];
  seconds: number;
  /** The DC captured. */
  dc?: { servers: number; vms: number };
  capture?: { seconds: number; maxRssBytes: number; fileBytes: number; servers: number; vms: number; vmsPerSecond: number };
  load?: {
    seconds: number;
    serversCreated: number;
    vmsCreated: number;
    failed: number;
    /** The load's server phase and VM phase (its report's `seconds`). */
    serverSeconds: number;
    vmSeconds: number;
    serversPerSecond: number;
    vmsPerSecond: number;
    maxRssBytes: number;
    /** The loading daemon's RSS after the load. */
    daemonRssBytes: number;
  };
}
