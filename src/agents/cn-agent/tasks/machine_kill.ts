import { defineTask } from '../types.js';
import { flagParam, invalid, uuidParam } from '../task-support/params.js';
import { isNotRunning, loadVm, vmadmError } from '../vmadm-bridge/vm-common.js';
import { nodeVmadm } from '../vmadm-bridge/node-vmadm.js';

interface KillParams {
  uuid: string;
  idempotent: boolean;
  signal?: string;
}

export const machineKill = defineTask<KillParams>({
  name: 'machine_kill',
  queue: 'machine_tasks',
  changesVms: true,
  validate: (p) => {
    const out: KillParams = { uuid: uuidParam(p, 'uuid'), idempotent: flagParam(p, 'idempotent') };
    const s = p.signal;
    if (s !== undefined && s !== null && s !== '') {
      if (typeof s === 'number' && Number.isInteger(s)) out.signal = String(s);
      else if (typeof s === 'string' && /^[A-Za-z0-9]{1,16}$/.test(s)) out.signal = s;
      else throw invalid('params.signal must be a signal name or number');
    }
    return out;
  },
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    try {
      await nodeVmadm(ctx).kill(p.uuid, p.signal !== undefined ? { signal: p.signal } : {});
    } catch (err) {
      if (!(p.idempotent && isNotRunning(err))) throw vmadmError('vmadm.kill', err);
      ctx.log.warn({ err }, 'ignoring vmadm.kill() failure, idempotent flag set');
    }
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
