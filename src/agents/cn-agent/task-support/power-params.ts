/**
 * The params of machine_boot, machine_shutdown and machine_reboot: the VM, `idempotent`
 * (rebooting a VM that is not running is then no error), `force`, `timeout` and an optional
 * `update` applied first (boot, reboot); and what the tasks do with them.
 */
import type { StopOptions } from '../../../vmadm/types.js';
import type { TaskContext, TaskParams } from '../types.js';
import { nodeVmadm } from '../vmadm-bridge/node-vmadm.js';
import { flagParam, invalid, optObjectParam, uuidParam } from './params.js';
import { vmadmCall } from '../vmadm-bridge/vm-common.js';

export interface PowerParams {
  uuid: string;
  idempotent: boolean;
  force: boolean;
  timeout?: number;
  update?: Record<string, unknown>;
}

/** `timeout` as the real tasks take it: a number or a string of digits. */
function timeoutParam(p: TaskParams): number | undefined {
  const t = p.timeout;
  if (t === undefined || t === null || t === 0 || t === '' || t === false) return undefined;
  if (typeof t === 'number' && Number.isFinite(t)) return t;
  if (typeof t === 'string' && /^[0-9]+$/.test(t)) return Number(t);
  throw invalid(`Invalid type: "${typeof t}" for timeout`);
}

export function validatePower(p: TaskParams): PowerParams {
  const out: PowerParams = {
    uuid: uuidParam(p, 'uuid'),
    idempotent: flagParam(p, 'idempotent'),
    force: flagParam(p, 'force'),
  };
  const timeout = timeoutParam(p);
  if (timeout !== undefined) out.timeout = timeout;
  const update = optObjectParam(p, 'update');
  if (update) out.update = update;
  return out;
}

/** `vmadm stop` / `vmadm reboot`'s `-F` and `-t`. */
export function stopOptions(p: PowerParams): StopOptions {
  return { force: p.force, ...(p.timeout !== undefined ? { timeout: p.timeout } : {}) };
}

/** The params' `update`, applied before the VM is started (`before` says how, for the log). */
export async function updateFirst(ctx: TaskContext, p: PowerParams, before: 'starting' | 'rebooting'): Promise<void> {
  if (!p.update) return;
  ctx.log.info(`Updating vm before ${before}`);
  await vmadmCall('vmadm.update', () => nodeVmadm(ctx).update(p.uuid, p.update!));
}
