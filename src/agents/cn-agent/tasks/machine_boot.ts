import { defineTask } from '../types.js';
import { nodeVmadm } from './node-vmadm.js';
import { validatePower, type PowerParams } from './power-params.js';
import { isAlreadyRunning, loadVm, vmadmCall, vmadmError } from './vm-common.js';

export const machineBoot = defineTask<PowerParams>({
  name: 'machine_boot',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validatePower,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    const vms = nodeVmadm(ctx);
    if (p.update) {
      ctx.log.info('Updating vm before starting');
      await vmadmCall('vmadm.update', () => vms.update(p.uuid, { ...p.update, uuid: p.uuid }));
    }
    try {
      await vms.start(p.uuid);
    } catch (err) {
      if (!(p.idempotent && isAlreadyRunning(err))) throw vmadmError('vmadm.start', err);
      ctx.log.warn({ err }, 'ignoring vmadm.start() failure, idempotent flag set');
    }
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
