import { defineTask, TaskError } from '../types.js';
import { optStringParam } from '../task-support/params.js';

/**
 * server_overprovision_ratio: a real CN writes `overprovision_ratio` into its node config;
 * a mock CN remembers the value (in memory) and succeeds.
 */
export const serverOverprovisionRatio = defineTask<{ value: string | undefined }>({
  name: 'server_overprovision_ratio',
  queue: 'server_tasks',
  validate: (p) => {
    const v = p.value;
    if (typeof v === 'number' && Number.isFinite(v)) return { value: String(v) };
    return { value: optStringParam(p, 'value') };
  },
  async run(ctx, p) {
    if (!p.value) throw new TaskError('no value given');
    ctx.state.overprovisionRatio = p.value;
    ctx.log.info('overprovision_ratio set to %s', p.value);
    return {};
  },
});
