/**
 * VMAPI's VM routes (sdc-vmapi lib/endpoints/vms.js `mount`): ListVms and HeadVms (role tag
 * prefilter, validation, the Moray search, `x-joyent-resource-count`, `fields`), GetVm and
 * HeadVm (with `?sync=true`), GetVmProc, CreateVm (create.ts), UpdateVm (actions.ts),
 * DeleteVm, and vm-agent's PutVm / PutVms. The migration routes are left out (unknown routes).
 */
import { ok, params, query, route, type Params, type RestifyServer } from '../http.js';
import { createVm } from './create.js';
import { updateVm } from './actions.js';
import { checkVmLookup, loadVm, respondWithJob, setContext, syncParam, type VmapiContext } from './context.js';
import { elem, plainError, validationFailed, validUUID, vmapiErrors } from './errors.js';
import { InvalidQueryError } from './ldap.js';
import { runListVms } from './list-vms.js';
import { relay, type Obj } from './peers.js';
import { translateVm, type VmObject } from './translate.js';
import { validateListParams } from './validation-list.js';
import { storeVm } from './workflow-steps.js';

/** `renderVms`: only the `fields` asked for (`*` = all, plus role_tags). */
function render(ctx: VmapiContext, vms: VmObject[], fieldsParam: unknown, sample?: VmObject): Obj[] {
  if (typeof fieldsParam !== 'string' || !fieldsParam) return vms;
  let fields: string[] = [];
  for (const f of fieldsParam.split(',')) {
    if (f === '*') {
      fields = [...Object.keys(sample ?? vms[0] ?? {}), 'role_tags'];
      break;
    }
    fields.push(f);
  }
  fields = fields.filter((f, i) => fields.indexOf(f) === i);
  return vms.map((vm) => {
    const out: Obj = {};
    for (const f of fields) out[f] = f === 'role_tags' ? ctx.vms.getRoleTags(vm.uuid) : vm[f];
    return out;
  });
}

/** `preFilterVms`: `role_tags` narrows the VMs to those carrying one of them. */
function roleTagUuids(ctx: VmapiContext, roleTags: unknown): string[] | undefined {
  if (!roleTags) return undefined;
  const tags = String(roleTags).split(',');
  for (const t of tags) {
    if (!validUUID(t)) throw validationFailed('Invalid Role Tags', [elem.uuid('role_tags', `${t} is not a UUID`)]);
  }
  return ctx.vms.vmsWithRoleTags(tags);
}

