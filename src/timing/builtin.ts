/**
 * The built-in timing profiles.
 *
 *   instant   what mockcloud did before it had timing: every task, VM change and job as fast
 *             as the daemon runs it; a rebooting CN is down 10 s (`--boot-seconds`' default).
 *             The benchmark and the tests that measure throughput run on it.
 *   smartos   what a real SmartOS CN in a real Triton DC takes. Every figure's source is in
 *             docs/timing.md; a figure with no source there is marked an estimate, here and
 *             there. The code's own limits (the task time limit, vmadm's stop timeouts) are
 *             enforced where they apply, whatever the profile.
 */
import { TASK_NAMES, TASK_PHASES } from './catalogue.js';
import { fixed, logNormal, uniform, type Figure } from './figure.js';
import { makeProfile, type TimingProfile } from './profile.js';

const S = 1000;
const MiB = 1024 * 1024;

/** How long a rebooting mock CN stays down unless told otherwise (the old --boot-seconds default). */
export const INSTANT_BOOT_SECONDS = 10;

export const INSTANT: TimingProfile = makeProfile(
  'instant',
  'every task, VM change and job as fast as the daemon runs it (mockcloud before timing); a CN boots in 10 s',
  'built-in',
  { 'cn.boot': fixed(INSTANT_BOOT_SECONDS * S) },
);

const withBrands = (figure: Figure, brands: Record<string, Figure>): Figure => ({ ...figure, brands });
const withRate = (figure: Figure, bytesPerSecond: number): Figure => ({ ...figure, rateBytesPerSecond: bytesPerSecond });

/**
 * cn-agent forks a child process per task (lib/task_agent/task_runner.js) and most tasks run
 * a node program (vmadm, imgadm) or zfs: a few hundred ms before anything happens. Estimate.
 */
const TASK_CHILD = logNormal(0.3 * S, 1.5 * S);
/** One `vmadm` or `zfs` command run by a task (a node program, or a zfs ioctl). Estimate. */
const VMADM_COMMAND = logNormal(0.6 * S, 2.5 * S);
/** imgadm import: fetching the manifest, then the file through zfs receive. Estimate. */
const IMAGE_IMPORT = withRate(logNormal(2 * S, 8 * S), 100 * MiB);

