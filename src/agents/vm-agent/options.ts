/**
 * vm-agent's timings. The defaults are the real agent's (vm-net-agent-spec §2.6) plus the periodic
 * re-sync the original lacked; tests shrink them.
 */
export interface VmAgentOptions {
  /** A full GET /vms + PUT /vms comparison this often after the initial one (jittered ±10 %). */
  resyncIntervalMs: number;
  /** First retry delay of a failed sync or PUT; doubles per failure. */
  retryMinMs: number;
  /** The retry delay never exceeds this. */
  retryMaxMs: number;
  /** A CN's initial sync starts at a random moment within this window (spreads a fleet start). */
  startSpreadMs: number;
  /** VMAPI's page size for GET /vms (VMAPI caps it at 1000). */
  pageLimit: number;
  /** At most this many VMs in one PUT /vms body. */
  putBatchSize: number;
  /** Per VMAPI request. */
  requestTimeoutMs: number;
  /** Version in the User-Agent when the CN's agents dir names no vm-agent. */
  defaultVersion: string;
}

export const DEFAULT_VM_AGENT_OPTIONS: Readonly<VmAgentOptions> = Object.freeze({
  resyncIntervalMs: 5 * 60_000,
  retryMinMs: 500,
  retryMaxMs: 30_000,
  startSpreadMs: 5000,
  pageLimit: 1000,
  putBatchSize: 500,
  requestTimeoutMs: 10_000,
  defaultVersion: '1.9.1',
});

export function resolveVmAgentOptions(overrides: Partial<VmAgentOptions> = {}): VmAgentOptions {
  return { ...DEFAULT_VM_AGENT_OPTIONS, ...overrides };
}
