import { defineTask } from '../types.js';
import { nodeVmadm } from './node-vmadm.js';
import { validatePower, type PowerParams } from './power-params.js';
import { isNotRunning, loadVm, vmadmCall, vmadmError } from './vm-common.js';

export const machineReboot = defineTask<PowerParams>({
  name: 'machine_reboot',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validatePower,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    const vms = nodeVmadm(ctx);
    if (p.update) {
      ctx.log.info('Updating vm before rebooting');
      await vmadmCall('vmadm.update', () => vms.update(p.uuid, { ...p.update, uuid: p.uuid }));
    }
    try {
      await vms.reboot(p.uuid, { force: p.force, ...(p.timeout !== undefined ? { timeout: p.timeout } : {}) });
    } catch (err) {
      if (!(p.idempotent && isNotRunning(err))) throw vmadmError('vmadm.reboot', err);
      ctx.log.warn({ err }, 'ignoring vmadm.reboot() failure, idempotent flag set');
    }
    ctx.progress(100);
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
