/**
 * The real cn-agent task server and vmadm, built for the daemon. Kept apart so the daemon's
 * own code (and its tests) depend only on the small interfaces in services.ts.
 */
import type { RemoteVm, RuleData } from '../agents/firewaller/index.js';
import path from 'node:path';
import { CnAgentServer, type TaskEnd } from '../agents/cn-agent/index.js';
import type { AgentInstanceAdopter } from '../agents/cn-agent/types.js';
import type { JsonHttpClient } from '../common/http-client.js';
import type { Logger } from '../common/log.js';
import type { Scheduler } from '../runtime/scheduler.js';
import { Vmadm } from '../vmadm/index.js';
import type { DaemonConfig } from './config.js';
import type { CnAgentHost, VmadmHost } from './services.js';

export interface ServiceContext {
  config: DaemonConfig;
  log: Logger;
  http: JsonHttpClient;
  /** The daemon's shared scheduler (server_reboot's boot time). */
  scheduler?: Scheduler;
  /** SAPI adoption of agent instances (agent_install), when a SAPI is configured. */
  agentInstances?: AgentInstanceAdopter;
  /** The CN's firewaller store (command_execute's fwadm). */
  firewallState?: (uuid: string) => { rules: RuleData[]; rvms: RemoteVm[] } | undefined;
  /** Told of every cn-agent task's end (the daemon's metrics). */
  onTaskEnd?: (task: string, end: TaskEnd, ms: number) => void;
}

export function createCnAgentHost(ctx: ServiceContext): CnAgentHost {
  const { config, log, http } = ctx;
  return new CnAgentServer({
    log: log.child({ component: 'cn-agent' }),
    bindIp: config.bindIp,
    portRange: config.portRange,
    taskLogFile: path.join(config.dataDir, 'logs', 'cn-agent-tasks.log'),
    admissionLimits: {
      ...(config.maxTasks !== undefined ? { maxInFlight: config.maxTasks } : {}),
      ...(config.maxTasksPerServer !== undefined ? { maxPerCn: config.maxTasksPerServer } : {}),
      ...(config.maxQueuedTasks !== undefined ? { maxQueued: config.maxQueuedTasks } : {}),
    },
    ...(config.maxConnections !== undefined ? { connectionLimits: { maxConnections: config.maxConnections } } : {}),
    ...(ctx.onTaskEnd ? { onTaskEnd: ctx.onTaskEnd } : {}),
    env: {
      log: log.child({ component: 'cn-agent-tasks' }),
      http,
      imgapiUrl: config.urls.imgapi,
      cnapiUrl: config.urls.cnapi,
      dataDir: config.dataDir,
      scheduler: ctx.scheduler,
      allowExecute: config.allowExecute === true,
      bootSeconds: config.bootSeconds,
      agentInstances: ctx.agentInstances,
      firewallState: ctx.firewallState,
    },
  });
}

export function createVmadmHost(ctx: ServiceContext): VmadmHost {
  return new Vmadm({ root: ctx.config.dataDir, log: ctx.log.child({ component: 'vmadm' }) });
}
