/**
 * The steps VMAPI's workflows share (sdc-vmapi lib/workflows/job-common.js), each with the
 * result text node-workflow records for it: CNAPI waitlist tickets on the VM
 * (`cnapi.acquire_vm_ticket`, `cnapi.wait_on_vm_ticket`, `cnapi.release_vm_ticket`), the CNAPI
 * call and its task (`zoneAction`, `waitTask`), putting the VM the cn-agent task returned
 * (`vmapi.put_vm`), and the steps whose peer the dev DC does not run (FWAPI's update answers
 * as VMAPI's does when FWAPI cannot be reached; it never fails a job).
 */
import { HttpStatusError } from '../../common/http-client.js';
import type { Logger } from '../../common/log.js';
import { StepFailure, type JobContext, type Step, type StepError } from './jobs.js';
import type { CnapiTask, Obj, Peers } from './peers.js';
import type { VmRegistry } from './vms.js';

export interface WorkflowEnv {
  peers: Peers;
  vms: VmRegistry;
  log: Logger;
  /** Persist VMAPI's VM store after a change (durable). */
  saveVms(): Promise<void>;
}

export type Params = Record<string, unknown>;

export const reqIdOf = (ctx: JobContext): string => String(ctx.params['x-request-id'] ?? ctx.job.uuid);
export const vmPath = (p: Params): string => `/servers/${String(p.server_uuid)}/vms/${String(p.vm_uuid)}`;

/** A peer's error as node-workflow records it: restify errors whole (with their status). */
export function peerFailure(err: unknown): StepFailure | unknown {
  if (err instanceof HttpStatusError) {
    const body = (err.body ?? {}) as { code?: string; message?: string };
    const recorded: StepError = {
      name: `${body.code ?? 'Internal'}Error`,
      message: body.message ?? err.message,
      ...(body.code ? { restCode: body.code } : {}),
      statusCode: err.statusCode,
    };
    return new StepFailure(recorded);
  }
  return err;
}

/** Run a peer call, recording a peer's failure as node-workflow would. */
export async function viaPeer<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw peerFailure(err);
  }
}

/** `validateForZoneAction`. */
export const validateForZoneAction: Step = {
  name: 'common.validate_params',
  body: async (ctx) => {
    if (!ctx.params.vm_uuid) throw new StepFailure('VM UUID is required');
    return 'All parameters OK!';
  },
};

/** A workflow's `setupRequest`: where `zoneAction` goes, and the job's action. */
export function setupRequest(
  name: string,
  action: string,
  method: 'post' | 'put' | 'del',
  endpoint: (p: Params, jobUuid: string) => string,
  message = 'Request has been setup!',
  extra?: (ctx: JobContext) => string | void,
): Step {
  return {
    name,
    body: async (ctx) => {
      ctx.state.endpoint = endpoint(ctx.params, ctx.job.uuid);
      ctx.state.requestMethod = method;
      ctx.state.action = action;
      ctx.params.jobid = ctx.job.uuid;
      return extra?.(ctx) ?? message;
    },
  };
}

/** `acquireVMTicket`: a waitlist ticket on the VM's server, read back into `params.vmTicket`. */
export function acquireVmTicket(env: WorkflowEnv): Step {
  return {
    name: 'cnapi.acquire_vm_ticket',
    body: async (ctx) => {
      const p = ctx.params;
      const ticket: Obj = {
        scope: 'vm',
        id: p.vm_uuid,
        expires_at: new Date(Date.now() + 600_000).toISOString(),
        ...(ctx.state.action !== undefined ? { action: ctx.state.action } : {}),
      };
      const created = await viaPeer(() => env.peers.createTicket(String(p.server_uuid), ticket, reqIdOf(ctx)));
      p.vmTicket = await viaPeer(() => env.peers.getTicket(created.uuid, reqIdOf(ctx)));
      return '';
    },
  };
}

export function waitOnVmTicket(env: WorkflowEnv): Step {
  return {
    name: 'cnapi.wait_on_vm_ticket',
    body: async (ctx) => {
      const t = ctx.params.vmTicket as Obj;
      if (t.status !== 'active') await viaPeer(() => env.peers.waitTicket(String(t.uuid), reqIdOf(ctx)));
      return '';
    },
  };
}

/** `releaseVMTicket` (an error fails the job). */
export function releaseVmTicket(env: WorkflowEnv, name = 'cnapi.release_vm_ticket'): Step {
  return {
    name,
    body: async (ctx) => {
      const t = ctx.params.vmTicket as Obj | undefined;
      if (!t) return '';
      await viaPeer(() => env.peers.releaseTicket(String(t.uuid), reqIdOf(ctx)));
      return '';
    },
  };
}

