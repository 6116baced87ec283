/**
 * machine_migrate: the one task behind VMAPI's instance migrations (sdc-cn-agent
 * lib/backends/smartos/tasks/machine_migrate.js). VMAPI's workflows (sdc-vmapi
 * lib/workflows/migrate-{begin,sync,switch,abort,pause,rollback}.js and vm-migration/*.js,
 * lib/vm-migration/migrate.js for estimate and finalize) send it through CNAPI's
 * `POST /servers/:s/vms/:uuid/migrate`, with the step to take in `action`:
 *
 * - `sync` (source) / `receive` (target): start the sending / receiving migration process
 *   and finish with `{event: 'setup completed', host, pid, port}` (migration/send.ts,
 *   migration/receive.ts); VMAPI then drives the sync over those two sockets;
 * - `kill_migration_process` {pid, vm_uuid}: stop a migration process that ignored `stop`;
 * - `get-filesystem-details` {vm}: `{quotaStr, reservationStr}` of the zone dataset;
 *   `remove-zfs-quota` / `restore-zfs-quota` {vm}: the bhyve quota dance around a sync;
 * - `estimate` {vm}: `{size}` of what a first sync sends;
 * - `set-create-timestamp` {vm, vm_uuid}: the target keeps the source's creation time;
 * - `setup-filesystem` {vm, migrationTask}: mount the received datasets on the target;
 * - `remove-sync-snapshots` {vm, vm_uuid}: drop the `vm-migration-N` snapshots;
 * - `set-do-not-inventory`, `set-autoboot`, `set-indestructible-zoneroot`,
 *   `set-indestructible-delegated` {vm_uuid, value}: `vmadm update <vm_uuid> <key>=<value>`.
 *
 * No action moves a VM by itself: VMAPI's begin provisions the target VM (machine_create
 * with do_not_inventory), the syncs fill its datasets, the switch flips do_not_inventory
 * and autoboot on both VMs (the source one ends hidden, the target one visible), an abort or
 * rollback destroys the reserved target, and finalize destroys the hidden source. So at
 * every step both VM files exist, or the untouched source does.
 */
import { messageOf } from '../../../common/errors.js';
import { isUuid } from '../../../common/uuid.js';
import { defineTask, TaskError, type TaskContext, type TaskParams } from '../types.js';
import { childCrash } from '../task-support/child-crash.js';
import { MigrationReceiver } from '../migration/receive.js';
import { MigrationSender } from '../migration/send.js';
import { migrationState, sendSize, SNAPSHOT_PREFIX, vmOfDataset, zoneDataset } from '../migration/state.js';
import { invalid, isPlainObject } from '../task-support/params.js';
import { isVmNotFound } from '../vmadm-bridge/vm-common.js';

const GiB = 1024 * 1024 * 1024;

/** The `vmadm update <uuid> <key>=<value>` actions. */
const VMADM_UPDATES: Record<string, string> = {
  'set-do-not-inventory': 'do_not_inventory',
  'set-autoboot': 'autoboot',
  'set-indestructible-zoneroot': 'indestructible_zoneroot',
  'set-indestructible-delegated': 'indestructible_delegated',
};

interface MigrateParams {
  action: unknown;
  p: TaskParams;
  /** The VM a vmadm update or zonecfg acts on (locked for the task). */
  lockVm?: string;
}

type Obj = Record<string, unknown>;

