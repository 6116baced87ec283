/**
 * machine_update: vmadm update with every param CNAPI forwards; adding or removing NICs
 * reboots a running VM, and the reply is the VM *after* that reboot, which the dummy got wrong.
 */
import { pruneUpdatePayload } from '../../../vmadm/update.js';
import { defineTask } from '../types.js';
import { nodeVmadm } from './node-vmadm.js';
import { uuidParam } from './params.js';
import { loadVm, vmadmCall } from './vm-common.js';

export const machineUpdate = defineTask<{ uuid: string }>({
  name: 'machine_update',
  queue: 'machine_tasks',
  changesVms: true,
  validate: (p) => ({ uuid: uuidParam(p, 'uuid') }),
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    const vms = nodeVmadm(ctx);
    const { payload, dropped } = pruneUpdatePayload({ ...ctx.rawParams, uuid: p.uuid });
    if (dropped.length > 0) ctx.log.warn({ dropped }, 'invalid update properties removed from payload');
    await vmadmCall('vmadm.update', () => vms.update(p.uuid, payload));
    const vm = await loadVm(ctx, p.uuid);
    const nicsChanged = Object.hasOwn(ctx.rawParams, 'add_nics') || Object.hasOwn(ctx.rawParams, 'remove_nics');
    if (!nicsChanged || vm.state !== 'running') {
      ctx.progress(100);
      return { vm };
    }
    ctx.progress(75);
    await vmadmCall('vmadm.reboot', () => vms.reboot(p.uuid));
    ctx.progress(100);
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
