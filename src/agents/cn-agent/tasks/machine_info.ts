/**
 * machine_info (sdc-cn-agent lib/backends/smartos/tasks/machine_info.js): node-vmadm's
 * `info` runs `vmadm info <uuid> [types]` and hands back what it printed, so the task
 * finishes with a string: the info object as `JSON.stringify(info, null, 2)` and a newline
 * (smartos-live vmadm.js getInfo). CNAPI's VmInfo passes that text on and its VmVnc
 * `JSON.parse`s it. Brands without info types (zones) fail with node-vmadm's
 * `vmadm exited with code: 1 signal: null`; vmadm's reason ("Unable to get VM info for VM
 * <uuid>: no info types supported for brand joyent") goes to the task log.
 */
import { defineTask } from '../types.js';
import { invalid, optArrayParam, uuidParam } from '../task-support/params.js';
import { nodeVmadm } from '../vmadm-bridge/node-vmadm.js';
import { vmadmError } from '../vmadm-bridge/vm-common.js';

export const machineInfo = defineTask<{ uuid: string; types: string[] }>({
  name: 'machine_info',
  queue: 'machine_query',
  validate: (p) => {
    const types = optArrayParam(p, 'types') ?? [];
    if (!types.every((t) => typeof t === 'string')) throw invalid('params.types must be an array of strings');
    return { uuid: uuidParam(p, 'uuid'), types: types as string[] };
  },
  async run(ctx, p) {
    const host = ctx.cn.sysinfo['Admin IP'];
    try {
      const info = await nodeVmadm(ctx).info(p.uuid, p.types, { host: typeof host === 'string' && host !== '' ? host : undefined });
      return `${JSON.stringify(info, null, 2)}\n`;
    } catch (err) {
      throw vmadmError('vmadm.info', err);
    }
  },
});