const smartosFigures: Record<string, Figure> = {};
for (const task of TASK_NAMES) if (!TASK_PHASES[task]) smartosFigures[`tasks.${task}.run`] = TASK_CHILD;
for (const task of ['machine_boot', 'machine_shutdown', 'machine_reboot', 'machine_kill', 'machine_destroy', 'machine_update',
  'machine_create_snapshot', 'machine_rollback_snapshot', 'machine_delete_snapshot', 'machine_load', 'machine_info',
  'machine_proc', 'zfs_create_dataset', 'zfs_destroy_dataset', 'zfs_rename_dataset', 'zfs_snapshot_dataset',
  'zfs_rollback_dataset', 'zfs_clone_dataset', 'zfs_set_properties', 'zfs_get_properties', 'zfs_list_datasets',
  'zfs_list_snapshots', 'zfs_list_pools']) {
  smartosFigures[`tasks.${task}.run`] = VMADM_COMMAND;
}
Object.assign(smartosFigures, {
  // machine_create / machine_reprovision steps (sdc-cn-agent tasks/machine_create.js): the
  // child's start and `zoneadm list` + `zfs list` in pre_check, `zfs list` of the image, the
  // import when absent, FWAPI's rules, then vmadm create (its zone's stages are vm.*). Estimates.
  'tasks.machine_create.pre_check': logNormal(0.5 * S, 2 * S),
  'tasks.machine_create.ensure_dataset_present': logNormal(0.15 * S, 0.6 * S),
  'tasks.machine_create.fetch_dataset': IMAGE_IMPORT,
  'tasks.machine_create.add_firewall_rules': logNormal(0.05 * S, 0.5 * S),
  'tasks.machine_create.create_machine': logNormal(0.8 * S, 3 * S),
  'tasks.machine_reprovision.pre_check': logNormal(0.5 * S, 2 * S),
  'tasks.machine_reprovision.ensure_dataset_present': logNormal(0.15 * S, 0.6 * S),
  'tasks.machine_reprovision.fetch_dataset': IMAGE_IMPORT,
  'tasks.machine_reprovision.reprovision_machine': logNormal(0.8 * S, 3 * S),
  'tasks.machine_update_nics.pre_check': logNormal(0.3 * S, 1.5 * S),
  'tasks.machine_update_nics.filter_vms': logNormal(0.5 * S, 2 * S),
  'tasks.machine_update_nics.perform_updates': logNormal(0.6 * S, 2.5 * S),
  'tasks.image_ensure_present.run': logNormal(0.4 * S, 1.5 * S),
  'tasks.image_ensure_present.import': IMAGE_IMPORT,
  'tasks.machine_migrate.run': logNormal(0.6 * S, 2.5 * S),
  // zfs send | zfs receive over the admin network (machine-migrate-send.js). Estimate.
  'tasks.machine_migrate.sync': withRate(logNormal(1 * S, 5 * S), 100 * MiB),
  'tasks.docker_build.run': TASK_CHILD,
  'tasks.docker_build.step': logNormal(1 * S, 6 * S),
  'tasks.docker_build.commit': logNormal(2 * S, 10 * S),
  // imgadm create: the child and imgadm (a node program) snapshotting the VM (a zfs snapshot
  // takes the same time whatever the dataset's size), then the snapshot sent, compressed and
  // uploaded to IMGAPI, the image file's bytes at a rate. Estimates.
  'tasks.machine_create_image.run': VMADM_COMMAND,
  'tasks.machine_create_image.send': withRate(logNormal(5 * S, 20 * S), 40 * MiB),
  // sleep waits what its params say; nop and test_subtask are the child's start only.

  // A zone's stages (smartos-live src/vm/node_modules/VM.js, vmadm(8) VM STATES). Estimates,
  // but for the bounds VM.js enforces: provisioning fails after PROVISION_TIMEOUT (300 s), a
  // zone's stop halts it after STOP_TIMEOUT (60 s), docker after 10 s, bhyve and KVM after 180 s.
  // A zone is installed from a zfs clone of its image: no bytes move.
  'vm.install': withBrands(logNormal(1.5 * S, 6 * S), {
    bhyve: logNormal(2.5 * S, 10 * S),
    kvm: logNormal(2.5 * S, 10 * S),
  }),
  'vm.boot': withBrands(logNormal(2.5 * S, 8 * S), {
    lx: logNormal(3.5 * S, 12 * S),
    bhyve: logNormal(4 * S, 15 * S),
    kvm: logNormal(4 * S, 15 * S),
  }),
  'vm.provision': withBrands(logNormal(10 * S, 40 * S), {
    lx: logNormal(14 * S, 60 * S),
    bhyve: logNormal(25 * S, 100 * S),
    kvm: logNormal(25 * S, 100 * S),
  }),
  'vm.shutdown': withBrands(logNormal(4 * S, 20 * S), {
    bhyve: logNormal(12 * S, 90 * S),
    kvm: logNormal(12 * S, 90 * S),
  }),
  'vm.halt': logNormal(1 * S, 4 * S),
  'vm.uninstall': logNormal(2 * S, 8 * S),
  // A server's boot: POST, the platform image over PXE (sdc-booter), the agents up. Estimate.
  'cn.boot': logNormal(150 * S, 420 * S),
  'cn.autoboot_gap': uniform(0, 0.5 * S),
  // wf-runner takes queued jobs every run_interval (250 ms, sdc-workflow docs/workflow.md);
  // a step's calls to CNAPI, NAPI, Moray take tens of ms (estimate).
  'workflow.pickup': uniform(0, 0.25 * S),
  'workflow.step': logNormal(0.02 * S, 0.2 * S),
  // The waitlist director runs every WAITLIST_PERIOD_MS (500 ms, sdc-cnapi lib/models/waitlist.js).
  'waitlist.activation': uniform(0, 0.5 * S),
});

export const SMARTOS: TimingProfile = makeProfile(
  'smartos',
  'what a SmartOS CN in a Triton DC takes (docs/timing.md gives each figure its source)',
  'built-in',
  smartosFigures,
);

export const BUILTIN_PROFILES: ReadonlyMap<string, TimingProfile> = new Map([
  [INSTANT.name, INSTANT],
  [SMARTOS.name, SMARTOS],
]);
