/**
 * machine_screenshot: the real task asks node-vmadm's `sysrq` for a `screenshot` and would
 * send the picture as a `screenshot` event. node-vmadm (1.3.0, the version cn-agent ships)
 * first checks that the VM exists, then runs `vmadm sysreq <uuid> screenshot`; vmadm has no
 * `sysreq` command, prints its usage and exits 2. So on a real CN the task fails for every VM
 * that exists, whatever its brand or state, and with VmNotFound for one that does not (a
 * do_not_inventory VM counts as missing: the task passes no include_dni).
 */
import { defineTask, TaskError } from '../types.js';
import { uuidParam } from '../task-support/params.js';

export const machineScreenshot = defineTask<{ uuid: string }>({
  name: 'machine_screenshot',
  queue: 'machine_tasks',
  validate: (p) => ({ uuid: uuidParam(p, 'uuid') }),
  async run(ctx, p) {
    if (!(await ctx.cn.vms.exists(p.uuid, {}))) {
      throw new TaskError('vmadm.sysrq error: VM does not exist', { restCode: 'VmNotFound' });
    }
    ctx.log.error('vmadm exited with code: 2 signal: null');
    throw new TaskError('vmadm.sysrq error: vmadm exited with code: 2 signal: null');
  },
});
