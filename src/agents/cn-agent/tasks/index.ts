/**
 * Every task a mock CN accepts, one file each named after the task, listed in the order of
 * the real SmartOS backend's queue table (sdc-cn-agent lib/backends/smartos/index.js).
 * A name not in here is a 404 "Unknown task".
 */
import type { RegisteredTask } from '../types.js';
import { agentInstall } from './agent_install.js';
import { agentsUninstall } from './agents_uninstall.js';
import { commandExecute } from './command_execute.js';
import { dockerBuildTask } from './docker_build.js';
import { dockerCopyTask } from './docker_copy.js';
import { dockerExecTask } from './docker_exec.js';
import { dockerStatsTask } from './docker_stats.js';
import { imageEnsurePresent } from './image_ensure_present.js';
import { imageGet } from './image_get.js';
import { machineBoot } from './machine_boot.js';
import { machineCreate } from './machine_create.js';
import { machineCreateImage } from './machine_create_image.js';
import { machineCreateSnapshot } from './machine_create_snapshot.js';
import { machineDeleteSnapshot } from './machine_delete_snapshot.js';
import { machineDestroy } from './machine_destroy.js';
import { machineInfo } from './machine_info.js';
import { machineKill } from './machine_kill.js';
import { machineLoad } from './machine_load.js';
import { machineMigrate } from './machine_migrate.js';
import { machineMigrateReceive } from './machine_migrate_receive.js';
import { machineProc } from './machine_proc.js';
import { machineReboot } from './machine_reboot.js';
import { machineReprovision } from './machine_reprovision.js';
import { machineScreenshot } from './machine_screenshot.js';
import { machineRollbackSnapshot } from './machine_rollback_snapshot.js';
import { machineShutdown } from './machine_shutdown.js';
import { machineUpdate } from './machine_update.js';
import { machineUpdateNics } from './machine_update_nics.js';
import { nop } from './nop.js';
import { recoveryConfig } from './recovery_config.js';
import { refreshAgents } from './refresh_agents.js';
import { serverOverprovisionRatio } from './server_overprovision_ratio.js';
import { serverReboot } from './server_reboot.js';
import { serverSysinfo } from './server_sysinfo.js';
import { serverUpdateNics } from './server_update_nics.js';
import { shutdownCnAgentUpdate } from './shutdown_cn_agent_update.js';
import { sleep } from './sleep.js';
import { testSubtask } from './test_subtask.js';
import { zfsCloneDataset } from './zfs_clone_dataset.js';
import { zfsCreateDataset } from './zfs_create_dataset.js';
import { zfsDestroyDataset } from './zfs_destroy_dataset.js';
import { zfsGetProperties } from './zfs_get_properties.js';
import { zfsListDatasets } from './zfs_list_datasets.js';
import { zfsListPools } from './zfs_list_pools.js';
import { zfsListSnapshots } from './zfs_list_snapshots.js';
import { zfsRenameDataset } from './zfs_rename_dataset.js';
import { zfsRollbackDataset } from './zfs_rollback_dataset.js';
import { zfsSetProperties } from './zfs_set_properties.js';
import { zfsSnapshotDataset } from './zfs_snapshot_dataset.js';

export const TASKS: readonly RegisteredTask[] = [
  // machine_creation
  machineCreate,
  machineReprovision,
  // image_import_tasks
  imageEnsurePresent,
  // server_tasks
  commandExecute,
  recoveryConfig,
  serverOverprovisionRatio,
  serverReboot,
  serverSysinfo,
  // docker_tasks
  dockerExecTask,
  dockerCopyTask,
  dockerStatsTask,
  // docker_build_task (log_params: false)
  dockerBuildTask,
  // server_nic_tasks
  serverUpdateNics,
  // agents_tasks
  agentInstall,
  agentsUninstall,
  shutdownCnAgentUpdate,
  refreshAgents,
  // machine_tasks
  machineBoot,
  machineDestroy,
  machineKill,
  machineProc,
  machineReboot,
  machineShutdown,
  machineUpdate,
  machineUpdateNics,
  machineScreenshot,
  machineCreateSnapshot,
  machineRollbackSnapshot,
  machineDeleteSnapshot,
  machineMigrate,
  machineMigrateReceive,
  // machine_images
  machineCreateImage,
  // image_query
  imageGet,
  // machine_query
  machineLoad,
  machineInfo,
  // zfs_tasks
  zfsCreateDataset,
  zfsDestroyDataset,
  zfsRenameDataset,
  zfsSnapshotDataset,
  zfsRollbackDataset,
  zfsCloneDataset,
  zfsSetProperties,
  // zfs_query
  zfsGetProperties,
  zfsListDatasets,
  zfsListSnapshots,
  zfsListPools,
  // test_sleep
  sleep,
  // nop
  nop,
  // test_subtask
  testSubtask,
];

export const TASK_REGISTRY: ReadonlyMap<string, RegisteredTask> = new Map(TASKS.map((t) => [t.name, t]));

export function findTask(name: string): RegisteredTask | undefined {
  return TASK_REGISTRY.get(name);
}
