/**
 * refresh_agents: works on the CN's `agents/<name>/{package.json,image_uuid,instance_uuid}`
 * directory and then posts the list to CNAPI through `cn.refreshAgents()` (a refusal is logged,
 * not a failure, as in sdc-cn-agent's shared.js). The agents tasks
 * hold the CN's 'agents' lock, which the real agent's `maxConcurrent: 1` queue promised but
 * never enforced.
 */
import { messageOf } from '../../../common/errors.js';
import { defineTask, TaskError } from '../types.js';

export const refreshAgents = defineTask<Record<string, never>>({
  name: 'refresh_agents',
  queue: 'agents_tasks',
  locks: ['agents'],
  validate: () => ({}),
  async run(ctx) {
    try {
      // A refused agents POST is only warned, as the real task's shared.js refreshAgents does.
      await ctx.cn.refreshAgents(ctx.log);
    } catch (err) {
      // The real task's message prefix (copied from agent_install), kept for log matchers.
      throw new TaskError(`AgentInstall error: ${messageOf(err)}`);
    }
    ctx.log.info('Agents updated into CNAPI');
    ctx.progress(100);
    return {};
  },
});