export function mountVmRoutes(server: RestifyServer, ctx: VmapiContext): void {
  const log = ctx.log;

  const listVms = route(log, async (req) => {
    const p: Params = { ...params(req) };
    const q = query(req);
    const uuids = roleTagUuids(ctx, q.role_tags);
    if (uuids && uuids.length === 0) return { status: 200, body: [], headers: { 'x-joyent-resource-count': '0' } };
    validateListParams(p);
    if (uuids) p.uuids = uuids;
    let result;
    try {
      result = runListVms(ctx.vms, p);
    } catch (err) {
      if (err instanceof InvalidQueryError) throw plainError(err.message, err);
      throw err;
    }
    return {
      status: 200,
      body: render(ctx, result.vms, q.fields),
      headers: { 'x-joyent-resource-count': String(result.count) },
    };
  });
  server.get({ path: '/vms', name: 'ListVms' }, listVms);
  server.head({ path: '/vms', name: 'HeadVms' }, listVms);

  const getVm = route(log, async (req) => {
    const p = params(req);
    let vm = loadVm(ctx, p.uuid, p.owner_uuid);
    if (p.sync === 'true') vm = await syncFromCn(ctx, vm, req.getId());
    return ok(render(ctx, [vm], query(req).fields, vm)[0]);
  });
  server.get({ path: '/vms/:uuid', name: 'GetVm' }, getVm);
  server.head({ path: '/vms/:uuid', name: 'HeadVm' }, getVm);

  server.get(
    { path: '/vms/:uuid/proc', name: 'GetVmProc' },
    route(log, async (req) => {
      const p = params(req);
      const vm = loadVm(ctx, p.uuid, p.owner_uuid);
      if (vm.server_uuid === undefined || vm.server_uuid === null) {
        throw validationFailed('Invalid Parameters', [elem.uuid('vm.server_uuid')]);
      }
      if (vm.state !== 'running') throw vmapiErrors.notRunning();
      try {
        return ok(await ctx.peers.getVmProc(String(vm.server_uuid), vm.uuid, req.getId()));
      } catch (err) {
        throw relay(err);
      }
    }),
  );

  server.post({ path: '/vms', name: 'CreateVm' }, route(log, async (req) => createVm(ctx, req)));

  server.del(
    { path: '/vms/:uuid', name: 'DeleteVm' },
    route(log, async (req) => {
      const p = params(req);
      const vm = loadVm(ctx, p.uuid, p.owner_uuid);
      const sync = syncParam(p.sync);
      if (vm.server_uuid === undefined || vm.server_uuid === null) {
        throw vmapiErrors.conflict('Cannot delete a VM with no server_uuid');
      }
      const jp: Params = {
        task: 'destroy',
        target: `/destroy-${vm.uuid}`,
        vm_uuid: vm.uuid,
        owner_uuid: vm.owner_uuid,
        server_uuid: vm.server_uuid,
        current_state: vm.state,
        currentVm: vm,
        'x-request-id': req.getId(),
      };
      setContext(req, jp);
      if (p.creator_uuid !== undefined) jp.creator_uuid = p.creator_uuid;
      if (p.origin !== undefined) jp.origin = p.origin;
      return respondWithJob(ctx, vm.uuid, ctx.jobs.create(ctx.workflows.destroy!, jp), sync);
    }),
  );

  server.post({ path: '/vms/:uuid', name: 'UpdateVm' }, route(log, async (req) => updateVm(ctx, req)));

  server.put(
    { path: '/vms/:uuid', name: 'PutVm' },
    route(log, async (req) => {
      const p = params(req);
      checkVmLookup(p.uuid, p.owner_uuid);
      const vm = translateVm(p as Obj & { uuid: string }, false);
      storeVm(ctx.env, vm);
      await ctx.saveVms();
      return ok(vm.state === 'destroyed' ? (ctx.vms.getRaw(vm.uuid) ?? vm) : vm);
    }),
  );

  server.put(
    { path: '/vms', name: 'PutVms' },
    route(log, async (req) => {
      const q = query(req);
      const p = params(req);
      if (!q.server_uuid) throw validationFailed('Invalid Parameters', [elem.missing('server_uuid')]);
      if (!validUUID(q.server_uuid)) throw validationFailed('Invalid Parameters', [elem.uuid('server_uuid')]);
      if (!p.vms) throw validationFailed('Invalid Parameters', [elem.missing('vms')]);
      for (const uuid of Object.keys(p.vms as Obj)) {
        const v = (p.vms as Record<string, Obj>)[uuid];
        if (!v || typeof v !== 'object') continue;
        ctx.vms.put(translateVm({ ...v, uuid }, false));
      }
      await ctx.saveVms();
      return { status: 200 };
    }),
  );
}

/** `_getVmSync`: reload the VM from its CN; gone from the CN means destroyed. */
async function syncFromCn(ctx: VmapiContext, vm: VmObject, reqId: string): Promise<VmObject> {
  if (typeof vm.server_uuid === 'string' && vm.server_uuid.length > 0) {
    let fresh: Obj | undefined;
    try {
      fresh = await ctx.peers.loadVm(vm.server_uuid, vm.uuid, reqId);
    } catch (err) {
      throw relay(err);
    }
    if (fresh) {
      ctx.vms.put({ ...translateVm(fresh, true), uuid: vm.uuid });
      await ctx.saveVms();
      return vm;
    }
  }
  const marked = ctx.vms.markAsDestroyed(vm.uuid);
  await ctx.saveVms();
  return translateVm(marked ?? vm, true);
}
