/**
 * machine_delete_snapshot (sdc-cn-agent lib/backends/smartos/tasks/machine_delete_snapshot.js):
 * `vmadm delete-snapshot <uuid> <name>`, then `{vm}`. The real task lets an error whose
 * message matches "No snapshot named" pass, but node-vmadm on SmartOS reports every
 * failure as `vmadm exited with code: 1 signal: null` (vmadm's "No snapshot named ..." is
 * on stderr), so deleting a snapshot that does not exist fails on a real CN, and here.
 */
import { messageOf } from '../../../common/errors.js';
import { defineTask } from '../types.js';
import { nodeVmadm } from '../vmadm-bridge/node-vmadm.js';
import { validateSnapshot, type SnapshotParams } from '../task-support/params.js';
import { loadVm, vmadmError } from '../vmadm-bridge/vm-common.js';

export const machineDeleteSnapshot = defineTask<SnapshotParams>({
  name: 'machine_delete_snapshot',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validateSnapshot,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    try {
      await nodeVmadm(ctx).deleteSnapshot(p.uuid, p.name);
    } catch (err) {
      if (!/No snapshot named/.test(messageOf(err))) throw vmadmError('vmadm.delete_snapshot', err);
      ctx.log.info('snapshot %s of %s does not exist: nothing to delete', p.name, p.uuid);
    }
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
