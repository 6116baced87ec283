/**
 * What VMAPI's route modules share, and `interceptors.loadVm`: the VM must exist
 * (`404 ResourceNotFound "VM not found"`, also when `owner_uuid` names someone else) and
 * its id must be a UUID (`409 ValidationFailed`).
 */
import type { Logger } from '../../common/log.js';
import { MockcloudError } from '../../common/errors.js';
import { isUuid } from '../../common/uuid.js';
import type { JobRecord, JobRunner, WorkflowDef } from './jobs.js';
import type { Peers } from './peers.js';
import type { VmObject } from './translate.js';
import { fieldErr, validationFailed } from './validation.js';
import type { VmRegistry } from './vms.js';
import type { WorkflowEnv } from './workflows.js';

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

/** `interceptors.loadVm` (+ `validOwner`): the VM in API form. */
export function loadVm(ctx: VmapiContext, uuid: unknown, ownerUuid?: unknown): VmObject {
  if (!isUuid(uuid)) throw validationFailed('Invalid Parameters', [fieldErr.uuid('uuid')]);
  if (ownerUuid !== undefined && !isUuid(ownerUuid)) {
    throw validationFailed('Invalid Parameters', [fieldErr.uuid('owner_uuid')]);
  }
  const vm = ctx.vms.get(uuid);
  if (!vm || (ownerUuid !== undefined && vm.owner_uuid !== ownerUuid)) {
    throw new MockcloudError('ResourceNotFound', 'VM not found');
  }
  return vm;
}

/** `{vm_uuid, job_uuid}` with 202, after the job ends when `sync` was asked for. */
export async function jobResponse(
  ctx: VmapiContext,
  vmUuid: string,
  job: JobRecord,
  sync: boolean,
): Promise<{ status: number; body: unknown; headers: Record<string, string> }> {
  if (sync) {
    const done = await ctx.jobs.wait(job.uuid);
    if (done && done.execution === 'failed') {
      const last = done.chain_results[done.chain_results.length - 1];
      const err = last?.error;
      const message = typeof err === 'string' ? err : (err?.message ?? 'job failed');
      throw new MockcloudError('InternalError', message);
    }
  }
  return { status: 202, body: { vm_uuid: vmUuid, job_uuid: job.uuid }, headers: { 'workflow-api': ctx.url() } };
}

/** The `sync` parameter: 'true' or 'false' only. */
export function syncParam(v: unknown): boolean {
  if (v === undefined || v === true || v === false) return v === true;
  if (v !== 'true' && v !== 'false') throw validationFailed('Invalid Parameters', [fieldErr.invalid('sync')]);
  return v === 'true';
}
