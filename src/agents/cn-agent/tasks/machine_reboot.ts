/**
 * machine_reboot (sdc-cn-agent lib/backends/smartos/tasks/machine_reboot.js): `update` first,
 * then `vmadm reboot [-F]`; with `idempotent`, a VM that is not running is no error.
 */
import { defineTask } from '../types.js';
import { nodeVmadm } from '../vmadm-bridge/node-vmadm.js';
import { stopOptions, updateFirst, validatePower, type PowerParams } from '../task-support/power-params.js';
import { isNotRunning, loadVm, vmadmError } from '../vmadm-bridge/vm-common.js';

export const machineReboot = defineTask<PowerParams>({
  name: 'machine_reboot',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validatePower,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    await updateFirst(ctx, p, 'rebooting');
    try {
      await nodeVmadm(ctx).reboot(p.uuid, stopOptions(p));
    } catch (err) {
      if (!(p.idempotent && isNotRunning(err))) throw vmadmError('vmadm.reboot', err);
      ctx.log.warn({ err }, 'ignoring vmadm.reboot() failure, idempotent flag set');
    }
    ctx.progress(100);
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
