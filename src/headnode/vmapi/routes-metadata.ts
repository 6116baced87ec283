/**
 * VMAPI's metadata routes (sdc-vmapi lib/endpoints/metadata.js) for `customer_metadata`,
 * `internal_metadata` and `tags` under `/vms/:uuid/:metaType`: list and get read the VM;
 * add, set, delete and delete-all are update jobs (subtask `metadata`) with `set_<type>` /
 * `remove_<type>`. Any other `:metaType` is `404 "Route does not exist"` once the VM is found.
 * The writes take the request body alone (not the query string), as VMAPI's handlers do.
 */
import { body, params, route, type Params, type Req, type RestifyServer } from '../http.js';
import { loadVm, setContext, type VmapiContext } from './context.js';
import { elem, validationFailed, VmapiError, vmapiErrors } from './errors.js';
import { DOCKER_TAG_RE, validDeleteMetadata, validMetadata } from './field-validators.js';
import type { Obj } from './peers.js';
import type { VmObject } from './translate.js';
import { addMetadata, setMetadata } from './validation-update.js';

const META_TYPES = ['customer_metadata', 'internal_metadata', 'tags'];
const HUMAN: Record<string, string> = { customer_metadata: 'metadatum', internal_metadata: 'internal metadatum', tags: 'tag' };

/** `loadVm`, then `reqMetaType`. */
function metaTypeOf(ctx: VmapiContext, req: Req): { vm: VmObject; type: string } {
  const p = params(req);
  const vm = loadVm(ctx, p.uuid, p.owner_uuid);
  const type = String(req.params.metaType);
  if (!META_TYPES.includes(type)) throw vmapiErrors.notFound('Route does not exist');
  return { vm, type };
}

/** A handler's validation, as VMAPI wraps it: the first error element, or one naming the type. */
function guarded<T>(type: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    const first = e instanceof VmapiError ? e.elems?.[0] : undefined;
    throw validationFailed(`Invalid ${HUMAN[type]!} parameters`, [first ?? elem.invalid(type)]);
  }
}

export function mountMetadataRoutes(server: RestifyServer, ctx: VmapiContext): void {
  const log = ctx.log;
  const withCtx = (fn: Parameters<typeof route>[1]) => route(log, fn);

  /** `createUpdateJob` for a metadata change. */
  const updateJob = async (req: Req, vm: VmObject, payload: Params) => {
    payload.subtask = 'metadata';
    setContext(req, payload);
    const p = params(req);
    const subtask = payload.subtask;
    delete payload.subtask;
    const jp: Params = {
      payload: structuredClone(payload),
      subtask,
      task: 'update',
      target: `/update-${vm.uuid}`,
      vm_uuid: vm.uuid,
      image_uuid: vm.image_uuid,
      vm_brand: vm.brand,
      owner_uuid: vm.owner_uuid,
      server_uuid: vm.server_uuid,
      last_modified: vm.last_modified,
      'x-request-id': req.getId(),
    };
    setContext(req, jp);
    if (p.creator_uuid !== undefined) jp.creator_uuid = p.creator_uuid;
    if (p.origin !== undefined) jp.origin = p.origin;
    const job = ctx.jobs.create(ctx.workflows.update!, jp);
    return { status: 202, body: { vm_uuid: vm.uuid, job_uuid: job.uuid } };
  };

  server.get(
    { path: '/vms/:uuid/:metaType', name: 'ListMetadata' },
    withCtx(async (req) => {
      const { vm, type } = metaTypeOf(ctx, req);
      return { status: 200, body: vm[type] };
    }),
  );

  server.get(
    { path: '/vms/:uuid/:metaType/:key', name: 'GetMetadata' },
    withCtx(async (req) => {
      const { vm, type } = metaTypeOf(ctx, req);
      const key = String(req.params.key);
      const md = (vm[type] ?? {}) as Obj;
      if (!Object.prototype.hasOwnProperty.call(md, key)) throw vmapiErrors.notFound(`${HUMAN[type]} "${key}" not found`);
      return { status: 200, body: md[key] };
    }),
  );

  server.post(
    { path: '/vms/:uuid/:metaType', name: 'AddMetadata' },
    withCtx(async (req) => {
      const { vm, type } = metaTypeOf(ctx, req);
      const payload = guarded(type, () => {
        const out = addMetadata(type, body(req));
        validMetadata(type, out[`set_${type}`], true);
        return out;
      });
      return updateJob(req, vm, payload);
    }),
  );

  server.put(
    { path: '/vms/:uuid/:metaType', name: 'SetMetadata' },
    withCtx(async (req) => {
      const { vm, type } = metaTypeOf(ctx, req);
      const payload = guarded(type, () => {
        const out = setMetadata(vm, type, body(req));
        validMetadata(type, out[`set_${type}`], true);
        for (const k of (out[`remove_${type}`] ?? []) as string[]) validDeleteMetadata(type, k);
        return out;
      });
      return updateJob(req, vm, payload);
    }),
  );

  server.del(
    { path: '/vms/:uuid/:metaType/:key', name: 'DeleteMetadata' },
    withCtx(async (req) => {
      const { vm, type } = metaTypeOf(ctx, req);
      const key = String(req.params.key);
      const md = (vm[type] ?? {}) as Obj;
      if (!Object.prototype.hasOwnProperty.call(md, key)) throw vmapiErrors.notFound(`${HUMAN[type]} "${key}" not found`);
      guarded(type, () => validDeleteMetadata(type, key));
      return updateJob(req, vm, { [`remove_${type}`]: [key] });
    }),
  );

  server.del(
    { path: '/vms/:uuid/:metaType', name: 'DeleteAllMetadata' },
    withCtx(async (req) => {
      const { vm, type } = metaTypeOf(ctx, req);
      const md = (vm[type] ?? {}) as Obj;
      if (type === 'tags') {
        guarded(type, () => {
          for (const k of Object.keys(md)) if (DOCKER_TAG_RE.test(k)) validDeleteMetadata(type, k);
        });
      }
      return updateJob(req, vm, { [`remove_${type}`]: Object.keys(md) });
    }),
  );
}
