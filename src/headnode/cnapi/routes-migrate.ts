/**
 * CNAPI's VmMigrate (sdc-cnapi lib/endpoints/vms.js `VM.migrate`, lib/validation/
 * migration.js): `POST /servers/:server_uuid/vms/:uuid/migrate` needs a `migrationTask`
 * object with a string `action` and an object `record`, and sends `machine_migrate` with
 * the merged parameters (VMAPI's migration workflows put the cn-agent action in `action`),
 * answering `{id}` at once.
 */
import { requireRunning, requireServer, requireVmUuid, type CnapiContext } from './context.js';
import { params, route, type Params, type RestifyServer } from '../http.js';
import { sendAsync } from './routes-vms.js';
import { ensureParamsValid, type Rules } from './validate.js';

const MIGRATION_RULES: Rules = {
  jobid: { optional: true, type: 'string' },
  migrationTask: { type: 'object' },
  uuid: { type: 'string' },
  'migrationTask.action': { type: 'string' },
  'migrationTask.record': { type: 'object' },
};

/** The rules name nested fields with a dot, as CNAPI's validator resolves them. */
function withNested(p: Params): Params {
  const task = p.migrationTask;
  if (!task || typeof task !== 'object' || Array.isArray(task)) return p;
  const t = task as Record<string, unknown>;
  return { ...p, 'migrationTask.action': t.action, 'migrationTask.record': t.record };
}

export function mountMigrateRoutes(server: RestifyServer, ctx: CnapiContext): void {
  server.post(
    { path: '/servers/:server_uuid/vms/:uuid/migrate', name: 'VmMigrate' },
    route(ctx.log, async (req) => {
      const p = params(req);
      const s = requireServer(ctx, p.server_uuid);
      requireVmUuid(p.uuid);
      requireRunning(s);
      ensureParamsValid(withNested(p), MIGRATION_RULES);
      return sendAsync(ctx, s, 'machine_migrate', p, req.getId());
    }),
  );
}
