/**
 * net-agent's settings. Defaults follow the real agent's cadence (vm-net-agent-spec §3.11) where
 * it is sane for thousands of CNs; tests shrink them.
 */
import { DEFAULT_ADMIN_UUID } from '../../common/triton-defaults.js';

export interface NetAgentOptions {
  /** Owner of the CNs' own NICs (the DC's admin user, mdata ufdsAdmin). */
  adminUuid: string;
  /** Every NIC of a CN is re-read from NAPI this often (jittered), changefeed or not. */
  fullPassIntervalMs: number;
  /** Each referenced network is polled this often (once for the fleet, jittered). */
  networkPollMs: number;
  /** First retry delay after a failed NAPI or vmadm step; doubles per failure. */
  retryMinMs: number;
  retryMaxMs: number;
  /** A CN's first pass starts at a random moment within this window (spreads a fleet start). */
  startSpreadMs: number;
  requestTimeoutMs: number;
  /** Use NAPI's changefeed when it offers one. */
  changefeed: boolean;
  changefeedBackoffMinMs: number;
  changefeedBackoffMaxMs: number;
  changefeedHeartbeatMs: number;
  /** How often to ask a NAPI without a changefeed again. */
  changefeedProbeRetryMs: number;
  /** Changefeed listener identity; by default persisted in `<data-dir>/net-agent.instance_uuid`. */
  instanceUuid?: string;
  /** Version in the User-Agent when the CN's agents dir names no net-agent. */
  defaultVersion: string;
}

export const DEFAULT_NET_AGENT_OPTIONS: Readonly<NetAgentOptions> = Object.freeze({
  adminUuid: DEFAULT_ADMIN_UUID,
  fullPassIntervalMs: 60 * 60_000,
  networkPollMs: 5 * 60_000,
  retryMinMs: 1000,
  retryMaxMs: 30_000,
  startSpreadMs: 5000,
  requestTimeoutMs: 10_000,
  changefeed: true,
  changefeedBackoffMinMs: 5000,
  changefeedBackoffMaxMs: 30_000,
  changefeedHeartbeatMs: 27_817,
  changefeedProbeRetryMs: 5 * 60_000,
  defaultVersion: '2.3.4',
});

export function resolveNetAgentOptions(overrides: Partial<NetAgentOptions> = {}): NetAgentOptions {
  const o = { ...DEFAULT_NET_AGENT_OPTIONS, ...overrides };
  o.adminUuid = o.adminUuid.toLowerCase();
  return o;
}
