/**
 * The agent plug-ins every daemon runs besides cn-agent: vm-agent (VM state to VMAPI),
 * net-agent (NIC state to NAPI), cmon-agent (metrics for CMON) and config-agent (the agents'
 * config files from SAPI), built from the daemon's
 * configuration. `tuning` exists for tests (short intervals); a daemon uses the agents'
 * defaults.
 */
import { createCmonAgentPlugin, type CmonAgentOptions } from '../agents/cmon-agent/index.js';
import { createConfigAgentPlugin, type ConfigAgentOptions } from '../agents/config-agent/index.js';
import { createFirewallerPlugin, type FirewallerOptions } from '../agents/firewaller/index.js';
import { createNetAgentPlugin, type NetAgentOptions } from '../agents/net-agent/index.js';
import { createVmAgentPlugin, type VmAgentOptions } from '../agents/vm-agent/index.js';
import type { CnAgentPluginFactory } from '../runtime/agent-plugin.js';
import { DEFAULT_CMON_PORT, type DaemonConfig } from './config.js';

export interface PluginTuning {
  vmAgent?: Partial<VmAgentOptions>;
  netAgent?: Partial<NetAgentOptions>;
  cmonAgent?: Partial<CmonAgentOptions>;
  configAgent?: Partial<ConfigAgentOptions>;
  firewaller?: Partial<FirewallerOptions>;
}

export function defaultPlugins(config: DaemonConfig, tuning: PluginTuning = {}): CnAgentPluginFactory[] {
  return [
    createVmAgentPlugin({ ...tuning.vmAgent }),
    createNetAgentPlugin({ adminUuid: config.adminUuid, ...tuning.netAgent }),
    createCmonAgentPlugin({
      port: config.cmonPort ?? DEFAULT_CMON_PORT,
      adminUuid: config.adminUuid,
      // Per-CN addresses: one socket per CN address, all on loopback (a wildcard bind would
      // also expose the metrics on every interface of the host). Shared: the bind IP.
      bind: config.agentIps === 'loopback' ? 'agent-ips' : [config.bindIp],
      ...tuning.cmonAgent,
    }),
    // Idle without a SAPI (standalone mode).
    createConfigAgentPlugin({ ...tuning.configAgent }),
    // Idle without an FWAPI.
    createFirewallerPlugin({ ...tuning.firewaller }),
  ];
}
