/**
 * The agents tasks: agent_install, agents_uninstall, refresh_agents. They work on the CN's
 * `agents/<name>/{package.json,image_uuid,instance_uuid}` directory and then post the list
 * to CNAPI through `cn.refreshAgents()`. They hold the CN's 'agents' lock, which the real
 * agent's `maxConcurrent: 1` queue promised but never enforced.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { writeFileDurable } from '../../../common/durable-file.js';
import { materializeAgentsDir } from '../../../mockcn/agents-dir.js';
import { isUuid, newUuid } from '../../../common/uuid.js';
import { defineTask, TaskError } from '../types.js';
import { AgentImageError, fetchAgentImage } from './agent-image.js';
import { invalid, isAgentName, uuidParam } from './params.js';
import { messageOf } from './vm-common.js';

export const agentInstall = defineTask<{ imageUuid: string }>({
  name: 'agent_install',
  queue: 'agents_tasks',
  locks: ['agents'],
  validate: (p) => ({ imageUuid: uuidParam(p, 'image_uuid') }),
  async run(ctx, p) {
    const fail = (msg: string) => new TaskError(`AgentInstall error: ${msg}`);
    let name: string;
    try {
      const image = await fetchAgentImage(ctx, p.imageUuid);
      let pkg: { name?: unknown };
      try {
        pkg = JSON.parse(image.packageJson) as { name?: unknown };
      } catch (err) {
        throw new AgentImageError(`package.json in the tarball is not JSON: ${(err as Error).message}`);
      }
      if (!isAgentName(pkg.name)) {
        throw new AgentImageError(`package.json "name" ${JSON.stringify(pkg.name)} is not a valid agent name`);
      }
      name = pkg.name;
      const imageUuid = image.imageUuidFile.trim();
      if (!isUuid(imageUuid)) throw new AgentImageError(`${image.baseName}/image_uuid does not hold a UUID`);
      await materializeAgentsDir(ctx.cn.paths.agents, ctx.cn.uuid);
      await installAgentFiles(ctx.cn.paths.agents, name, image.packageJson, imageUuid);
    } catch (err) {
      if (err instanceof AgentImageError) throw fail(err.message);
      throw fail(messageOf(err));
    }
    ctx.log.info('installed agent %s from image %s', name, p.imageUuid);
    try {
      await ctx.cn.refreshAgents();
      ctx.log.info('Agents info updated in CNAPI');
    } catch (err) {
      // The agent is installed: telling CNAPI is best effort, as on a real CN.
      ctx.log.error({ err }, 'Error posting agents to CNAPI');
    }
    ctx.progress(100);
    return {};
  },
});

/** Write agents/<name>/{package.json,image_uuid} and keep (or create) instance_uuid. */
async function installAgentFiles(agentsDir: string, name: string, packageJson: string, imageUuid: string): Promise<void> {
  const dir = path.join(agentsDir, name);
  await fsp.mkdir(dir, { recursive: true, mode: 0o755 });
  await writeFileDurable(path.join(dir, 'package.json'), packageJson);
  await writeFileDurable(path.join(dir, 'image_uuid'), `${imageUuid}\n`);
  const instanceFile = path.join(dir, 'instance_uuid');
  let instance: string | undefined;
  try {
    instance = (await fsp.readFile(instanceFile, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (!isUuid(instance)) await writeFileDurable(instanceFile, `${newUuid()}\n`);
}

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
      await ctx.cn.refreshAgents();
    } catch (err) {
      throw new TaskError(`AgentsUninstallTask error: ${messageOf(err)}`);
    }
    return {};
  },
});

export const refreshAgents = defineTask<Record<string, never>>({
  name: 'refresh_agents',
  queue: 'agents_tasks',
  locks: ['agents'],
  validate: () => ({}),
  async run(ctx) {
    try {
      await ctx.cn.refreshAgents();
    } catch (err) {
      // The real task's message prefix (copied from agent_install), kept for log matchers.
      throw new TaskError(`AgentInstall error: ${messageOf(err)}`);
    }
    ctx.log.info('Agents updated into CNAPI');
    ctx.progress(100);
    return {};
  },
});
