import { defineTask, TaskError } from '../types.js';
import { readCnSysinfo, reloadSysinfo, writeCnSysinfo } from './sysinfo-file.js';
import { messageOf } from './vm-common.js';

/**
 * server_reboot: the CN "reboots" at once: "Boot Time" becomes now (epoch seconds, a string
 * as in the original template) and the new sysinfo is registered. The VMs are left as they
 * are, as the original mock did.
 */
export const serverReboot = defineTask<Record<string, never>>({
  name: 'server_reboot',
  queue: 'server_tasks',
  locks: ['sysinfo'],
  validate: () => ({}),
  async run(ctx) {
    try {
      const sysinfo = await readCnSysinfo(ctx.cn);
      sysinfo['Boot Time'] = String(Math.floor(Date.now() / 1000));
      ctx.progress(50);
      await writeCnSysinfo(ctx.cn, sysinfo);
    } catch (err) {
      throw new TaskError(messageOf(err));
    }
    await reloadSysinfo(ctx.cn, ctx.log);
    return {};
  },
});
