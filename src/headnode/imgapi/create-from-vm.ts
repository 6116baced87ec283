/**
 * CreateImageFromVm, `POST /images?action=create-from-vm&vm_uuid=...`, as sdc-imgapi
 * lib/images.js apiCreateImageFromVm serves it on a DC whose IMGAPI stores images locally with
 * `allowLocalCreateImageFromVm` (the dev IMGAPI has no Manta): the query and manifest checks,
 * the VM from VMAPI (no Docker container), the origin image and its OS's prepare-image script,
 * a `creating` placeholder image, then the create-from-vm job (lib/workflows/create-from-vm.js)
 * on the DC's workflow API, answered `{image_uuid, job_uuid}` with the `workflow-api` header.
 *
 * The job: `vmapi.get_vm_server`, `cnapi.queue_create_from_vm_task` (CNAPI's
 * `POST /servers/:s/vms/:uuid/images`, whose machine_create_image task publishes the image
 * back to this IMGAPI over the placeholder) and `cnapi.poll_task`; on a failure
 * `update_with_error` marks the placeholder `failed` with the error.
 */
import type { Logger } from '../../common/log.js';
import { isUuid } from '../../common/uuid.js';
import { HttpStatusError, type JsonHttpClient } from '../../common/http-client.js';
import { body, ok, query, type Reply, type Req } from '../http.js';
import type { JobRecord, StepError, WorkflowDef } from '../vmapi/jobs.js';
import { Peers, type Obj } from '../vmapi/peers.js';
import { reqIdOf, taskErrorMessage } from '../vmapi/workflow-steps.js';
import { boolParam } from './access.js';
import { fieldErr, imgapiError, imgapiErrors } from './errors.js';
import type { ImageManifest } from './images.js';
import { newImage } from './manifest-input.js';
import { alreadyExists, type ImageCatalogue } from './writes.js';

/** The DC's workflow API: where the job runs and the URL clients poll it at. */
export interface WorkflowApi {
  url: string;
  create(def: WorkflowDef, params: Record<string, unknown>): JobRecord;
}

export interface CreateFromVmPeers {
  vmapi: string;
  cnapi: string;
  napi: string;
  workflow: WorkflowApi;
}

/** The OSes sdc-imgapi ships a tools/prepare-image script for. */
const PREPARE_IMAGE_OSES = ['smartos', 'linux', 'windows', 'bsd'];
/** `placeholderImageLifespanDays` of IMGAPI's config. */
const PLACEHOLDER_LIFESPAN_DAYS = 7;
const WORKFLOW_NAME = 'create-from-vm-2.0.0';

const invalid = (message: string, field: string): Error => imgapiErrors.invalidParameter(message, [fieldErr(field, 'Invalid')]);

/**
 * The script the job hands machine_create_image as `prepare_image_script`. A mock CN runs no
 * guest, so this is a stand-in naming the script a real IMGAPI sends.
 */
function prepareImageScript(os: string): string {
  return `#!/bin/sh\n# mockcloud: stands in for sdc-imgapi tools/prepare-image/${os}-prepare-image\nexit 0\n`;
}

export class CreateFromVm {
  private readonly peers: Peers;

  constructor(
    private readonly o: { http: JsonHttpClient; log: Logger; imgapiUrl: () => string; cat: ImageCatalogue; urls: CreateFromVmPeers },
  ) {
    this.peers = new Peers(o.http, { cnapi: o.urls.cnapi, napi: o.urls.napi, imgapi: '' });
  }

