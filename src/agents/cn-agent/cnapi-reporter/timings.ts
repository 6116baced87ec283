/**
 * The timings of a real cn-agent's CNAPI traffic (cn-agent-spec §4, Appendix A). Tests shrink
 * them; the defaults are the real agent's and are what the daemon uses.
 */
export interface BackoffOptions {
  minMs: number;
  maxMs: number;
  factor: number;
  /** Each delay is multiplied by a random factor in [1 - jitter, 1 + jitter]. */
  jitter: number;
}

export interface ReporterTimings {
  /** The next heartbeat goes this long after the previous one ended (success or not). */
  heartbeatIntervalMs: number;
  /** A status report is forced this long after the previous one. */
  statusIntervalMs: number;
  /** At most one status report per this long, however often VMs change. */
  statusThrottleMs: number;
  /** Sysinfo registration retries. */
  sysinfoBackoff: BackoffOptions;
  /** Per CNAPI request (the real agent's connect/request timeouts). */
  requestTimeoutMs: number;
  /**
   * A CN's first heartbeat and first status report go at a random moment within this window
   * after its registration, so thousands of CNs started together do not beat in lockstep.
   */
  startSpreadMs: number;
}

export const DEFAULT_REPORTER_TIMINGS: Readonly<ReporterTimings> = Object.freeze({
  heartbeatIntervalMs: 5000,
  statusIntervalMs: 60_000,
  statusThrottleMs: 5000,
  sysinfoBackoff: Object.freeze({ minMs: 500, maxMs: 120_000, factor: 1.6, jitter: 0.2 }),
  requestTimeoutMs: 5000,
  startSpreadMs: 5000,
});

export function resolveTimings(overrides: Partial<ReporterTimings> = {}): ReporterTimings {
  return {
    ...DEFAULT_REPORTER_TIMINGS,
    ...overrides,
    sysinfoBackoff: { ...DEFAULT_REPORTER_TIMINGS.sysinfoBackoff, ...overrides.sysinfoBackoff },
  };
}

/** The delay before retry number `attempt` (0 = the first retry): min·factor^attempt, capped, jittered. */
export function backoffDelay(opts: BackoffOptions, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(opts.maxMs, opts.minMs * Math.pow(opts.factor, Math.max(0, attempt)));
  const jittered = base * (1 - opts.jitter + random() * 2 * opts.jitter);
  return Math.round(Math.min(opts.maxMs, Math.max(0, jittered)));
}
