/**
 * The params of machine_boot, machine_shutdown and machine_reboot: the VM, `idempotent`
 * (starting a running VM / stopping a stopped one is not an error), `force`, `timeout` and an
 * optional `update` applied first (boot, reboot).
 */
import type { TaskParams } from '../types.js';
import { flagParam, invalid, optObjectParam, uuidParam } from './params.js';

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
