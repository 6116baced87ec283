/**
 * agents_uninstall: works on the CN's `agents/<name>/{package.json,image_uuid,instance_uuid}`
 * directory and then posts the list to CNAPI through `cn.refreshAgents()` (a refusal is logged,
 * not a failure, as in sdc-cn-agent's shared.js). The agents tasks
 * hold the CN's 'agents' lock, which the real agent's `maxConcurrent: 1` queue promised but
 * never enforced.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { messageOf } from '../../../common/errors.js';
import { materializeAgentsDir } from '../../../mockcn/agents-dir.js';
import { defineTask, TaskError } from '../types.js';
import { invalid, isAgentName } from '../task-support/params.js';

export const agentsUninstall = defineTask<{ agents: string[] }>({
  name: 'agents_uninstall',
  queue: 'agents_tasks',
  locks: ['agents'],
  validate: (p) => {
    const agents = p.agents;
    if (agents === undefined) throw invalid("Missing key 'agents' in params");
    if (!Array.isArray(agents) || !agents.every((a) => typeof a === 'string')) {
      throw invalid('params.agents must be an array of agent names');
    }
    const bad = agents.find((a) => !isAgentName(a));
    if (bad !== undefined) throw invalid(`params.agents: ${JSON.stringify(bad)} is not an agent name`);
    return { agents: agents as string[] };
  },
  async run(ctx, p) {
    try {
      await materializeAgentsDir(ctx.cn.paths.agents, ctx.cn.uuid);
      for (const name of p.agents) {
        await fsp.rm(path.join(ctx.cn.paths.agents, name), { recursive: true, force: true });
        ctx.log.info('removed agent %s', name);
      }
      // A refused agents POST is only warned, as the real task's shared.js refreshAgents does.
      const { postError } = await ctx.cn.refreshAgents(ctx.log);
      if (!postError) ctx.log.info('Refreshed agent info in CNAPI');
    } catch (err) {
      throw new TaskError(`AgentsUninstallTask error: ${messageOf(err)}`);
    }
    return {};
  },
});
