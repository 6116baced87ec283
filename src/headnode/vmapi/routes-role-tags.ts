/**
 * VMAPI's role tag routes (sdc-vmapi lib/endpoints/role-tags.js): role tags kept per VM
 * (VMAPI's `vmapi_vm_role_tags` bucket), added to (POST), replaced (PUT) and deleted, each
 * answering the VM's role tags. GET has no route of its own here: `/vms/:uuid/role_tags`
 * falls to the metadata routes, which answer it as VMAPI does (`Route does not exist`).
 */
import { params, route, type RestifyServer } from '../http.js';
import { loadVm, type VmapiContext } from './context.js';
import { elem, validationFailed, validUUID, vmapiErrors } from './errors.js';

/** The `role_tags` parameter: a non-empty array of UUIDs. */
function roleTagsParam(v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0) {
    throw validationFailed('Invalid Role Tags', [elem.invalid('role_tags', 'Must be an array of UUIDs')]);
  }
  for (const t of v) {
    if (!validUUID(t)) throw validationFailed('Invalid Role Tags', [elem.uuid('role_tags', `${String(t)} is not a UUID`)]);
  }
  return v as string[];
}

export function mountRoleTagRoutes(server: RestifyServer, ctx: VmapiContext): void {
  const log = ctx.log;

  server.post(
    { path: '/vms/:uuid/role_tags', name: 'AddRoleTags' },
    route(log, async (req) => {
      const p = params(req);
      const vm = loadVm(ctx, p.uuid, p.owner_uuid);
      const current = ctx.vms.getRoleTags(vm.uuid);
      for (const t of roleTagsParam(p.role_tags)) if (!current.includes(t)) current.push(t);
      ctx.vms.putRoleTags(vm.uuid, current);
      await ctx.saveVms();
      return { status: 200, body: current };
    }),
  );

  server.put(
    { path: '/vms/:uuid/role_tags', name: 'SetRoleTags' },
    route(log, async (req) => {
      const p = params(req);
      const vm = loadVm(ctx, p.uuid, p.owner_uuid);
      const tags = roleTagsParam(p.role_tags);
      ctx.vms.putRoleTags(vm.uuid, tags);
      await ctx.saveVms();
      return { status: 200, body: tags };
    }),
  );

  server.del(
    { path: '/vms/:uuid/role_tags/:role_tag', name: 'DeleteRoleTag' },
    route(log, async (req) => {
      const p = params(req);
      const vm = loadVm(ctx, p.uuid, p.owner_uuid);
      const current = ctx.vms.getRoleTags(vm.uuid);
      const i = current.indexOf(String(p.role_tag));
      if (i === -1) throw vmapiErrors.notFound('Role Tag not found');
      current.splice(i, 1);
      ctx.vms.putRoleTags(vm.uuid, current);
      await ctx.saveVms();
      return { status: 200, body: current };
    }),
  );

  server.del(
    { path: '/vms/:uuid/role_tags', name: 'DeleteAllRoleTags' },
    route(log, async (req) => {
      const p = params(req);
      const vm = loadVm(ctx, p.uuid, p.owner_uuid);
      ctx.vms.deleteRoleTags(vm.uuid);
      await ctx.saveVms();
      return { status: 200 };
    }),
  );
}
