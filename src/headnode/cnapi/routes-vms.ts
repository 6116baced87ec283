/**
 * CNAPI's VM routes (sdc-cnapi lib/endpoints/vms.js): each sends one cn-agent task with the
 * merged request parameters. Asynchronous ones answer `{"id": <task id>}` at once;
 * VmLoad, VmProc, VmInfo and VmVnc wait for cn-agent (60 s, 20 s, 10 s, 10 s) and map a
 * `VmNotFound` restCode to `404 "VM <uuid> not found"`.
 */
import dns from 'node:dns/promises';
import net from 'node:net';
import { MockcloudError } from '../../common/errors.js';
import { HttpStatusError } from '../../common/http-client.js';
import { requireRunning, requireServer, restCodeOf, sendAsync, taskAnswer, VM_RULES, vmPreconditions, type CnapiContext } from './context.js';
import { ok, params, route, type Params, type RestifyServer } from '../http.js';
import type { ServerRecord } from './servers.js';
import { ensureParamsValid, type Rules } from './validate.js';

/** `updateLimitedToInternalMetadata`: start/reboot may only carry `update.set_internal_metadata`. */
function checkUpdateLimited(p: Params, name: string): void {
  if (!Object.prototype.hasOwnProperty.call(p, 'update')) return;
  const keys = p.update && typeof p.update === 'object' ? Object.keys(p.update) : [];
  if (keys.length !== 1 || keys[0] !== 'set_internal_metadata') {
    throw new MockcloudError(
      'InvalidArgument',
      `Vm.${name} update param only allows set_internal_metadata, received: [${keys.join(',')}]`,
    );
  }
}

