/**
 * What the real tasks call: node-vmadm (lib/index.sunos.js) in front of the CN's vmadm (the
 * VmStore). Before every operation on one VM, node-vmadm's ifExists() checks that the VM is
 * there and, unless the caller passes `include_dni`, is not do_not_inventory; otherwise the
 * operation fails with 'VM does not exist' (restCode VmNotFound) and vmadm never runs. The
 * real tasks hand their own params on to node-vmadm, so `include_dni` in a task's params
 * (true, or 'true' as the tasks that read it accept) decides; without it a DNI VM is missing
 * to every task.
 */
import { MockcloudError } from '../../../common/errors.js';
import type { Vm, VmStore } from '../../../vmadm/types.js';
import type { TaskContext } from '../types.js';

type VmOp<A extends unknown[], R> = (uuid: string, ...args: A) => Promise<R>;

export interface NodeVmadm {
  /** vmadm.load: a DNI VM is "No such zone" unless include_dni. */
  load(uuid: string): Promise<Vm>;
  exists(uuid: string): Promise<boolean>;
  update: VmStore['update'];
  delete: VmStore['delete'];
  start: VmStore['start'];
  stop: VmStore['stop'];
  reboot: VmStore['reboot'];
  kill: VmStore['kill'];
  reprovision: VmStore['reprovision'];
  createSnapshot: VmStore['createSnapshot'];
  deleteSnapshot: VmStore['deleteSnapshot'];
  rollbackSnapshot: VmStore['rollbackSnapshot'];
  info: VmStore['info'];
}

/** `include_dni` as the real tasks read it from their params. */
export function includeDni(ctx: Pick<TaskContext, 'rawParams'>): boolean {
  const v = ctx.rawParams.include_dni;
  return v === true || v === 'true';
}

function vmDoesNotExist(): MockcloudError {
  return new MockcloudError('VmNotFound', 'VM does not exist', { restCode: 'VmNotFound' });
}

export function nodeVmadm(ctx: Pick<TaskContext, 'cn' | 'rawParams'>): NodeVmadm {
  const vms = ctx.cn.vms;
  const dni = includeDni(ctx);
  const guarded =
    <A extends unknown[], R>(op: VmOp<A, R>): VmOp<A, R> =>
    async (uuid, ...args) => {
      const vm = vms.get(uuid, { include_dni: true });
      if (!vm || (vm.do_not_inventory === true && !dni)) throw vmDoesNotExist();
      return op.call(vms, uuid, ...args);
    };
  return {
    load: (uuid) => vms.load(uuid, { include_dni: dni }),
    exists: (uuid) => vms.exists(uuid, { include_dni: dni }),
    update: guarded(vms.update),
    delete: guarded(vms.delete),
    start: guarded(vms.start),
    stop: guarded(vms.stop),
    reboot: guarded(vms.reboot),
    kill: guarded(vms.kill),
    reprovision: guarded(vms.reprovision),
    createSnapshot: guarded(vms.createSnapshot),
    deleteSnapshot: guarded(vms.deleteSnapshot),
    rollbackSnapshot: guarded(vms.rollbackSnapshot),
    info: guarded(vms.info),
  };
}
