/**
 * CNAPI's VmImagesCreate (sdc-cnapi lib/endpoints/vms.js `VmImages.create`):
 * `POST /servers/:server_uuid/vms/:uuid/images` checks the VM rules, then `compression`,
 * `imgapi_url` and `manifest` (with the optional `jobid`, `incremental` and
 * `prepare_image_script`), and sends `machine_create_image` with the merged parameters,
 * answering `{id}` at once. IMGAPI's create-from-vm workflow polls that task.
 */
import { sendAsync, vmPreconditions, type CnapiContext } from './context.js';
import { route, type RestifyServer } from '../http.js';
import { ensureParamsValid, type Rules } from './validate.js';

const IMAGE_CREATE_RULES: Rules = {
  jobid: { optional: true, type: 'string' },
  compression: { type: 'string' },
  imgapi_url: { type: 'string' },
  incremental: { optional: true, type: 'boolean' },
  prepare_image_script: { optional: true, type: 'string' },
  manifest: { type: 'object' },
};

export function mountImageRoutes(server: RestifyServer, ctx: CnapiContext): void {
  server.post(
    { path: '/servers/:server_uuid/vms/:uuid/images', name: 'VmImageCreate' },
    route(ctx.log, async (req) => {
      const { server: s, p } = vmPreconditions(ctx, req);
      ensureParamsValid(p, IMAGE_CREATE_RULES);
      return sendAsync(ctx, s, 'machine_create_image', p, req.getId());
    }),
  );
}