/** `releaseVMTicketIgnoringErr` (onerror chains). */
export function releaseVmTicketIgnoringErr(env: WorkflowEnv): Step {
  return {
    name: 'cnapi.release_vm_ticket_ignore_err',
    body: async (ctx) => {
      const t = ctx.params.vmTicket as Obj | undefined;
      if (!t) return '';
      try {
        await env.peers.releaseTicket(String(t.uuid), reqIdOf(ctx));
      } catch (err) {
        const body = err instanceof HttpStatusError ? (err.body as { code?: string; message?: string }) : undefined;
        return `OK - ignoring CNAPI ticket release error: ${body?.code ?? 'Error'}Error: ${body?.message ?? String(err)}`;
      }
      return 'OK - CNAPI ticket released successfully';
    },
  };
}

/** `zoneAction`: call the CNAPI endpoint the setup step chose, with the payload (or the params). */
export function zoneAction(env: WorkflowEnv, name: string): Step {
  return {
    name,
    body: async (ctx) => {
      if (ctx.params.skip_zone_action) return 'Skipping zoneAction';
      const endpoint = ctx.state.endpoint as string | undefined;
      if (!endpoint) throw new StepFailure('No CNAPI endpoint provided');
      const method = ({ post: 'POST', put: 'PUT', del: 'DELETE' } as const)[ctx.state.requestMethod as 'post' | 'put' | 'del'];
      const body = (ctx.params.payload as Params | undefined) ?? ctx.params;
      const id = await viaPeer(() => env.peers.cnapiTask(method, endpoint, body, reqIdOf(ctx)));
      ctx.state.taskId = id;
      return `Task id: ${id} queued to CNAPI!`;
    },
  };
}

/** `waitTask`: the task's error text on failure, its `finish` VM kept for putVm on success. */
export function waitTask(env: WorkflowEnv, name = 'cnapi.wait_task'): Step {
  return {
    name,
    body: async (ctx) => {
      if (ctx.params.skip_zone_action) return 'Skipping waitTask';
      const id = ctx.state.taskId;
      if (typeof id !== 'string') throw new StepFailure('No taskId provided');
      const task = await viaPeer(() => env.peers.waitTask(id, reqIdOf(ctx)));
      if (task.status === 'failure') throw new StepFailure(taskErrorMessage(task));
      if (task.status !== 'complete') throw new Error(`unexpected task status, ${String(task.status)}`);
      const first = task.history?.[0];
      if (first?.name === 'finish' && first.event && typeof first.event.vm === 'object' && first.event.vm) {
        ctx.state.finished_vm = first.event.vm;
      }
      return 'Job succeeded!';
    },
  };
}

/** `getErrorMesage` of job-common.js: the error event's text, with the task log's errors. */
export function taskErrorMessage(task: CnapiTask): string {
  let message: string | undefined;
  const details: string[] = [];
  for (const ev of task.history ?? []) {
    const e = ev.event as { error?: unknown; details?: { error?: string }; log?: { level?: string; message?: string }[] } | undefined;
    if (ev.name === 'error' && e?.error) {
      if (typeof e.error === 'string') message = e.error + (e.details?.error ? `, ${e.details.error}` : '');
      else message = String((e.error as { message?: unknown }).message);
    } else if (ev.name === 'finish' && Array.isArray(e?.log)) {
      for (const l of e.log) if (l?.level === 'error' && l.message) details.push(l.message);
    }
  }
  if (message === undefined) return 'Unexpected error occured';
  return details.length ? `${message}: ${details.join(', ')}` : message;
}

/**
 * `PUT /vms/:uuid` semantics: the object given is stored as it is; one whose state is
 * `destroyed` gets its `destroyed` time (Moray's `markAsDestroyed` of that object).
 */
export function storeVm(env: { vms: VmRegistry }, vm: Obj): void {
  const uuid = String(vm.uuid);
  if (vm.state === 'destroyed') {
    env.vms.put({ ...vm, uuid, state: 'destroyed', zone_state: 'destroyed', destroyed: new Date().toISOString() });
  } else env.vms.put({ ...vm, uuid });
}

