/**
 * machine_shutdown (sdc-cn-agent lib/backends/smartos/tasks/machine_shutdown.js):
 * `vmadm stop [-F] [-t timeout]`. Stopping a VM that is not running is no error on a real
 * CN (vmadm exits 0; a plain stop still sets autoboot=false), so the task answers `{vm}`
 * with or without `idempotent`; the real one's idempotent path stays for ENOTRUNNING/ESRCH.
 */
import { defineTask } from '../types.js';
import { nodeVmadm } from './node-vmadm.js';
import { validatePower, type PowerParams } from './power-params.js';
import { isNotRunning, loadVm, vmadmError } from './vm-common.js';

export const machineShutdown = defineTask<PowerParams>({
  name: 'machine_shutdown',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validatePower,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    try {
      await nodeVmadm(ctx).stop(p.uuid, { force: p.force, ...(p.timeout !== undefined ? { timeout: p.timeout } : {}) });
    } catch (err) {
      if (!(p.idempotent && isNotRunning(err))) throw vmadmError('vmadm.stop', err);
      ctx.log.warn({ err }, 'ignoring vmadm.stop() failure, idempotent flag set');
    }
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
