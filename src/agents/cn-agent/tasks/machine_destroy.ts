/**
 * machine_destroy waits for any task in flight on the VM (the per-VM lock replaces the real
 * agent's provision guard file), and a VM that is already gone is success: the task is
 * idempotent.
 */
import { messageOf } from '../../../common/errors.js';
import { defineTask, TaskError } from '../types.js';
import { nodeVmadm } from '../vmadm-bridge/node-vmadm.js';
import { uuidParam } from '../task-support/params.js';
import { isVmNotFound, restCodeOf } from '../vmadm-bridge/vm-common.js';

export const machineDestroy = defineTask<{ uuid: string }>({
  name: 'machine_destroy',
  queue: 'machine_tasks',
  changesVms: true,
  validate: (p) => ({ uuid: uuidParam(p, 'uuid') }),
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    try {
      await nodeVmadm(ctx).delete(p.uuid);
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
