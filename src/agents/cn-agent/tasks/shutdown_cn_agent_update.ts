/**
 * shutdown_cn_agent_update: the last step of cn-agent's self-update. The temporary
 * cn-agent-update service, once it has installed the new cn-agent, sends this task to the new
 * cn-agent, which runs `svcadm disable cn-agent-update`. The service is imported with cn-agent
 * and disabling it again succeeds, so on a real CN the task always finishes with nothing.
 * A mock CN runs no services: it finishes the same way.
 */
import { defineTask } from '../types.js';

export const shutdownCnAgentUpdate = defineTask<Record<string, never>>({
  name: 'shutdown_cn_agent_update',
  queue: 'agents_tasks',
  locks: ['agents'],
  validate: () => ({}),
  async run(ctx) {
    ctx.log.debug({ cmdline: '/usr/sbin/svcadm disable cn-agent-update' }, 'Executing');
    ctx.progress(100);
    return {};
  },
});
