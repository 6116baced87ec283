import { defineTask } from '../types.js';
import { nodeVmadm } from './node-vmadm.js';
import { validateSnapshot, type SnapshotParams } from './params.js';
import { loadVm, vmadmCall } from './vm-common.js';

export const machineRollbackSnapshot = defineTask<SnapshotParams>({
  name: 'machine_rollback_snapshot',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validateSnapshot,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    await vmadmCall('vmadm.rollback_snapshot', () => nodeVmadm(ctx).rollbackSnapshot(p.uuid, p.name));
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
