/**
 * What CNAPI's route modules share, and the `ensure()` preconditions CNAPI puts in front of
 * its handlers (sdc-cnapi lib/endpoints/index.js): a valid, existing server
 * (`409 InvalidArgument "Invalid server_uuid"`, `404 "Server <uuid> not found"`), a UUID
 * VM id (`409 "Invalid vm_uuid"`; CNAPI never checks the VM exists), and a `running`
 * server (`409 ServerNotRunning`); and sending a task to a CN, answered at once (`{id}`) or
 * once cn-agent replies.
 */
import type { JsonHttpClient } from '../../common/http-client.js';
import type { Logger } from '../../common/log.js';
import { MockcloudError } from '../../common/errors.js';
import { isUuid } from '../../common/uuid.js';
import type { Sysinfo } from '../../common/sysinfo.js';
import type { CnAgentDispatcher, TaskOutcome } from './dispatch.js';
import type { HeartbeatReconciler } from './heartbeats.js';
import { ensureParamsValid, type Rules } from './validate.js';
import { ok, params, type Params, type Req } from '../http.js';
import type { ServerRecord, ServerRegistry } from './servers.js';
import type { TaskRegistry } from './tasks.js';
import type { Allocator } from './dapi/allocator.js';
import type { Waitlist } from './waitlist.js';

export interface CnapiContext {
  log: Logger;
  http: JsonHttpClient;
  servers: ServerRegistry;
  heartbeats: HeartbeatReconciler;
  tasks: TaskRegistry;
  dispatcher: CnAgentDispatcher;
  /** Waitlist tickets (`/servers/:uuid/tickets`, `/tickets/:uuid`). */
  waitlist: Waitlist;
  /** Persist the waitlist before answering. */
  saveWaitlist(): Promise<void>;
  /** DAPI, as CNAPI configures it. */
  allocator: Allocator;
  /** When this CNAPI started (`/diagnostics` start_timestamp). */
  startTimestamp: string;
  /** The headnode's platform: the `default` server record boots it. */
  liveImage: string;
  /**
   * The dev headnode's "/usbkey/os": a dir per installed platform (`sdcadm platform install`
   * unpacks one there), listed by `/platforms` with those servers run or are set to boot.
   */
  usbkeyOsDir?: string;
  peers: { napi: string; imgapi: string; vmapi?: string };
  /** Persist server records: `durable` waits until they are on disk. */
  saveServers(durable: boolean): Promise<void>;
  /** Register (or refresh) a server from its sysinfo: NIC tags in NAPI, then the upsert. */
  updateFromSysinfo(sysinfo: Sysinfo): Promise<void>;
}

/** `prepopulate: ['server']`. */
export function requireServer(ctx: CnapiContext, serverUuid: unknown): ServerRecord {
  if (serverUuid !== 'default' && !isUuid(serverUuid)) {
    throw new MockcloudError('InvalidArgument', 'Invalid server_uuid');
  }
  const server = ctx.servers.get(serverUuid as string);
  if (!server) throw new MockcloudError('ResourceNotFound', `Server ${String(serverUuid)} not found`);
  return server;
}

/** `prepopulate: ['vm']`: only the form of the id is checked. */
export function requireVmUuid(uuid: unknown): string {
  if (!isUuid(uuid)) throw new MockcloudError('InvalidArgument', 'Invalid vm_uuid');
  return uuid;
}

/** `serverRunning: true`. */
export function requireRunning(server: ServerRecord): void {
  if (server.status !== 'running') {
    throw new MockcloudError('ServerNotRunning', 'Operation attempted on server which is not running');
  }
}

/** The agent named cn-agent in `server.agents`, or `{}` (getCnAgentFromStashedServer). */
export function cnAgentOf(server: ServerRecord): { name?: string; version?: string } {
  const agents = server.agents;
  if (!Array.isArray(agents)) return {};
  return (agents.find((a) => a && (a as { name?: unknown }).name === 'cn-agent') as { version?: string }) ?? {};
}

/** `vmValidationRules` (sdc-cnapi lib/endpoints/vms.js). */
export const VM_RULES: Rules = {
  jobid: { optional: true, type: 'string' },
  uuid: { type: 'string' },
};

/**
 * A VM endpoint's `ensure({prepopulate: ['server', 'vm'], serverRunning: true})`, then its
 * validation `rules` (vmValidationRules unless it has its own).
 */
export function vmPreconditions(ctx: CnapiContext, req: Req, rules: Rules = VM_RULES): { server: ServerRecord; p: Params } {
  const p = params(req);
  const server = requireServer(ctx, p.server_uuid);
  requireVmUuid(p.uuid);
  requireRunning(server);
  ensureParamsValid(p, rules);
  return { server, p };
}

export function sysinfoOf(server: ServerRecord): Sysinfo | undefined {
  return server.sysinfo as Sysinfo | undefined;
}

/**
 * Send a task whose reply the caller waits for (CNAPI's `synccb`): its outcome. With
 * `timeoutMs`, a reply that does not come within it is CNAPI's 500 "Time-out reached waiting
 * for <task> request to return".
 */
export async function runTaskSync(
  ctx: CnapiContext,
  server: ServerRecord,
  task: string,
  params: Params,
  reqId: string,
  opts: { timeoutMs?: number; persist?: boolean } = {},
): Promise<TaskOutcome> {
  const sent = ctx.dispatcher.sendTask({
    serverUuid: server.uuid,
    sysinfo: sysinfoOf(server),
    task,
    params,
    reqId,
    persist: opts.persist,
  });
  if (!opts.timeoutMs) return sent.outcome;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new MockcloudError('InternalError', `Time-out reached waiting for ${task} request to return`)),
      opts.timeoutMs,
    );
  });
  try {
    return await Promise.race([sent.outcome, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Send a task and answer `{id}` without waiting for cn-agent. */
export function sendAsync(ctx: CnapiContext, server: ServerRecord, task: string, p: Params, reqId: string) {
  const sent = ctx.dispatcher.sendTask({ serverUuid: server.uuid, sysinfo: sysinfoOf(server), task, params: p, reqId });
  void sent.outcome.then((o) => {
    if (!o.ok) ctx.log.info({ task, server_uuid: server.uuid, task_id: sent.record.id, error: o.message }, 'task failed');
  });
  return ok({ id: sent.record.id });
}

/**
 * A task CNAPI waits for, up to `timeoutS`: cn-agent's answer passed on; a failure is what
 * `mapError` makes of it (CNAPI's handler), else 500 "posting task to cn-agent: <error>".
 */
export async function taskAnswer(
  ctx: CnapiContext,
  server: ServerRecord,
  task: string,
  taskParams: Params,
  reqId: string,
  opts: { timeoutS: number; persist?: boolean },
  mapError: (outcome: Extract<TaskOutcome, { ok: false }>) => MockcloudError | undefined = () => undefined,
) {
  const outcome = await runTaskSync(ctx, server, task, taskParams, reqId, { timeoutMs: opts.timeoutS * 1000, persist: opts.persist });
  if (!outcome.ok) {
    throw mapError(outcome) ?? new MockcloudError('InternalError', `posting task to cn-agent: ${outcome.message}`);
  }
  return ok(outcome.body);
}

/** `errDetails(err).restCode`: the `details.restCode` of cn-agent's error body. */
export function restCodeOf(outcome: TaskOutcome): string | undefined {
  if (outcome.ok) return undefined;
  const details = (outcome.body as { details?: { restCode?: unknown } } | undefined)?.details;
  return typeof details?.restCode === 'string' ? details.restCode : undefined;
}
