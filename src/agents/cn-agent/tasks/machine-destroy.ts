/**
 * machine_destroy and the snapshot tasks.
 *
 * machine_destroy waits for any task in flight on the VM (the per-VM lock replaces the real
 * agent's provision guard file), and a VM that is already gone is success: the task is
 * idempotent. machine_delete_snapshot likewise ignores a snapshot that is not there.
 */
import { defineTask, TaskError } from '../types.js';
import { snapshotNameParam, uuidParam } from './params.js';
import { isVmNotFound, loadVm, messageOf, restCodeOf, vmadmCall, vmadmError } from './vm-common.js';

export const machineDestroy = defineTask<{ uuid: string }>({
  name: 'machine_destroy',
  queue: 'machine_tasks',
  changesVms: true,
  validate: (p) => ({ uuid: uuidParam(p, 'uuid') }),
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    try {
      await ctx.cn.vms.delete(p.uuid);
    } catch (err) {
      if (isVmNotFound(err)) {
        ctx.log.info('VM %s does not exist: nothing to destroy', p.uuid);
        return {};
      }
      const restCode = restCodeOf(err);
      throw new TaskError(`delete error: ${messageOf(err)}`, restCode ? { restCode } : undefined);
    }
    return {};
  },
});

interface SnapshotParams {
  uuid: string;
  name: string;
}

const validateSnapshot = (p: Record<string, unknown>): SnapshotParams => ({
  uuid: uuidParam(p, 'uuid'),
  name: snapshotNameParam(p),
});

export const machineCreateSnapshot = defineTask<SnapshotParams>({
  name: 'machine_create_snapshot',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validateSnapshot,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    await vmadmCall('vmadm.create_snapshot', () => ctx.cn.vms.createSnapshot(p.uuid, p.name));
    return { vm: await loadVm(ctx, p.uuid) };
  },
});

export const machineDeleteSnapshot = defineTask<SnapshotParams>({
  name: 'machine_delete_snapshot',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validateSnapshot,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    try {
      await ctx.cn.vms.deleteSnapshot(p.uuid, p.name);
    } catch (err) {
      if (!/No snapshot named/.test(messageOf(err))) throw vmadmError('vmadm.delete_snapshot', err);
      ctx.log.info('snapshot %s of %s does not exist: nothing to delete', p.name, p.uuid);
    }
    return { vm: await loadVm(ctx, p.uuid) };
  },
});

export const machineRollbackSnapshot = defineTask<SnapshotParams>({
  name: 'machine_rollback_snapshot',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validateSnapshot,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    await vmadmCall('vmadm.rollback_snapshot', () => ctx.cn.vms.rollbackSnapshot(p.uuid, p.name));
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
