/**
 * CNAPI's VmMigrate (sdc-cnapi lib/endpoints/vms.js `VM.migrate`, lib/validation/
 * migration.js): `POST /servers/:server_uuid/vms/:uuid/migrate` needs a `migrationTask`
 * object with a string `action` and an object `record`, and sends `machine_migrate` with
 * the merged parameters (VMAPI's migration workflows put the cn-agent action in `action`),
 * answering `{id}` at once.
 */
import { sendAsync, vmPreconditions, type CnapiContext } from './context.js';
import { route, type RestifyServer } from '../http.js';
import type { Rules } from './validate.js';

const MIGRATION_RULES: Rules = {
  jobid: { optional: true, type: 'string' },
  migrationTask: { type: 'object' },
  uuid: { type: 'string' },
  'migrationTask.action': { type: 'string' },
  'migrationTask.record': { type: 'object' },
};

export function mountMigrateRoutes(server: RestifyServer, ctx: CnapiContext): void {
  server.post(
    { path: '/servers/:server_uuid/vms/:uuid/migrate', name: 'VmMigrate' },
    route(ctx.log, async (req) => {
      const { server: s, p } = vmPreconditions(ctx, req, MIGRATION_RULES);
      return sendAsync(ctx, s, 'machine_migrate', p, req.getId());
    }),
  );
}
