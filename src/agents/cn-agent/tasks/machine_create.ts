/**
 * machine_create: the stepped task, with the real event sequence (`start:pre_check` …
 * `end:create_machine` and progress 20/30/50/60/100; fetch_dataset only for an image the
 * CN does not have yet). Like the real task
 * (sdc-cn-agent lib/backends/smartos/tasks/machine_create.js), the params go to vmadm
 * create as they are: vmadm keeps every property the brand takes (docker's `docker`,
 * `filesystems` and internal_metadata included) and removes the rest with a warning in
 * the task log.
 */
import { messageOf } from '../../../common/errors.js';
import type { Vm } from '../../../vmadm/types.js';
import { defineTask, TaskError, type TaskContext, type TaskParams } from '../types.js';
import { imageFileBytes, isImageInstalled, markImageInstalled } from '../images/installed.js';
import { includeDni, nodeVmadm } from '../vmadm-bridge/node-vmadm.js';
import { invalid, isPlainObject, optStringParam, uuidParam } from '../task-support/params.js';
import { restCodeOf } from '../vmadm-bridge/vm-common.js';

export interface CreateParams {
  uuid: string;
  brand: string;
  imageUuid: string | undefined;
}

function validateCreate(p: TaskParams): CreateParams {
  const uuid = uuidParam(p, 'uuid');
  const brand = optStringParam(p, 'brand') ?? 'joyent';
  if (p.nics !== undefined && !Array.isArray(p.nics) && !(isPlainObject(p.nics) && Object.keys(p.nics).length === 0)) {
    throw invalid('params.nics must be an array');
  }
  if (Array.isArray(p.nics) && !p.nics.every(isPlainObject)) throw invalid('params.nics must be an array of objects');
  if (p.disks !== undefined && !Array.isArray(p.disks) && !(isPlainObject(p.disks) && Object.keys(p.disks).length === 0)) {
    throw invalid('params.disks must be an array');
  }
  if (Array.isArray(p.disks) && !p.disks.every(isPlainObject)) throw invalid('params.disks must be an array of objects');
  return { uuid, brand, imageUuid: imageOfPayload(p) };
}

/** The image a create payload boots from: `image_uuid`, or the boot disk's for HVM. */
function imageOfPayload(p: TaskParams): string | undefined {
  if (typeof p.image_uuid === 'string') return p.image_uuid.toLowerCase();
  if (Array.isArray(p.disks)) {
    const d = p.disks.find((x) => isPlainObject(x) && typeof x.image_uuid === 'string') as { image_uuid?: string } | undefined;
    return d?.image_uuid?.toLowerCase();
  }
  return undefined;
}

export const machineCreate = defineTask<CreateParams>({
  name: 'machine_create',
  queue: 'machine_creation',
  changesVms: true,
  validate: validateCreate,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    const vms = ctx.cn.vms;
    let failure: unknown;
    try {
      await ctx.step('pre_check', 'Pre-flight sanity check', 20, async () => {
        if (await vms.exists(p.uuid, { include_dni: true })) throw new TaskError(`Machine ${p.uuid} exists.`);
      });
      // The real task lists `<zpool>/<image>` and runs fetch_dataset only when it is missing.
      const dataset = `${typeof ctx.rawParams.zpool === 'string' ? ctx.rawParams.zpool : 'zones'}/${String(p.imageUuid)}`;
      const found = await ctx.step('ensure_dataset_present', 'Checking for zone template dataset', 30, async () => {
        ctx.log.info(`Checking whether zone template dataset ${dataset} exists on the system.`);
        const installed = p.imageUuid !== undefined && isImageInstalled(ctx, p.imageUuid);
        ctx.log.info(installed ? `Dataset ${dataset} exists.` : "Dataset template didn't appear to exist.");
        return installed;
      });
      if (!found) {
        // The import takes its time for the image's bytes (VMAPI's payload carries the image).
        const bytes = imageFileBytes(ctx.rawParams.image);
        await ctx.step(
          'fetch_dataset',
          'Fetching zone template dataset',
          50,
          async () => {
            // A mock CN holds no image data: the image counts as imported from here on.
            if (p.imageUuid) markImageInstalled(ctx, p.imageUuid);
          },
          bytes,
        );
      }
      await ctx.step('add_firewall_rules', 'Adding firewall rules', 60, async () => {
        const rules = ctx.rawParams.firewall_rules;
        if (!Array.isArray(rules)) ctx.log.info('No firewall_rules property in params: not adding');
        else if (rules.length === 0) ctx.log.info('No firewall rules to add in params');
        // A mock CN runs no firewaller: the rules are not applied (docs/differences.md).
        else ctx.log.info({ rules: rules.length }, 'firewall rules not applied: a mock CN has no firewaller');
      });
      const vm = await ctx.step('create_machine', 'Creating machine', 100, () => nodeVmadm(ctx).create({ ...ctx.rawParams, uuid: p.uuid }));
      return await finishValue(ctx, vm.uuid);
    } catch (err) {
      failure = err;
    }
    // Like the real task: a VM that exists after a failed create is returned with the error.
    const existing = failure instanceof TaskError ? undefined : vms.get(p.uuid, { include_dni: includeDni(ctx) });
    if (failure instanceof TaskError) throw failure;
    const restCode = restCodeOf(failure);
    throw new TaskError(messageOf(failure), restCode ? { restCode } : undefined, existing ? { vm: existing } : undefined);
  },
});

/**
 * The real task ends by loading the VM as node-vmadm does (include_dni as its params say):
 * `{vm}`, or `{}` when that load fails, e.g. for a DNI VM created without include_dni.
 */
async function finishValue(ctx: TaskContext, uuid: string): Promise<{ vm?: Vm }> {
  try {
    return { vm: await nodeVmadm(ctx).load(uuid) };
  } catch (err) {
    ctx.log.error(messageOf(err));
    return {};
  }
}
