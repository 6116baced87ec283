/**
 * machine_reprovision: the stepped task (`pre_check`, `ensure_dataset_present`,
 * `fetch_dataset` when the CN does not have the image, `reprovision_machine`), then `{vm}`.
 */
import { defineTask, TaskError } from '../types.js';
import { imageFileBytes, isImageInstalled, markImageInstalled } from '../images/installed.js';
import { nodeVmadm } from '../vmadm-bridge/node-vmadm.js';
import { optStringParam, uuidParam } from '../task-support/params.js';
import { loadVm, vmadmCall } from '../vmadm-bridge/vm-common.js';

export interface ReprovisionParams {
  uuid: string;
  imageUuid: string;
}

export const machineReprovision = defineTask<ReprovisionParams>({
  name: 'machine_reprovision',
  queue: 'machine_creation',
  changesVms: true,
  validate: (p) => {
    optStringParam(p, 'zfs_storage_pool_name');
    return { uuid: uuidParam(p, 'uuid'), imageUuid: uuidParam(p, 'image_uuid') };
  },
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    await ctx.step('pre_check', 'Pre-flight sanity check', 20, async () => {
      if (!(await nodeVmadm(ctx).exists(p.uuid))) {
        throw new TaskError(`VM ${p.uuid} does not exist.`);
      }
    });
    const found = await ctx.step('ensure_dataset_present', 'Checking for zone template dataset', 30, async () => {
      const installed = isImageInstalled(ctx, p.imageUuid);
      ctx.log.info(installed ? `Dataset ${p.imageUuid} exists.` : "Dataset template didn't appear to exist.");
      return installed;
    });
    if (!found) {
      await ctx.step(
        'fetch_dataset',
        'Fetching zone template dataset',
        50,
        async () => markImageInstalled(ctx, p.imageUuid),
        imageFileBytes(ctx.rawParams.image),
      );
    }
    await ctx.step('reprovision_machine', 'Reprovisioning machine', 100, () =>
      vmadmCall('vmadm.reprovision', () => nodeVmadm(ctx).reprovision(p.uuid, { image_uuid: p.imageUuid })),
    );
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