export function mountVmRoutes(server: RestifyServer, ctx: CnapiContext): void {
  const log = ctx.log;

  /** A route that validates like `vmValidationRules` and sends `task` asynchronously. */
  const simple = (
    method: 'post' | 'put' | 'del',
    path: string,
    name: string,
    task: string,
    extra?: (p: Params) => void,
    rules: Rules = VM_RULES,
  ): void => {
    server[method](
      { path, name },
      route(log, async (req) => {
        const { server: s, p } = vmPreconditions(ctx, req, rules);
        extra?.(p);
        return sendAsync(ctx, s, task, p, req.getId());
      }),
    );
  };

  server.post(
    { path: '/servers/:server_uuid/vms', name: 'VmCreate' },
    route(log, async (req) => {
      const p = params(req);
      const s = requireServer(ctx, p.server_uuid);
      requireRunning(s);
      ensureParamsValid(p, VM_RULES);
      await addDatasetUrl(ctx, p);
      return sendAsync(ctx, s, 'machine_create', p, req.getId());
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/vms/nics/update', name: 'VmNicsUpdate' },
    route(log, async (req) => {
      const p = params(req);
      const s = requireServer(ctx, p.server_uuid);
      requireRunning(s);
      if (!Object.prototype.hasOwnProperty.call(s.sysinfo ?? {}, 'SDC Version')) {
        throw new MockcloudError('BadRequest', 'Unsupported compute node version', { restCode: 'InvalidVersion' });
      }
      return sendAsync(ctx, s, 'machine_update_nics', p, req.getId());
    }),
  );

  server.get(
    { path: '/servers/:server_uuid/vms', name: 'VmList' },
    route(log, async (req) => {
      const p = params(req);
      const s = requireServer(ctx, p.server_uuid);
      if (!ctx.peers.vmapi) throw new MockcloudError('ServiceUnavailable', 'VMAPI is not configured');
      const fields = 'uuid,owner_uuid,quota,max_physical_memory,zone_state,state,brand,cpu_cap,last_modified';
      const url = `${ctx.peers.vmapi}/vms?server_uuid=${s.uuid}&fields=${fields}`;
      const res = await ctx.http.call({ method: 'GET', url, headers: { 'x-request-id': req.getId() } });
      return ok(res.body);
    }),
  );

  server.get(
    { path: '/servers/:server_uuid/vms/:uuid', name: 'VmLoad' },
    route(log, async (req) => {
      const { server: s, p } = vmPreconditions(ctx, req);
      const taskParams: Params = { uuid: p.uuid };
      if (p.include_dni !== undefined) taskParams.include_dni = p.include_dni === 'true' || p.include_dni === true;
      return vmTaskAnswer(ctx, s, 'machine_load', taskParams, req.getId(), { timeoutS: 60, persist: false });
    }),
  );

  server.get(
    { path: '/servers/:server_uuid/vms/:uuid/proc', name: 'VmProc' },
    route(log, async (req) => {
      const { server: s, p } = vmPreconditions(ctx, req);
      return vmTaskAnswer(ctx, s, 'machine_proc', { uuid: p.uuid }, req.getId(), { timeoutS: 20 });
    }),
  );

  server.get(
    { path: '/servers/:server_uuid/vms/:uuid/info', name: 'VmInfo' },
    route(log, async (req) => {
      const { server: s, p } = vmPreconditions(ctx, req);
      const types = typeof p.info === 'string' ? p.info.split(',') : ['all'];
      return vmTaskAnswer(ctx, s, 'machine_info', { uuid: p.uuid, types }, req.getId(), { timeoutS: 10 });
    }),
  );

  server.get(
    { path: '/servers/:server_uuid/vms/:uuid/vnc', name: 'VmVnc' },
    route(log, async (req) => {
      const { server: s, p } = vmPreconditions(ctx, req);
      const info = await vmTaskAnswer(ctx, s, 'machine_info', { uuid: p.uuid, types: ['vnc'] }, req.getId(), { timeoutS: 10 });
      return ok(vncOf(info.body));
    }),
  );

  simple('post', '/servers/:server_uuid/vms/:uuid/update', 'VmUpdate', 'machine_update');
  simple('post', '/servers/:server_uuid/vms/:uuid/start', 'VmStart', 'machine_boot', (p) => checkUpdateLimited(p, 'start'));
  simple('post', '/servers/:server_uuid/vms/:uuid/stop', 'VmStop', 'machine_shutdown');
  simple('post', '/servers/:server_uuid/vms/:uuid/kill', 'VmKill', 'machine_kill', undefined, {
    jobid: { optional: true, type: 'string' },
    uuid: { type: 'string', trim: true },
    signal: { optional: true, type: 'numberOrString' },
  });
  simple('post', '/servers/:server_uuid/vms/:uuid/reboot', 'VmReboot', 'machine_reboot', (p) =>
    checkUpdateLimited(p, 'reboot'),
  );
  simple('post', '/servers/:server_uuid/vms/:uuid/reprovision', 'VmReprovision', 'machine_reprovision', undefined, {
    jobid: { optional: true, type: 'string' },
    uuid: { type: 'string', trim: true },
    image_uuid: { type: 'string', trim: true },
  });
  simple('del', '/servers/:server_uuid/vms/:uuid', 'VmDestroy', 'machine_destroy');
  simple('put', '/servers/:server_uuid/vms/:uuid/snapshots', 'VmSnapshotCreate', 'machine_create_snapshot');
  simple(
    'put',
    '/servers/:server_uuid/vms/:uuid/snapshots/:snapshot_name/rollback',
    'VmSnapshotRollback',
    'machine_rollback_snapshot',
  );
  simple(
    'del',
    '/servers/:server_uuid/vms/:uuid/snapshots/:snapshot_name',
    'VmSnapshotDestroy',
    'machine_delete_snapshot',
  );
}

/** A VM task CNAPI waits for: a `VmNotFound` failure is `404 "VM <uuid> not found"`. */
function vmTaskAnswer(
  ctx: CnapiContext,
  server: ServerRecord,
  task: string,
  taskParams: Params,
  reqId: string,
  opts: { timeoutS: number; persist?: boolean },
) {
  return taskAnswer(ctx, server, task, taskParams, reqId, opts, (o) =>
    restCodeOf(o) === 'VmNotFound' ? new MockcloudError('ResourceNotFound', `VM ${String(taskParams.uuid)} not found`) : undefined,
  );
}

/**
 * VmVnc (sdc-cnapi lib/endpoints/vms.js VM.vnc): `JSON.parse` of machine_info's text, then
 * `{host, port}` of its `vnc` (keys left out when vmadmd has no listener for the VM).
 */
function vncOf(infoText: unknown): { host?: unknown; port?: unknown } {
  let info: { vnc?: { host?: unknown; port?: unknown } };
  try {
    info = JSON.parse(infoText as string) as typeof info;
  } catch {
    throw new MockcloudError('InternalError', 'failed to parse JSON response from vm.info');
  }
  if (!info?.vnc || typeof info.vnc !== 'object') {
    // Real CNAPI reads `vminfo.vnc.host` unchecked and its process dies here; we answer 500.
    throw new MockcloudError('InternalError', 'vm.info answered without vnc');
  }
  return { host: info.vnc.host, port: info.vnc.port };
}

/**
 * VmCreate's image handling: the image (from the payload VMAPI sends, else from IMGAPI)
 * must name its file compression; cn-agent gets `dataset_url` and
 * `dataset_url_compression`. CNAPI resolves the IMGAPI host name through DNS first and
 * fails when it cannot; an IP literal (the dev headnode's loopback address) is used as is,
 * since `dns.resolve` cannot resolve an IP and real CNAPI never runs with one.
 */
async function addDatasetUrl(ctx: CnapiContext, p: Params): Promise<void> {
  const brand = p.brand;
  let imageUuid: unknown;
  if (brand === 'bhyve' || brand === 'kvm') {
    const disks = p.disks;
    if (Array.isArray(disks) && disks[0] && typeof disks[0] === 'object') imageUuid = (disks[0] as Params).image_uuid;
  } else {
    imageUuid = p.image_uuid;
  }
  if (typeof imageUuid !== 'string') {
    throw new MockcloudError('InvalidArgument', `invalid image_uuid: ${JSON.stringify(imageUuid) ?? 'undefined'}`);
  }
  let image = p.image as { files?: { compression?: string }[]; origin?: string } | undefined;
  if (!image || !Array.isArray(image.files) || image.files.length === 0) {
    image = await fetchImage(ctx, imageUuid);
  }
  const files = image?.files;
  if (!image || !Array.isArray(files) || files.length === 0) {
    throw new MockcloudError('InvalidArgument', 'missing required parameter images.files');
  }
  const base = new URL(ctx.peers.imgapi);
  const host = base.hostname.replace(/^\[|\]$/g, '');
  if (!net.isIP(host)) {
    try {
      const { address } = await dns.lookup(host);
      base.hostname = address;
    } catch (err) {
      throw new MockcloudError('InternalError', `failed to resolve imgapi address ${host}`, { cause: err });
    }
  }
  if (image.origin) {
    const origin = (await fetchImage(ctx, image.origin)) as { files?: { compression?: string }[] } | undefined;
    if (!origin) throw new MockcloudError('InternalError', 'failed to fetch origin manifest');
    p.dataset_origin_uuid = image.origin;
    p.origin = origin;
    p.dataset_origin_url = new URL(`/images/${image.origin}/file`, base).toString();
    p.dataset_origin_url_compression = origin.files?.[0]?.compression;
  }
  p.dataset_url_compression = files[0]!.compression;
  p.dataset_url = new URL(`/images/${imageUuid}/file`, base).toString();
}

async function fetchImage(
  ctx: CnapiContext,
  uuid: string,
): Promise<{ files?: { compression?: string }[]; origin?: string } | undefined> {
  try {
    const res = await ctx.http.call<{ files?: { compression?: string }[] }>({
      method: 'GET',
      url: `${ctx.peers.imgapi}/images/${encodeURIComponent(uuid)}`,
    });
    return res.body;
  } catch (err) {
    if (err instanceof HttpStatusError && err.statusCode === 404) return undefined;
    throw new MockcloudError('InternalError', `failed to get image ${uuid} from IMGAPI`, { cause: err });
  }
}
