/**
 * The real cn-agent task server and vmadm, built for the daemon. Kept apart so the daemon's
 * own code (and its tests) depend only on the small interfaces in services.ts.
 */
import path from 'node:path';
import { CnAgentServer } from '../agents/cn-agent/index.js';
import type { AgentInstanceAdopter } from '../agents/cn-agent/types.js';
import type { JsonHttpClient } from '../common/http-client.js';
import type { Logger } from '../common/log.js';
import { Vmadm } from '../vmadm/index.js';
import type { DaemonConfig } from './config.js';
import type { CnAgentHost, VmadmHost } from './services.js';

export interface ServiceContext {
  config: DaemonConfig;
  log: Logger;
  http: JsonHttpClient;
  /** SAPI adoption of agent instances (agent_install), when a SAPI is configured. */
  agentInstances?: AgentInstanceAdopter;
}

export function createCnAgentHost(ctx: ServiceContext): CnAgentHost {
  const { config, log, http } = ctx;
  return new CnAgentServer({
    log: log.child({ component: 'cn-agent' }),
    bindIp: config.bindIp,
    portRange: config.portRange,
    taskLogFile: path.join(config.dataDir, 'logs', 'cn-agent-tasks.log'),
    env: {
      log: log.child({ component: 'cn-agent-tasks' }),
      http,
      imgapiUrl: config.urls.imgapi,
      cnapiUrl: config.urls.cnapi,
      dataDir: config.dataDir,
      agentInstances: ctx.agentInstances,
    },
  });
}

export function createVmadmHost(ctx: ServiceContext): VmadmHost {
  return new Vmadm({ root: ctx.config.dataDir, log: ctx.log.child({ component: 'vmadm' }) });
}
