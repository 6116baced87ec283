/**
 * machine_proc: the zone's processes, as procread reports them; a mock zone runs init only,
 * under zsched.
 */
import type { Vm } from '../../../vmadm/types.js';
import { defineTask, TaskError } from '../types.js';
import { nodeVmadm } from '../vmadm-bridge/node-vmadm.js';
import { uuidParam } from '../task-support/params.js';
import { vmadmError } from '../vmadm-bridge/vm-common.js';

export const machineProc = defineTask<{ uuid: string }>({
  name: 'machine_proc',
  queue: 'machine_tasks',
  validate: (p) => ({ uuid: uuidParam(p, 'uuid') }),
  async run(ctx, p) {
    let vm: Vm;
    try {
      vm = await nodeVmadm(ctx).load(p.uuid);
    } catch (err) {
      throw vmadmError('vmadm.load', err);
    }
    if ((vm.zone_state ?? vm.state) !== 'running') {
      throw new TaskError('VM is not running', { restCode: 'VmNotRunning' });
    }
    return zoneProcs(vm);
  },
});

/** procread's `{<pid>: {psinfo}}` for a zone that runs init under zsched. */
export function zoneProcs(vm: Vm): Record<string, unknown> {
  const initPid = typeof vm.pid === 'number' ? vm.pid : 1;
  const zoneid = typeof vm.zoneid === 'number' ? vm.zoneid : initPid;
  const start = Date.parse(vm.boot_timestamp ?? vm.last_modified ?? '') || Date.now();
  const lx = vm.brand === 'lx';
  const zschedPid = initPid > 1 ? initPid - 1 : 0;
  const psinfo = (pid: number, ppid: number, fname: string, psargs: string, nlwp: number) => ({
    psinfo: {
      pr_flag: 0,
      pr_nlwp: nlwp,
      pr_pid: pid,
      pr_ppid: ppid,
      pr_pgid: pid,
      pr_sid: pid,
      pr_uid: 0,
      pr_euid: 0,
      pr_gid: 0,
      pr_egid: 0,
      pr_size: fname === 'zsched' ? 0 : 2048,
      pr_rssize: fname === 'zsched' ? 0 : 1024,
      pr_start: { tv_sec: Math.floor(start / 1000), tv_nsec: (start % 1000) * 1e6 },
      pr_fname: fname,
      pr_psargs: psargs,
      pr_zoneid: zoneid,
    },
  });
  // lx zones see init as pid 1 and zsched as 0, as the real task rewrites them.
  const initShown = lx ? 1 : initPid;
  const zschedShown = lx ? 0 : zschedPid;
  return {
    [String(zschedShown)]: psinfo(zschedShown, 0, 'zsched', 'zsched', 1),
    [String(initShown)]: psinfo(initShown, zschedShown, 'init', '/sbin/init', 1),
  };
}
