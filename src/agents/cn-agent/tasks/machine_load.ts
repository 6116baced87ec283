/**
 * machine_load: the VM object itself, as CNAPI's VmLoad returns it.
 */
import { defineTask } from '../types.js';
import { flagParam, uuidParam } from '../task-support/params.js';
import { vmadmError } from '../vmadm-bridge/vm-common.js';

export const machineLoad = defineTask<{ uuid: string; includeDni: boolean }>({
  name: 'machine_load',
  queue: 'machine_query',
  validate: (p) => ({ uuid: uuidParam(p, 'uuid'), includeDni: flagParam(p, 'include_dni') }),
  async run(ctx, p) {
    try {
      // The real dummy never passed include_dni, so DNI VMs looked missing; honour it.
      return { ...(await ctx.cn.vms.load(p.uuid, { include_dni: p.includeDni })) };
    } catch (err) {
      throw vmadmError('VM.load', err);
    }
  },
});
