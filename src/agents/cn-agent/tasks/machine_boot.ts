/**
 * machine_boot (sdc-cn-agent lib/backends/smartos/tasks/machine_boot.js): `update` first,
 * then `vmadm start`. Starting a running VM is no error on a real CN (vmadm exits 0), so the
 * task answers `{vm}` with or without `idempotent` (whose path, for EALREADYRUNNING, a start
 * never reaches).
 */
import { defineTask } from '../types.js';
import { nodeVmadm } from '../vmadm-bridge/node-vmadm.js';
import { updateFirst, validatePower, type PowerParams } from '../task-support/power-params.js';
import { loadVm, vmadmCall } from '../vmadm-bridge/vm-common.js';

export const machineBoot = defineTask<PowerParams>({
  name: 'machine_boot',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validatePower,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    await updateFirst(ctx, p, 'starting');
    await vmadmCall('vmadm.start', () => nodeVmadm(ctx).start(p.uuid));
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
