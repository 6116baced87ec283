/**
 * Every figure a timing profile holds, by key. A key is where the time goes:
 *
 *   tasks.<task>.<phase>   a cn-agent task's phase: the steps a real task reports
 *                          (`start:<step>` / `end:<step>` in its history: machine_create's
 *                          pre_check ... create_machine), `run` for a task without steps (the
 *                          agent forking its child, the vmadm or zfs command), and the long
 *                          phases (an image's import, a migration's sync, a build's steps)
 *   vm.<stage>             a VM's own stages, wherever they happen (a create, a start, a
 *                          CN's autoboot): the zone installed, booted, its provisioning
 *                          scripts, its guest shutting down, halted, uninstalled
 *   cn.<stage>             a CN's boot, and the pace its autoboot VMs start at
 *   workflow.<stage>       the dev headnode's workflow runner: a job picked up, a step's
 *                          own time (its calls to the APIs)
 *   waitlist.<stage>       CNAPI's waitlist director activating a ticket
 *
 * A timing file names figures by these keys; a key not here is refused, with the nearest
 * known one.
 */

/** The phases of each cn-agent task (a task not listed has the single phase `run`). */
export const TASK_PHASES: Readonly<Record<string, readonly string[]>> = {
  // sdc-cn-agent lib/backends/smartos/tasks/machine_create.js createSteps
  machine_create: ['pre_check', 'ensure_dataset_present', 'fetch_dataset', 'add_firewall_rules', 'create_machine'],
  // machine_reprovision.js createSteps
  machine_reprovision: ['pre_check', 'ensure_dataset_present', 'fetch_dataset', 'reprovision_machine'],
  // machine_update_nics.js createSteps
  machine_update_nics: ['pre_check', 'filter_vms', 'perform_updates'],
  // the check, then `imgadm import` when the image is absent (bytes at a rate)
  image_ensure_present: ['run', 'import'],
  // `run` for every action; `sync` is the zfs send of a sync action (bytes at a rate)
  machine_migrate: ['run', 'sync'],
  // `run` until the task answers; each Dockerfile instruction; the image's layers written
  docker_build: ['run', 'step', 'commit'],
  // imgadm create: its start and the VM's snapshot, then the snapshot sent, compressed and
  // uploaded to IMGAPI (bytes at a rate: the image file's)
  machine_create_image: ['run', 'send'],
};

/** cn-agent's tasks (sdc-cn-agent lib/backends/smartos/index.js queueDefns), in its order. */
export const TASK_NAMES: readonly string[] = [
  'machine_create', 'machine_reprovision', 'image_ensure_present', 'command_execute', 'recovery_config',
  'server_overprovision_ratio', 'server_reboot', 'server_sysinfo', 'docker_exec', 'docker_copy', 'docker_stats',
  'docker_build', 'server_update_nics', 'agent_install', 'agents_uninstall', 'shutdown_cn_agent_update',
  'refresh_agents', 'machine_boot', 'machine_destroy', 'machine_kill', 'machine_proc', 'machine_reboot',
  'machine_shutdown', 'machine_update', 'machine_update_nics', 'machine_screenshot', 'machine_create_snapshot',
  'machine_rollback_snapshot', 'machine_delete_snapshot', 'machine_migrate', 'machine_migrate_receive',
  'machine_create_image', 'image_get', 'machine_load', 'machine_info', 'zfs_create_dataset', 'zfs_destroy_dataset',
  'zfs_rename_dataset', 'zfs_snapshot_dataset', 'zfs_rollback_dataset', 'zfs_clone_dataset', 'zfs_set_properties',
  'zfs_get_properties', 'zfs_list_datasets', 'zfs_list_snapshots', 'zfs_list_pools', 'sleep', 'nop', 'test_subtask',
];

export function phasesOf(task: string): readonly string[] {
  return TASK_PHASES[task] ?? ['run'];
}

/** A VM's stages, with what each is (docs/timing.md). */
export const VM_STAGES = {
  install: 'the zone installed from its image (state provisioning, zone_state configured then installed)',
  boot: 'the zone booted (zone_state ready, then running)',
  provision: "the zone's provisioning scripts, until /var/svc/provisioning is gone (state provisioning, zone_state running)",
  shutdown: 'the guest shutting down once asked (state shutting_down, or stopping for HVM), cut at the stop timeout',
  halt: 'the zone halted (zone_state down, then installed)',
  uninstall: 'the zone and its datasets destroyed',
} as const;
export type VmStage = keyof typeof VM_STAGES;

export const CN_STAGES = {
  boot: 'a CN off to its first heartbeat: firmware, the platform image over PXE, the agents starting',
  autoboot_gap: 'between two autoboot VMs being started as the CN comes up',
} as const;
export type CnStage = keyof typeof CN_STAGES;

export const WORKFLOW_STAGES = {
  pickup: 'a queued job until a workflow runner takes it',
  step: "a job step's own time, besides what it waits for (a task, a ticket)",
} as const;

export const WAITLIST_STAGES = {
  activation: "a ticket's queue freed until the director activates the next ticket",
} as const;

/** Every key a profile may hold. */
export function allKeys(): string[] {
  const keys: string[] = [];
  for (const task of TASK_NAMES) for (const phase of phasesOf(task)) keys.push(`tasks.${task}.${phase}`);
  for (const s of Object.keys(VM_STAGES)) keys.push(`vm.${s}`);
  for (const s of Object.keys(CN_STAGES)) keys.push(`cn.${s}`);
  for (const s of Object.keys(WORKFLOW_STAGES)) keys.push(`workflow.${s}`);
  for (const s of Object.keys(WAITLIST_STAGES)) keys.push(`waitlist.${s}`);
  return keys;
}

export const KNOWN_KEYS: ReadonlySet<string> = new Set(allKeys());

/** Keys whose time grows with bytes moved: a `rate` is allowed there. */
export const RATE_KEYS: ReadonlySet<string> = new Set([
  'tasks.machine_create.fetch_dataset',
  'tasks.machine_reprovision.fetch_dataset',
  'tasks.image_ensure_present.import',
  'tasks.machine_migrate.sync',
  'tasks.machine_create_image.send',
]);