  async handle(req: Req, newUuid: () => string): Promise<Reply> {
    const q = query(req);
    const vmUuid = q.vm_uuid;
    if (vmUuid === undefined) {
      throw imgapiErrors.validationFailed("missing 'vm_uuid' parameter", [fieldErr('vm_uuid', 'MissingParameter')]);
    }
    if (!isUuid(vmUuid)) throw invalid(`invalid 'vm_uuid': not a UUID: '${String(vmUuid)}'`, 'vm_uuid');
    const incremental = boolParam(req, 'incremental', false);
    let maxOriginDepth: number | undefined;
    if (q.max_origin_depth !== undefined) {
      maxOriginDepth = Number(q.max_origin_depth);
      if (Number.isNaN(maxOriginDepth)) {
        throw invalid(`max_origin_depth query param, "${String(q.max_origin_depth)}", is not a number`, 'max_origin_depth');
      }
      if (maxOriginDepth < 2) {
        throw invalid(`max_origin_depth query param, ${String(q.max_origin_depth)}, must be greater than 1`, 'max_origin_depth');
      }
    }
    const b = body(req);
    if (typeof b !== 'object' || b === null || Array.isArray(b)) {
      throw imgapiErrors.validationFailed('missing request body (image manifest)', [fieldErr('body', 'MissingParameter')]);
    }
    const manifest: Record<string, unknown> = { ...(b as Record<string, unknown>) };
    const account = q.account;
    if (account !== undefined) {
      if (!isUuid(account)) throw invalid(`invalid "account": not a UUID: "${String(account)}"`, 'account');
      if (manifest.owner === undefined) manifest.owner = account;
      else if (manifest.owner !== account) {
        throw invalid(`invalid owner: given owner, "${String(manifest.owner)}", does not match account, "${account}"`, 'owner');
      }
    }
    delete manifest.channels;
    if (manifest.uuid === undefined) manifest.uuid = newUuid();
    const reqId = req.getId();

    const vm = await this.getVm(String(vmUuid), typeof account === 'string' ? account : undefined, reqId);
    if (vm.docker) throw invalid('cannot create an image from a Docker container', 'vm_uuid');
    if (vm.brand === 'lx' && vm.kernel_version) {
      manifest.tags = { ...((manifest.tags as Obj | undefined) ?? {}), kernel_version: vm.kernel_version };
    }
    const origin = originImage(vm);
    if (!origin) throw imgapiError('InternalError', `could not determine image_uuid for VM ${String(vm.uuid)}`);
    const proto = this.o.cat.get(origin);
    if (!proto) throw imgapiErrors.notFound(`image ${origin} not found`);
    if (!PREPARE_IMAGE_OSES.includes(proto.os)) {
      throw imgapiError(
        'NotAvailable',
        `image creation for OS "${proto.os}" is not currently supported (VM ${String(vm.uuid)}, origin image ${origin})`,
      );
    }

    // The placeholder never replaces an image (IMGAPI's database add of an existing uuid fails).
    if (this.o.cat.get(String(manifest.uuid))) throw alreadyExists(String(manifest.uuid));
    const placeholder = this.placeholder(manifest);
    await this.o.cat.put(placeholder);
    const job = this.o.urls.workflow.create(this.workflow(), {
      image_uuid: placeholder.uuid,
      vm_uuid: vmUuid,
      owner_uuid: placeholder.owner,
      compression: 'gzip',
      incremental,
      prepare_image_script: prepareImageScript(proto.os),
      max_origin_depth: maxOriginDepth,
      manifest,
      req_id: reqId,
      'x-request-id': reqId,
      task: 'create-from-vm',
      target: `/create-from-vm-${String(vmUuid)}`,
    });
    return { ...ok({ image_uuid: placeholder.uuid, job_uuid: job.uuid }), headers: { 'workflow-api': this.o.urls.workflow.url } };
  }

  /** GET the VM from VMAPI, as the owner when an account asks. */
  private async getVm(uuid: string, owner: string | undefined, reqId: string): Promise<Obj> {
    const qs = owner ? `?owner_uuid=${owner}` : '';
    try {
      const res = await this.o.http.call<Obj>({ method: 'GET', url: `${this.o.urls.vmapi}/vms/${uuid}${qs}`, headers: { 'x-request-id': reqId } });
      return res.body;
    } catch (err) {
      if (err instanceof HttpStatusError) throw invalid(`could not get VM "${uuid}" details`, 'vm_uuid');
      throw err;
    }
  }

