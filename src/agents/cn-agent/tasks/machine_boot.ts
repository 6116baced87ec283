/**
 * machine_boot (sdc-cn-agent lib/backends/smartos/tasks/machine_boot.js): `update` first,
 * then `vmadm start`. Starting a running VM is no error on a real CN (vmadm exits 0), so
 * the task answers `{vm}` with or without `idempotent`; the task keeps the real one's
 * idempotent path for a start that fails with EALREADYRUNNING.
 */
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
      await vmadmCall('vmadm.update', () => vms.update(p.uuid, p.update!));
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