/** What each action's real code asserts before it does anything (a failed one kills the task's child). */
function validate(p: TaskParams): MigrateParams {
  const crash = () => invalid(childCrash('machine_migrate'));
  const vm = p.vm;
  const record = isPlainObject(p.migrationTask) ? p.migrationTask.record : undefined;
  const need = (ok: boolean): void => {
    if (!ok) throw crash();
  };
  switch (p.action) {
    case 'get-filesystem-details':
    case 'estimate':
    case 'remove-zfs-quota':
      need(isPlainObject(vm));
      return { action: p.action, p };
    case 'restore-zfs-quota':
      need(isPlainObject(vm) && typeof vm.zfs_filesystem === 'string');
      return { action: p.action, p };
    case 'set-create-timestamp':
      need(isPlainObject(vm) && typeof vm.create_timestamp === 'string' && isUuid(p.vm_uuid));
      return { action: p.action, p, lockVm: String(p.vm_uuid).toLowerCase() };
    case 'remove-sync-snapshots':
      need(
        isUuid(p.vm_uuid) &&
          isPlainObject(vm) &&
          typeof vm.zfs_filesystem === 'string' &&
          isPlainObject(record) &&
          isUuid(record.target_vm_uuid),
      );
      return { action: p.action, p };
    case 'setup-filesystem':
      need(
        isPlainObject(vm) &&
          typeof vm.zfs_filesystem === 'string' &&
          typeof vm.zonepath === 'string' &&
          (vm.filesystems === undefined || (Array.isArray(vm.filesystems) && vm.filesystems.every(isPlainObject))) &&
          isPlainObject(record) &&
          isUuid(record.vm_uuid) &&
          isUuid(record.target_vm_uuid),
      );
      return { action: p.action, p };
    default:
      if (typeof p.action === 'string' && VMADM_UPDATES[p.action]) {
        need(isUuid(p.vm_uuid) && typeof p.value === 'string');
        return { action: p.action, p, lockVm: String(p.vm_uuid).toLowerCase() };
      }
      return { action: p.action, p };
  }
}

/** How `zfs` fails for a dataset this CN does not have (zfsError in the real task). */
function noDataset(prefix: string, command: string, dataset: string): TaskError {
  return new TaskError(`${prefix}: Command failed: ${command}\ncannot open '${dataset}': dataset does not exist\n`);
}

/** The zone dataset of `vm` as it is on this CN, or undefined. */
function zoneDatasetHere(ctx: TaskContext, dataset: string) {
  const vm = vmOfDataset(ctx.cn, dataset);
  return vm && zoneDataset(vm) === dataset ? vm : undefined;
}

/** The datasets of a VM object (zone dataset, and KVM's disks, which live beside it). */
function vmDatasets(vm: Obj): string[] {
  const out = [String(vm.zfs_filesystem)];
  if (vm.brand === 'kvm' && Array.isArray(vm.disks)) {
    for (const d of vm.disks as Obj[]) if (typeof d.zfs_filesystem === 'string') out.push(d.zfs_filesystem);
  }
  return out;
}

/** The real process's failure when the child dies on one of its own asserts. */
const EXIT_ERROR = 'machine-migrate exit error (code 1, signal null)';

