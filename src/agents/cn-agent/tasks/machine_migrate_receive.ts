/**
 * machine_migrate_receive: named in the real SmartOS backend's queue table (sdc-cn-agent
 * lib/backends/smartos/index.js, machine_tasks) but with no task module behind it: the
 * task's child process dies loading `tasks/machine_migrate_receive.js`, and the task fails
 * with the runner's message. Receiving is `machine_migrate` with `action: 'receive'`.
 */
import { defineTask, TaskError } from '../types.js';
import { childCrash } from '../task-support/child-crash.js';

export const machineMigrateReceive = defineTask<Record<string, never>>({
  name: 'machine_migrate_receive',
  queue: 'machine_tasks',
  validate: () => ({}),
  async run() {
    throw new TaskError(childCrash('machine_migrate_receive'));
  },
});
