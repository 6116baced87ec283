/**
 * machine_boot, machine_shutdown, machine_reboot and machine_kill: optionally `update`
 * first (boot, reboot), the state change, then `{vm}` as loaded afterwards. With
 * `idempotent`, starting a running VM / stopping a stopped one is not an error.
 */
import { defineTask, type TaskParams } from '../types.js';
import { flagParam, invalid, optObjectParam, uuidParam } from './params.js';
import { isAlreadyRunning, isNotRunning, loadVm, vmadmCall, vmadmError } from './vm-common.js';

interface PowerParams {
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

function validatePower(p: TaskParams): PowerParams {
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

export const machineBoot = defineTask<PowerParams>({
  name: 'machine_boot',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validatePower,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    const vms = ctx.cn.vms;
    if (p.update) {
      ctx.log.info('Updating vm before starting');
      await vmadmCall('vmadm.update', () => vms.update(p.uuid, { ...p.update, uuid: p.uuid }));
    }
    try {
      await vms.start(p.uuid);
    } catch (err) {
      if (!(p.idempotent && isAlreadyRunning(err))) throw vmadmError('vmadm.start', err);
      ctx.log.warn({ err }, 'ignoring vmadm.start() failure, idempotent flag set');
    }
    return { vm: await loadVm(ctx, p.uuid) };
  },
});

export const machineShutdown = defineTask<PowerParams>({
  name: 'machine_shutdown',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validatePower,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    try {
      await ctx.cn.vms.stop(p.uuid, { force: p.force, ...(p.timeout !== undefined ? { timeout: p.timeout } : {}) });
    } catch (err) {
      if (!(p.idempotent && isNotRunning(err))) throw vmadmError('vmadm.stop', err);
      ctx.log.warn({ err }, 'ignoring vmadm.stop() failure, idempotent flag set');
    }
    return { vm: await loadVm(ctx, p.uuid) };
  },
});

export const machineReboot = defineTask<PowerParams>({
  name: 'machine_reboot',
  queue: 'machine_tasks',
  changesVms: true,
  validate: validatePower,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    const vms = ctx.cn.vms;
    if (p.update) {
      ctx.log.info('Updating vm before rebooting');
      await vmadmCall('vmadm.update', () => vms.update(p.uuid, { ...p.update, uuid: p.uuid }));
    }
    try {
      await vms.reboot(p.uuid, { force: p.force, ...(p.timeout !== undefined ? { timeout: p.timeout } : {}) });
    } catch (err) {
      if (!(p.idempotent && isNotRunning(err))) throw vmadmError('vmadm.reboot', err);
      ctx.log.warn({ err }, 'ignoring vmadm.reboot() failure, idempotent flag set');
    }
    ctx.progress(100);
    return { vm: await loadVm(ctx, p.uuid) };
  },
});

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
      await ctx.cn.vms.kill(p.uuid, p.signal !== undefined ? { signal: p.signal } : {});
    } catch (err) {
      if (!(p.idempotent && isNotRunning(err))) throw vmadmError('vmadm.kill', err);
      ctx.log.warn({ err }, 'ignoring vmadm.kill() failure, idempotent flag set');
    }
    return { vm: await loadVm(ctx, p.uuid) };
  },
});
