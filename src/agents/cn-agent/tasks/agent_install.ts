/**
 * agent_install: works on the CN's `agents/<name>/{package.json,image_uuid,instance_uuid}`
 * directory, adopts the instance into SAPI as the agent's postinstall does
 * (adopt_instance_if_necessary; best effort: the install stands whatever SAPI says), and then
 * posts the list to CNAPI through `cn.refreshAgents()`. The agents tasks hold the CN's
 * 'agents' lock, which the real agent's `maxConcurrent: 1` queue promised but never enforced.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { messageOf } from '../../../common/errors.js';
import { writeFileDurable } from '../../../common/durable-file.js';
import { isUuid, newUuid } from '../../../common/uuid.js';
import { materializeAgentsDir } from '../../../mockcn/agents-dir.js';
import { defineTask, TaskError, type TaskContext } from '../types.js';
import { AgentImageError, fetchAgentImage } from '../images/agent-image.js';
import { isAgentName, uuidParam } from '../task-support/params.js';

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
      // A refused agents POST is only warned, as the real task's shared.js refreshAgents does.
      await ctx.cn.refreshAgents(ctx.log);
      ctx.log.info('Agents updated into CNAPI');
    } catch (err) {
      // The agent is installed: telling CNAPI is best effort, as on a real CN.
      ctx.log.error({ err }, 'Error posting agents to CNAPI');
    }
    await adoptIntoSapi(ctx, name);
    ctx.progress(100);
    return {};
  },
});

/** The installed agent's instance into SAPI, logged as the postinstall script says it. */
async function adoptIntoSapi(ctx: TaskContext, name: string): Promise<void> {
  const adopter = ctx.env.agentInstances;
  const record = ctx.cn.agents?.find((a) => a.name === name);
  if (!adopter || !record?.uuid) return;
  try {
    const r = await adopter.adopt(ctx.cn, [record]);
    if (r.adopted.length > 0) ctx.log.info('Adopted service %s to instance %s', name, record.uuid);
    else if (r.noService.length > 0) ctx.log.warn('Unable to get service uuid for role %s from SAPI', name);
    else ctx.log.info('instance %s of %s is in SAPI already', record.uuid, name);
  } catch (err) {
    ctx.log.warn({ err }, 'Unable to adopt %s into SAPI now; retrying in the background', record.uuid);
  }
}

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
