/**
 * What the real tasks call: node-vmadm (lib/index.sunos.js) in front of the CN's vmadm (the
 * VmStore). Two things of node-vmadm's show through to a consumer:
 *
 * - Before every operation on one VM, its ifExists() checks that the VM is there and, unless
 *   the caller passes `include_dni`, is not do_not_inventory; otherwise the operation fails
 *   with 'VM does not exist' (restCode VmNotFound) and vmadm never runs. The real tasks hand
 *   their own params on to node-vmadm, so `include_dni` in a task's params (true, or 'true' as
 *   the tasks that read it accept) decides; without it a DNI VM is missing to every task.
 * - On SmartOS it runs the `vmadm` command, so a failure is the command's: see vmadm-cli.ts
 *   (create, delete, start, stop, reboot, kill, update, reprovision, info and the snapshot
 *   commands go through it).
 */
import { MockcloudError } from '../../../common/errors.js';
import type { StopOptions, Vm, VmStore } from '../../../vmadm/types.js';
import type { TaskContext } from '../types.js';
import { viaVmadm, type CliCall, type VmjsRecord } from './vmadm-cli.js';

export interface NodeVmadm {
  /** vmadm.create: the payload on stdin, no existence check. */
  create(payload: Record<string, unknown>): Promise<Vm>;
  /** vmadm.load: a DNI VM is "No such zone" unless include_dni. */
  load(uuid: string): Promise<Vm>;
  exists(uuid: string): Promise<boolean>;
  update(uuid: string, payload: Record<string, unknown>): Promise<Vm>;
  delete: VmStore['delete'];
  start(uuid: string): Promise<Vm>;
  stop(uuid: string, opts?: StopOptions): Promise<Vm>;
  reboot: VmStore['reboot'];
  kill: VmStore['kill'];
  reprovision: VmStore['reprovision'];
  createSnapshot(uuid: string, name: string): Promise<Vm>;
  deleteSnapshot(uuid: string, name: string): Promise<Vm>;
  rollbackSnapshot(uuid: string, name: string): Promise<Vm>;
  info(uuid: string, types: string[], opts?: { host?: string | undefined }): Promise<Record<string, unknown>>;
}

/** `include_dni` as the real tasks read it from their params. */
export function includeDni(ctx: Pick<TaskContext, 'rawParams'>): boolean {
  const v = ctx.rawParams.include_dni;
  return v === true || v === 'true';
}

function vmDoesNotExist(): MockcloudError {
  return new MockcloudError('VmNotFound', 'VM does not exist', { restCode: 'VmNotFound' });
}

export function nodeVmadm(ctx: Pick<TaskContext, 'cn' | 'rawParams' | 'log' | 'reqId'> & Partial<Pick<TaskContext, 'waitHooks'>>): NodeVmadm {
  const vms = ctx.cn.vms;
  const dni = includeDni(ctx);
  // A paced operation gives the task's working place back while the VM only takes time.
  const hooks = ctx.waitHooks;
  const ifExists = (uuid: string): void => {
    const vm = vms.get(uuid, { include_dni: true });
    if (!vm || (vm.do_not_inventory === true && !dni)) throw vmDoesNotExist();
  };
  /** An operation on one VM: ifExists(), then the store. */
  const op = async <T>(uuid: string, fn: () => Promise<T>): Promise<T> => {
    ifExists(uuid);
    return fn();
  };
  /** The same, run as the `vmadm` command (its failure as node-vmadm reports it). */
  const cli = <T>(uuid: string, call: CliCall, fn: () => Promise<T>): Promise<T> => op(uuid, () => viaVmadm(ctx.log, call, fn));
  /** The record VM.js logs first for create and update (vmadm-cli.ts). */
  const opening = (msg: string, fields?: Record<string, unknown>): VmjsRecord => ({
    hostname: ctx.cn.sysinfo.Hostname,
    reqId: ctx.reqId,
    msg,
    ...(fields ? { fields } : {}),
  });
  return {
    create: (payload) =>
      viaVmadm(
        ctx.log,
        { args: ['create'], shape: 'create', opening: opening(`Creating VM, original payload:\n${JSON.stringify(payload, null, 2)}`) },
        () => vms.create(payload, { log: ctx.log, hooks }),
      ),
    load: (uuid) => vms.load(uuid, { include_dni: dni }),
    exists: (uuid) => vms.exists(uuid, { include_dni: dni }),
    update: (uuid, payload) =>
      cli(
        uuid,
        {
          args: ['update', uuid],
          shape: 'stderr',
          opening: opening(`Updating VM ${uuid} with initial payload:\n${JSON.stringify(payload, null, 2)}`, { action: 'update', vm: uuid }),
        },
        () => vms.update(uuid, { ...payload, uuid }, { log: ctx.log }),
      ),
    delete: (uuid) => cli(uuid, { args: ['delete', uuid] }, () => vms.delete(uuid, { hooks })),
    start: (uuid) => cli(uuid, { args: ['start', uuid] }, () => vms.start(uuid, { hooks })),
    stop: (uuid, opts = {}) => {
      const args = ['stop', uuid, ...(opts.force ? ['-F'] : []), ...(opts.timeout ? ['-t', String(opts.timeout)] : [])];
      return cli(uuid, { args }, () => vms.stop(uuid, { ...opts, hooks }));
    },
    reboot: (uuid, opts = {}) => cli(uuid, { args: ['reboot', uuid, ...(opts.force ? ['-F'] : [])] }, () => vms.reboot(uuid, { ...opts, hooks })),
    kill: (uuid, opts = {}) =>
      cli(uuid, { args: ['kill', ...(opts.signal ? ['-s', opts.signal] : []), uuid], keepErrCode: true }, () => vms.kill(uuid, opts)),
    reprovision: (uuid, opts) =>
      cli(
        uuid,
        {
          args: ['reprovision', uuid],
          shape: 'stderr',
          opening: opening(`Reprovisioning VM ${uuid}`, { action: 'reprovision', vm: uuid, payload: { ...opts, uuid } }),
        },
        () => vms.reprovision(uuid, { ...opts, hooks }),
      ),
    createSnapshot: (uuid, name) => cli(uuid, { args: ['create-snapshot', uuid, name] }, () => vms.createSnapshot(uuid, name)),
    deleteSnapshot: (uuid, name) => cli(uuid, { args: ['delete-snapshot', uuid, name] }, () => vms.deleteSnapshot(uuid, name)),
    rollbackSnapshot: (uuid, name) => cli(uuid, { args: ['rollback-snapshot', uuid, name] }, () => vms.rollbackSnapshot(uuid, name)),
    info: (uuid, types, opts = {}) => {
      const args = ['info', uuid, ...(types.length > 0 ? [types.join(',')] : [])];
      return cli(uuid, { args, stderrPrefix: `Unable to get VM info for VM ${uuid}: ` }, () => vms.info(uuid, types, opts));
    },
  };
}
