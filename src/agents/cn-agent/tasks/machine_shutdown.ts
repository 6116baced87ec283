/**
 * machine_shutdown (sdc-cn-agent lib/backends/smartos/tasks/machine_shutdown.js):
 * `vmadm stop [-F] [-t timeout]`. Stopping a VM that is not running is no error on a real
 * CN (vmadm exits 0; a plain stop still sets autoboot=false), so the task answers `{vm}`
 * with or without `idempotent` (whose path, for ENOTRUNNING, a stop never reaches).
 */
import { defineTask } from '../types.js';
import { nodeVmadm } from '../vmadm-bridge/node-vmadm.js';
import { stopOptions, validatePower, type PowerParams } from '../task-support/power-params.js';
import { loadVm, vmadmCall } from '../vmadm-bridge/vm-common.js';

export const machineShutdown = defineTask<PowerParams>({
  name: 'machine_shutdown',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validatePower,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    await vmadmCall('vmadm.stop', () => nodeVmadm(ctx).stop(p.uuid, stopOptions(p)));
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