/** `putVm`: store the VM the task returned (polling VMAPI for the expected state when it returned none). */
export function putVm(env: WorkflowEnv): Step {
  return {
    name: 'vmapi.put_vm',
    body: async (ctx) => {
      if (ctx.params.do_not_inventory) return 'VM has do_not_inventory set, no need to putVm to VMAPI';
      const vm = ctx.state.finished_vm as Obj | undefined;
      if (!vm) {
        if (ctx.params.skip_zone_action) return 'Skipping checkState';
        const expects = ctx.state.expects as string | undefined;
        if (!expects) return "No 'expects' state parameter provided";
        for (let i = 0; i < 600; i++) {
          if (env.vms.get(String(ctx.params.vm_uuid))?.state === expects) return `VM is now ${expects}`;
          await new Promise((r) => setTimeout(r, 1000));
        }
        throw new StepFailure(`VM did not reach ${expects}`);
      }
      storeVm(env, vm);
      await env.saveVms();
      return `put VM ${String(vm.uuid)} to VMAPI`;
    },
  };
}

/** `checkUpdated`: wait until VMAPI's copy is newer than the job's `last_modified`. */
export function checkUpdated(env: WorkflowEnv): Step {
  return {
    name: 'vmapi.check_updated',
    body: async (ctx) => {
      if (!ctx.params.last_modified) throw new StepFailure('No VM last_modified timestamp provided');
      const old = new Date(String(ctx.params.last_modified)).getTime();
      for (let i = 0; i < 600; i++) {
        const vm = env.vms.get(String(ctx.params.vm_uuid));
        if (vm && new Date(String(vm.last_modified)).getTime() > old) return 'VM data has been updated';
        if (ctx.state.finished_vm) {
          // The task's own VM is put right after this step; it is what vm-agent reports too.
          const fin = ctx.state.finished_vm as Obj;
          if (new Date(String(fin.last_modified)).getTime() > old) return 'VM data has been updated';
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
      throw new StepFailure('VM data was not updated');
    },
  };
}

/**
 * `updateFwapi` (sdc-vmapi lib/workflows/job-common.js): the properties that matter to
 * firewalls posted to FWAPI as an update (`POST /updates`, type vm.add for a provision,
 * vm.delete for a destroy, vm.update otherwise) for the firewallers; a failure to reach FWAPI
 * never fails the job, as in VMAPI.
 */
export function updateFwapi(env: WorkflowEnv): Step {
  return {
    name: 'fwapi.update',
    body: async (ctx) => {
      const jp = (ctx.params.payload as Params | undefined) ?? ctx.params;
      const props = ['add_nics', 'firewall_enabled', 'nics', 'remove_ips', 'remove_nics', 'remove_tags', 'set_tags', 'tags'];
      const task = ctx.params.task;
      const update: Params = {};
      for (const k of props) if (k in jp) update[k] = jp[k];
      if (Object.keys(update).length === 0 && task !== 'destroy') return 'No properties affecting FWAPI found: not updating';
      update.owner_uuid = jp.owner_uuid ?? ctx.params.owner_uuid;
      update.server_uuid = jp.server_uuid ?? ctx.params.server_uuid;
      update.type = task === 'provision' ? 'vm.add' : task === 'destroy' ? 'vm.delete' : 'vm.update';
      update.uuid = jp.uuid ?? jp.vm_uuid ?? ctx.params.vm_uuid;
      try {
        const id = await env.peers.fwapiUpdate(update, reqIdOf(ctx));
        return `Updated FWAPI with update UUID: ${id}`;
      } catch (err) {
        ctx.log.warn({ err }, 'Error sending update to FWAPI');
        return 'Error updating FWAPI';
      }
    },
  };
}

/** `refreshVm`: a `GET /vms/:uuid?sync=true` only after the VM reached the CN (markAsFailedOnError false). */
export function refreshVm(env: WorkflowEnv, name: string, refresh: (ctx: JobContext) => Promise<Obj | undefined>): Step {
  return {
    name,
    body: async (ctx) => {
      if (!ctx.params.vm_uuid) throw new StepFailure('No VM UUID provided');
      if (ctx.state.markAsFailedOnError !== false) return 'markAsFailedOnError set, not doing sync GET';
      const vm = await viaPeer(() => refresh(ctx));
      return `VM data refreshed, new VM state is ${String(vm?.state ?? env.vms.get(String(ctx.params.vm_uuid))?.state)}`;
    },
  };
}

/** Delete NICs in NAPI; NICs already gone count as deleted (destroy and remove-nics treat them so). */
export async function deleteNics(env: WorkflowEnv, macs: string[], reqId: string): Promise<void> {
  for (const mac of macs) await viaPeer(() => env.peers.deleteNic(mac, reqId));
}
