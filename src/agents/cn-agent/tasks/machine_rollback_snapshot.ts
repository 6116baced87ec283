/**
 * machine_rollback_snapshot (sdc-cn-agent lib/backends/smartos/tasks/machine_rollback_snapshot.js):
 * `vmadm rollback-snapshot <uuid> <name>`, which halts the VM, rolls back and starts it
 * again (always: VMAPI's rollback workflow stops the VM first and relies on this), then
 * `{vm}`. A missing snapshot fails with node-vmadm's `vmadm exited with code: 1 signal: null`.
 */
import { defineTask } from '../types.js';
import { nodeVmadm } from '../vmadm-bridge/node-vmadm.js';
import { validateSnapshot, type SnapshotParams } from '../task-support/params.js';
import { loadVm, vmadmCall } from '../vmadm-bridge/vm-common.js';

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