async function run(ctx: TaskContext, m: MigrateParams): Promise<Obj> {
  const p = m.p;
  const state = migrationState(ctx);
  const vm = p.vm as Obj;
  switch (m.action) {
    case 'kill_migration_process': {
      const pid = p.pid;
      if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 1) {
        throw new TaskError('Invalid PID supplied to kill_migration_process task');
      }
      const proc = state.processes.get(pid);
      if (!proc) {
        ctx.log.debug({ proc_pid: pid }, 'process not running');
      } else if (proc.vmUuid !== p.vm_uuid) {
        ctx.log.warn({ proc_pid: pid }, 'Could not find migrate markers in argv');
      } else {
        proc.kill();
        ctx.log.info({ proc_pid: pid }, 'success - killed the cn-agent migrate process');
      }
      return {};
    }

    case 'sync':
    case 'receive': {
      const task = isPlainObject(p.migrationTask) ? p.migrationTask : undefined;
      if (typeof p.uuid !== 'string') throw new TaskError(EXIT_ERROR);
      if (m.action === 'sync' && (!task || (task.action !== 'sync' && task.action !== 'switch'))) {
        throw new TaskError(EXIT_ERROR);
      }
      const marker = String(p.vm_uuid ?? '');
      const proc = m.action === 'sync' ? new MigrationSender(ctx, marker, p) : new MigrationReceiver(ctx, marker);
      try {
        return await proc.listen(ctx.serverAddress.address);
      } catch (err) {
        proc.kill();
        throw new TaskError(messageOf(err));
      }
    }

    case 'get-filesystem-details': {
      const dataset = String(vm.zfs_filesystem);
      const here = zoneDatasetHere(ctx, dataset);
      if (!here) throw noDataset('zfs list failure', `/usr/sbin/zfs list -Hp -o quota,reservation ${dataset}`, dataset);
      const quota = state.quotaRemoved.has(dataset) ? 0 : (typeof here.quota === 'number' ? here.quota : 0) * GiB;
      // vmadm gives a bhyve zone dataset a reservation equal to its quota.
      const reservation = here.brand === 'bhyve' ? (typeof here.quota === 'number' ? here.quota : 0) * GiB : 0;
      return { quotaStr: String(quota), reservationStr: String(reservation) };
    }

    case 'remove-zfs-quota':
    case 'restore-zfs-quota': {
      const dataset = String(vm.zfs_filesystem);
      if (!zoneDatasetHere(ctx, dataset)) {
        throw m.action === 'remove-zfs-quota'
          ? noDataset('zfs set failure', `/usr/sbin/zfs set quota=none ${dataset}`, dataset)
          : noDataset('zfs list failure', `/usr/sbin/zfs list -Hp -o reservation ${dataset}`, dataset);
      }
      if (m.action === 'remove-zfs-quota') state.quotaRemoved.add(dataset);
      else state.quotaRemoved.delete(dataset);
      await state.save();
      return {};
    }

    case 'estimate': {
      let size = 0;
      for (const dataset of vmDatasets(vm)) {
        if (!vmOfDataset(ctx.cn, dataset)) {
          throw noDataset('zfs list error', `/usr/sbin/zfs list -p -r -H -o usedds ${dataset}`, dataset);
        }
        size += sendSize(ctx.cn, dataset, false);
      }
      return { size };
    }

    case 'set-create-timestamp': {
      const uuid = m.lockVm!;
      const ts = String(vm.create_timestamp);
      const store = ctx.cn.vms;
      const command = `/usr/sbin/zonecfg -z ${uuid} select attr name=create-timestamp; set value=${ts}; end;`;
      if (!store.setCreateTimestamp) throw new TaskError(`zonecfg failure: Command failed: ${command}\nzonecfg is not available\n`);
      try {
        await store.setCreateTimestamp(uuid, ts);
      } catch (err) {
        if (isVmNotFound(err)) throw new TaskError(`zonecfg failure: Command failed: ${command}\n${uuid}: No such zone configured\n`);
        throw new TaskError(`zonecfg failure: ${messageOf(err)}`);
      }
      return {};
    }

    case 'setup-filesystem': {
      const record = (p.migrationTask as Obj).record as Obj;
      let dataset = String(vm.zfs_filesystem);
      if (record.vm_uuid !== record.target_vm_uuid) dataset = dataset.split(String(record.vm_uuid)).join(String(record.target_vm_uuid));
      if (!vmOfDataset(ctx.cn, dataset) && !state.snapshots.has(dataset)) {
        throw new TaskError(`cannot open '${dataset}': dataset does not exist\n`);
      }
      ctx.log.debug('zfs mount %s', dataset);
      return {};
    }

    case 'remove-sync-snapshots': {
      let datasets = vmDatasets(vm);
      if (vm.uuid !== p.vm_uuid) datasets = datasets.map((d) => d.split(String(vm.uuid)).join(String(p.vm_uuid)));
      for (const dataset of datasets) {
        if (!vmOfDataset(ctx.cn, dataset) && !state.snapshots.has(dataset)) {
          throw noDataset('zfs list failure', `/usr/sbin/zfs list -t snapshot -r -H -o name ${dataset}`, dataset);
        }
      }
      for (const dataset of datasets) {
        const left = (state.snapshots.get(dataset) ?? []).filter((s) => !s.startsWith(SNAPSHOT_PREFIX));
        if (left.length > 0) state.snapshots.set(dataset, left);
        else state.snapshots.delete(dataset);
      }
      await state.save();
      return {};
    }

    default: {
      const key = typeof m.action === 'string' ? VMADM_UPDATES[m.action] : undefined;
      if (!key) throw new TaskError(`Unexpected payload.action: ${String(m.action)}`);
      const value = String(p.value);
      // vmadm's key=value arguments: true and false are booleans.
      const parsed = value === 'true' ? true : value === 'false' ? false : value;
      try {
        await ctx.cn.vms.update(m.lockVm!, { [key]: parsed });
      } catch (err) {
        throw new TaskError(`${messageOf(err)}\n`);
      }
      return {};
    }
  }
}

export const machineMigrate = defineTask<MigrateParams>({
  name: 'machine_migrate',
  queue: 'machine_tasks',
  changesVms: true,
  validate,
  vmLocks: (m) => (m.lockVm ? [m.lockVm] : []),
  run,
});