  /** Image.create of a placeholder: the manifest's own fields, state `creating`, expiring. */
  private placeholder(manifest: Record<string, unknown>): ImageManifest {
    const m = newImage({ ...manifest, type: 'other', os: 'other' }, String(manifest.uuid), true);
    const expires = new Date(Date.now() + PLACEHOLDER_LIFESPAN_DAYS * 86_400_000);
    return { ...m, type: 'null', os: 'null', state: 'creating', expires_at: expires.toISOString() };
  }

  private workflow(): WorkflowDef {
    const { http, cat, log } = this.o;
    const urls = this.o.urls;
    return {
      name: WORKFLOW_NAME,
      timeout: 3630,
      chain: [
        {
          name: 'vmapi.get_vm_server',
          body: async (ctx) => {
            const res = await http.call<Obj>({ method: 'GET', url: `${urls.vmapi}/vms/${String(ctx.params.vm_uuid)}` });
            ctx.state.server_uuid = res.body.server_uuid;
            return 'Got VM server';
          },
        },
        {
          name: 'cnapi.queue_create_from_vm_task',
          body: async (ctx) => {
            const p = ctx.params;
            const path = `/servers/${String(ctx.state.server_uuid)}/vms/${String(p.vm_uuid)}/images`;
            ctx.state.taskId = await this.peers.cnapiTask(
              'POST',
              path,
              {
                jobid: ctx.job.uuid,
                compression: p.compression,
                imgapi_url: this.o.imgapiUrl(),
                incremental: p.incremental,
                manifest: p.manifest,
                prepare_image_script: p.prepare_image_script,
                max_origin_depth: p.max_origin_depth,
              },
              reqIdOf(ctx),
            );
            return 'Create from VM task queued';
          },
        },
        {
          name: 'cnapi.poll_task',
          body: async (ctx) => {
            const task = await this.peers.waitTask(String(ctx.state.taskId), reqIdOf(ctx));
            // pollTask's `cb(new Error(getErrorMesage(task)))`: recorded as {name, message}.
            if (task.status === 'failure') throw new Error(taskErrorMessage(task));
            return 'Image created';
          },
        },
      ],
      onerror: [
        {
          name: 'update_with_error',
          body: async (ctx) => {
            const m = cat.get(String(ctx.params.image_uuid));
            if (!m || m.state !== 'creating') return 'Image is not a placeholder';
            const error = jobError(ctx.job.chain_results[ctx.job.chain_results.length - 1]?.error);
            await cat.put({ ...m, state: 'failed', error });
            log.info({ image: m.uuid, error }, 'create-from-vm failed: placeholder image marked failed');
            return 'Image updated with publishing error';
          },
        },
      ],
    };
  }
}

/**
 * The `job.error` a step's fallback (`setErrorObject`) keeps for update_with_error: the failure
 * as `String(err)` ("Error: ..." for an Error), with its code or restCode when it has one.
 */
function jobError(recorded: StepError | undefined): { message: string; code?: string } {
  if (recorded === undefined) return { message: 'image creation failed' };
  if (typeof recorded === 'string') return { message: recorded };
  const message = `${recorded.name ?? 'Error'}: ${recorded.message ?? ''}`;
  return recorded.restCode ? { message, code: recorded.restCode } : { message };
}

/** The VM's origin image: its boot disk's for bhyve and KVM, its `image_uuid` otherwise. */
function originImage(vm: Obj): string | undefined {
  if (vm.brand === 'bhyve' || vm.brand === 'kvm') {
    const disks = Array.isArray(vm.disks) ? (vm.disks as Obj[]) : [];
    const d = disks.find((x) => typeof x.image_uuid === 'string');
    return d ? String(d.image_uuid) : undefined;
  }
  return typeof vm.image_uuid === 'string' ? vm.image_uuid : undefined;
}
