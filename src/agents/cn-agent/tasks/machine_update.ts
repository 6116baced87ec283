/**
 * machine_update: vmadm update with the params CNAPI forwards, as the real task does
 * (sdc-cn-agent lib/backends/smartos/tasks/machine_update.js): vmadm removes, with a
 * warning in the task log, whatever the VM's brand cannot update (VMAPI's job fields, NAPI's
 * NIC fields, read-only keys). Adding or removing NICs reboots a running VM; the reply is
 * the VM as loaded before that reboot, as the real task answers it.
 */
import { defineTask } from '../types.js';
import { nodeVmadm } from '../vmadm-bridge/node-vmadm.js';
import { uuidParam } from '../task-support/params.js';
import { loadVm, vmadmCall } from '../vmadm-bridge/vm-common.js';

export const machineUpdate = defineTask<{ uuid: string }>({
  name: 'machine_update',
  queue: 'machine_tasks',
  changesVms: true,
  validate: (p) => ({ uuid: uuidParam(p, 'uuid') }),
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    const vms = nodeVmadm(ctx);
    await vmadmCall('vmadm.update', () => vms.update(p.uuid, ctx.rawParams));
    const vm = await loadVm(ctx, p.uuid);
    const nicsChanged = Object.hasOwn(ctx.rawParams, 'add_nics') || Object.hasOwn(ctx.rawParams, 'remove_nics');
    if (!nicsChanged || vm.state !== 'running') {
      ctx.progress(100);
      return { vm };
    }
    ctx.progress(75);
    await vmadmCall('vmadm.reboot', () => vms.reboot(p.uuid));
    ctx.progress(100);
    return { vm };
  },
});
