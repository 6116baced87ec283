/**
 * What VMAPI's route modules share: `interceptors.loadVm` (Moray's getVm checks, then
 * `validOwner`), the answer to an action (`handleUpdateVMResponse`: 202 `{vm_uuid, job_uuid}`
 * with the `workflow-api` header, after the job when `sync` was asked for, failing as
 * `common.waitForJob` fails), and the `x-context` header kept in job params (`setContext`).
 */
import type { Logger } from '../../common/log.js';
import { elem, validationFailed, validUUID, VmapiError, vmapiErrors } from './errors.js';
import type { JobRecord, JobRunner, WorkflowDef } from './jobs.js';
import type { Peers } from './peers.js';
import type { VmObject } from './translate.js';
import type { VmRegistry } from './vms.js';
import type { WorkflowEnv } from './workflow-steps.js';
import type { Params, Req } from '../http.js';

export interface VmapiContext {
  log: Logger;
  vms: VmRegistry;
  jobs: JobRunner;
  peers: Peers;
  workflows: Record<string, WorkflowDef>;
  env: WorkflowEnv;
  /** This VMAPI's own URL: the `workflow-api` header points at it (it serves /jobs). */
  url(): string;
  saveVms(): Promise<void>;
}

/** Moray's `getVm` checks: a bad uuid or owner_uuid is a 409 before anything is looked up. */
export function checkVmLookup(uuid: unknown, ownerUuid: unknown): void {
  if (!validUUID(uuid)) throw validationFailed('Invalid Parameters', [elem.uuid('uuid')]);
  if (ownerUuid && !validUUID(ownerUuid)) throw validationFailed('Invalid Parameters', [elem.uuid('owner_uuid')]);
}

/** `interceptors.loadVm` (+ `validOwner`): the VM in API form. */
export function loadVm(ctx: VmapiContext, uuid: unknown, ownerUuid?: unknown): VmObject {
  checkVmLookup(uuid, ownerUuid);
  const vm = ctx.vms.get(uuid as string);
  if (!vm || (ownerUuid && vm.owner_uuid !== ownerUuid)) throw vmapiErrors.notFound('VM not found');
  return vm;
}

/** `setContext`: the caller's `x-context` header, parsed, in the job params (ignored when malformed). */
export function setContext(req: Req, p: Params): Params {
  const raw = req.headers['x-context'];
  if (typeof raw === 'string' && raw) {
    try {
      p.context = JSON.parse(raw);
    } catch {
      // VMAPI moves on without it
    }
  }
  return p;
}

/** `sync` as UpdateVm and DeleteVm take it: absent, 'true' or 'false'. */
export function syncParam(v: unknown): boolean {
  if (v && v !== 'true' && v !== 'false') throw validationFailed('Invalid Parameters', [elem.invalid('sync')]);
  return v === 'true';
}

/** `waitForJob`'s error for a job that did not succeed. */
export function jobFailure(job: JobRecord): VmapiError {
  const last = job.chain_results[job.chain_results.length - 1];
  if (last?.error) {
    const e = last.error;
    const message =
      typeof e === 'object' && typeof e.message === 'string'
        ? e.message
        : `job ${job.name} (${job.uuid}) failed: ${last.name}: ${typeof e === 'string' ? e : JSON.stringify(e)}`;
    const restCode = typeof e === 'object' && typeof e.restCode === 'string' ? e.restCode : 'Error';
    return new VmapiError('InternalError', message, { restCode });
  }
  const prefix = `Job ${job.name} (${job.uuid}) `;
  return new VmapiError('InternalError', job.execution === 'canceled' ? `${prefix}was canceled` : `${prefix}failed`, {
    restCode: 'Error',
  });
}

/** `handleUpdateVMResponse`. */
export async function respondWithJob(
  ctx: VmapiContext,
  vmUuid: string,
  job: JobRecord,
  sync: boolean,
): Promise<{ status: number; body: unknown; headers: Record<string, string> }> {
  const headers = { 'workflow-api': ctx.url() };
  if (sync) {
    const done = await ctx.jobs.wait(job.uuid);
    if (done && done.execution !== 'succeeded') throw jobFailure(done);
  }
  return { status: 202, body: { vm_uuid: vmUuid, job_uuid: job.uuid }, headers };
}
