/**
 * The real cn-agent task server and vmadm, built for the daemon. Kept apart so the daemon's
 * own code (and its tests) depend only on the small interfaces in services.ts.
 */
import type { RemoteVm, RuleData } from '../agents/firewaller/index.js';
import path from 'node:path';
import { CnAgentServer, type TaskEnd } from '../agents/cn-agent/index.js';
import type { AgentInstanceAdopter } from '../agents/cn-agent/types.js';
import { openFileLimit } from '../common/fd-limit.js';
import type { JsonHttpClient } from '../common/http-client.js';
import type { Logger } from '../common/log.js';
import type { Scheduler } from '../runtime/scheduler.js';
import type { Timing } from '../timing/timing.js';
import { waitOn } from '../timing/wait.js';
import { Vmadm } from '../vmadm/index.js';
import type { VmPacer } from '../vmadm/types.js';
import type { DaemonConfig } from './config.js';
import type { CnAgentHost, VmadmHost } from './services.js';

export interface ServiceContext {
  config: DaemonConfig;
  log: Logger;
  http: JsonHttpClient;
  /** The daemon's shared scheduler (tasks' waits and time limits, server_reboot's boot time). */
  scheduler?: Scheduler;
  /** How long things take (docs/timing.md); absent: instant. */
  timing?: Timing;
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
    fdLimit: openFileLimit(),
    connectionLimits: {
      ...(config.maxConnections !== undefined ? { maxConnections: config.maxConnections } : {}),
      ...(config.maxConnectionsPerServer !== undefined ? { maxPerGroup: config.maxConnectionsPerServer } : {}),
    },
    ...(ctx.onTaskEnd ? { onTaskEnd: ctx.onTaskEnd } : {}),
    env: {
      log: log.child({ component: 'cn-agent-tasks' }),
      http,
      imgapiUrl: config.urls.imgapi,
      cnapiUrl: config.urls.cnapi,
      dataDir: config.dataDir,
      scheduler: ctx.scheduler,
      timing: ctx.timing,
      allowExecute: config.allowExecute === true,
      bootSeconds: config.bootSeconds,
      agentInstances: ctx.agentInstances,
      firewallState: ctx.firewallState,
    },
  });
}

export function createVmadmHost(ctx: ServiceContext): VmadmHost {
  const { timing, scheduler } = ctx;
  const wait = scheduler ? waitOn(scheduler) : undefined;
  // Each CN's VM stages take the timing's `vm.*` figures, waited out on the shared scheduler.
  const pacerFor = timing && wait
    ? (server: string): VmPacer => ({
        stageMs: (stage, vm) => timing.ms(`vm.${stage}`, { server, vm: vm.uuid, brand: typeof vm.brand === 'string' ? vm.brand : undefined }),
        wait,
      })
    : undefined;
  return new Vmadm({ root: ctx.config.dataDir, log: ctx.log.child({ component: 'vmadm' }), ...(pacerFor ? { pacerFor } : {}) });
}
