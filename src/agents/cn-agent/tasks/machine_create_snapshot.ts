/**
 * machine_create_snapshot (sdc-cn-agent lib/backends/smartos/tasks/machine_create_snapshot.js):
 * `vmadm create-snapshot <uuid> <name>` through node-vmadm, then `{vm}`; a failure is
 * node-vmadm's `vmadm exited with code: 1 signal: null` (vmadm's reason in the task log).
 */
import { defineTask } from '../types.js';
import { nodeVmadm } from '../vmadm-bridge/node-vmadm.js';
import { validateSnapshot, type SnapshotParams } from '../task-support/params.js';
import { loadVm, vmadmCall } from '../vmadm-bridge/vm-common.js';

export const machineCreateSnapshot = defineTask<SnapshotParams>({
  name: 'machine_create_snapshot',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validateSnapshot,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    await vmadmCall('vmadm.create_snapshot', () => nodeVmadm(ctx).createSnapshot(p.uuid, p.name));
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
