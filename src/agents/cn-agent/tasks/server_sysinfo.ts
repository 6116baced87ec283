/**
 * server_sysinfo: the CN's sysinfo as the agent reports it (sysinfo-file.ts).
 */
import { messageOf } from '../../../common/errors.js';
import { defineTask, TaskError } from '../types.js';
import { readCnSysinfo, withAgentAddress } from '../task-support/sysinfo-file.js';

export const serverSysinfo = defineTask<Record<string, never>>({
  name: 'server_sysinfo',
  queue: 'server_tasks',
  validate: () => ({}),
  async run(ctx) {
    try {
      return { sysinfo: withAgentAddress(await readCnSysinfo(ctx.cn), ctx.cn) };
    } catch (err) {
      // The dummy nested the error object here; a message string is what consumers read.
      throw new TaskError(messageOf(err));
    }
  },
});
