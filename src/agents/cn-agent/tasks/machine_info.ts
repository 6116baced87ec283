/**
 * machine_info: vmadm info.
 */
import { defineTask } from '../types.js';
import { invalid, optArrayParam, uuidParam } from './params.js';
import { nodeVmadm } from './node-vmadm.js';
import { vmadmError } from './vm-common.js';

export const machineInfo = defineTask<{ uuid: string; types: string[] }>({
  name: 'machine_info',
  queue: 'machine_query',
  validate: (p) => {
    const types = optArrayParam(p, 'types') ?? [];
    if (!types.every((t) => typeof t === 'string')) throw invalid('params.types must be an array of strings');
    return { uuid: uuidParam(p, 'uuid'), types: types as string[] };
  },
  async run(ctx, p) {
    try {
      return await nodeVmadm(ctx).info(p.uuid, p.types);
    } catch (err) {
      throw vmadmError('vmadm.info', err);
    }
  },
});
