/**
 * Every task a mock CN accepts: all of the original dummy backend's (each behaving like a
 * real CN's, machine_kill included) plus the smartos backend's tasks that VM data and sysinfo
 * can answer. A name not in here is a 404 "Unknown task".
 */
import type { RegisteredTask } from '../types.js';
import { agentInstall, agentsUninstall, refreshAgents } from './agents.js';
import { imageEnsurePresent, imageGet } from './images.js';
import { machineCreate, machineReprovision } from './machine-create.js';
import { machineCreateSnapshot, machineDeleteSnapshot, machineDestroy, machineRollbackSnapshot } from './machine-destroy.js';
import { machineBoot, machineKill, machineReboot, machineShutdown } from './machine-power.js';
import { machineInfo, machineLoad, machineProc } from './machine-query.js';
import { machineUpdate, machineUpdateNics } from './machine-update.js';
import { commandExecute, nop, serverOverprovisionRatio } from './misc.js';
import { recoveryConfig } from './recovery-config.js';
import { serverReboot, serverSysinfo, serverUpdateNics } from './server.js';
import { zfsGetProperties, zfsListDatasets, zfsListPools, zfsListSnapshots } from './zfs.js';

export const TASKS: readonly RegisteredTask[] = [
  // the dummy backend's
  machineCreate,
  machineReprovision,
  imageEnsurePresent,
  machineBoot,
  machineCreateSnapshot,
  machineDeleteSnapshot,
  machineDestroy,
  machineKill,
  machineReboot,
  machineRollbackSnapshot,
  machineShutdown,
  machineUpdate,
  machineLoad,
  nop,
  agentInstall,
  agentsUninstall,
  refreshAgents,
  commandExecute,
  recoveryConfig,
  serverReboot,
  serverSysinfo,
  serverUpdateNics,
  // the smartos backend's that a mock CN can answer
  machineInfo,
  machineProc,
  machineUpdateNics,
  imageGet,
  serverOverprovisionRatio,
  zfsListPools,
  zfsListDatasets,
  zfsListSnapshots,
  zfsGetProperties,
];

export const TASK_REGISTRY: ReadonlyMap<string, RegisteredTask> = new Map(TASKS.map((t) => [t.name, t]));

export function findTask(name: string): RegisteredTask | undefined {
  return TASK_REGISTRY.get(name);
}
