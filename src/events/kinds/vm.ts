/**
 * Events on VMs: vm-crash (init dies: stopped with exit_status and exit_timestamp, autoboot
 * kept, as vmadm shows a zone whose init exited) and vm-reboot (a reboot from inside the VM:
 * shutting_down, stopped, running). vm-agent sees the change in the VM store and tells VMAPI;
 * the next status report tells CNAPI. Both act once and are done.
 */
import { toMockcloudError } from '../../common/errors.js';
import type { MockCn } from '../../mockcn/types.js';
import type { Vm } from '../../vmadm/types.js';
import { noMatch } from '../targets.js';
import type { VmPick } from '../types.js';
import type { Applied, EventContext } from './context.js';

export async function vmCrash(ctx: EventContext<'vm-crash'>): Promise<Applied> {
  const { exitStatus } = ctx.req.params;
  await onEachVm(ctx, ctx.req.params, (cn, vm) =>
    cn.vms.crash ? cn.vms.crash(vm.uuid, exitStatus) : cn.vms.kill(vm.uuid, { signal: 'SIGKILL' }),
  );
  return { finished: Promise.resolve() };
}

export async function vmReboot(ctx: EventContext<'vm-reboot'>): Promise<Applied> {
  await onEachVm(ctx, ctx.req.params, (cn, vm) => cn.vms.reboot(vm.uuid));
  return { finished: Promise.resolve() };
}

/** The targets' running VMs the pick names (all of them by default), each acted on. */
async function onEachVm(ctx: EventContext, pick: VmPick, act: (cn: MockCn, vm: Vm) => Promise<unknown>): Promise<void> {
  const running: { cn: MockCn; vm: Vm }[] = [];
  for (const cn of ctx.servers) {
    for (const vm of cn.vms.list({ include_dni: true })) if (vm.state === 'running') running.push({ cn, vm });
  }
  running.sort((a, b) => (a.vm.uuid < b.vm.uuid ? -1 : a.vm.uuid > b.vm.uuid ? 1 : 0));
  let chosen = running;
  if (pick.vms) {
    const wanted = new Set(pick.vms);
    chosen = running.filter((r) => wanted.has(r.vm.uuid));
    for (const uuid of pick.vms) {
      if (!chosen.some((r) => r.vm.uuid === uuid)) ctx.skipped.push({ uuid, reason: 'not a running VM of the target servers' });
    }
  } else if (pick.percent !== undefined && running.length > 0) {
    const n = Math.max(1, Math.round((running.length * pick.percent) / 100));
    chosen = ctx.random('vm-picks').shuffle(running).slice(0, n);
  }
  if (chosen.length === 0) throw noMatch('no running VM of the target servers matches the event');
  await Promise.all(
    chosen.map(async ({ cn, vm }) => {
      try {
        await act(cn, vm);
        ctx.vms.push(vm.uuid);
      } catch (err) {
        ctx.skipped.push({ uuid: vm.uuid, reason: toMockcloudError(err).message });
      }
    }),
  );
  ctx.vms.sort();
}
