/**
 * CNAPI's (deprecated) ZFS routes (sdc-cnapi lib/endpoints/zfs.js): each sends one zfs_* task
 * to the server's cn-agent and waits for it (`ModelServer.zfsTask`, no time limit of its own).
 * Only the server must exist (`prepopulate: ['server']`); its state is not checked.
 *
 *   GET    /servers/:server_uuid/datasets                       zfs_list_datasets     200 [rows]
 *   POST   /servers/:server_uuid/datasets                       zfs_create_dataset    204
 *   POST   /servers/:server_uuid/datasets/:dataset/snapshot     zfs_snapshot_dataset  204
 *   POST   /servers/:server_uuid/datasets/:dataset/rollback     zfs_rollback_dataset  204
 *   GET    /servers/:server_uuid/datasets/:dataset/snapshots    zfs_list_snapshots    200 [rows]
 *   GET    /servers/:server_uuid/dataset-properties             zfs_get_properties    200 {ds: {prop: value}}
 *   GET    /servers/:server_uuid/datasets/:dataset/properties   zfs_get_properties    200 {ds: {prop: value}}
 *   POST   /servers/:server_uuid/datasets/:dataset/properties   zfs_set_properties    204
 *   DELETE /servers/:server_uuid/datasets/:dataset              zfs_destroy_dataset   204
 *   GET    /servers/:server_uuid/zpools                         zfs_list_pools        200 [rows]
 *
 * Params as CNAPI passes them: the merged request params for most; `{dataset: <dataset>@<name>}`
 * for snapshot and rollback; `{dataset?, properties?}` for the property reads, the properties
 * being the values of every `prop*` param. A failed task is `500 InternalError` with
 * `<what>:posting task to cn-agent: <cn-agent's error body>` (CNAPI's restify 4 client puts the
 * raw body in the error's message; snapshot and rollback both say "cannot create snapshot: ").
 */
import { MockcloudError } from '../../common/errors.js';
import { requireServer, runTaskSync, type CnapiContext } from './context.js';
import type { TaskOutcome } from './dispatch.js';
import { noContent, ok, params, route, type Params, type Req, type RestifyServer } from '../http.js';

/** The message of the VError CNAPI's sendTaskRequest hands to the route for a failed task. */
function postingError(outcome: Exclude<TaskOutcome, { ok: true }>): string {
  let cause: string;
  if (outcome.statusCode === undefined) cause = outcome.message;
  else if (outcome.body === undefined) cause = '';
  else cause = typeof outcome.body === 'string' ? outcome.body : JSON.stringify(outcome.body);
  return cause ? `posting task to cn-agent: ${cause}` : 'posting task to cn-agent';
}

/** `findProps`: the values of every param whose name starts with `prop`, in order. */
function findProps(p: Params): unknown[] {
  return Object.keys(p)
    .filter((k) => k.startsWith('prop'))
    .map((k) => p[k]);
}

export function mountZfsRoutes(server: RestifyServer, ctx: CnapiContext): void {
  const log = ctx.log;

  const zfsTask = async (req: Req, task: string, taskParams: Params, what: string): Promise<unknown> => {
    const s = requireServer(ctx, params(req).server_uuid);
    const outcome = await runTaskSync(ctx, s, task, taskParams, req.getId());
    if (!outcome.ok) throw new MockcloudError('InternalError', `${what}${postingError(outcome)}`);
    return outcome.body;
  };

  const snapshotParams = (req: Req): Params => {
    const p = params(req);
    return { dataset: `${String(p.dataset)}@${String(p.name)}` };
  };

  const propertyReadParams = (req: Req, withDataset: boolean): Params => {
    const p = params(req);
    const out: Params = {};
    if (withDataset) out.dataset = p.dataset;
    const props = findProps(p);
    if (props.length > 0) out.properties = props;
    return out;
  };

  const withoutLog = (body: unknown): unknown => {
    if (body && typeof body === 'object' && !Array.isArray(body)) delete (body as Record<string, unknown>).log;
    return body;
  };

  server.get(
    { path: '/servers/:server_uuid/datasets', name: 'DatasetList' },
    route(log, async (req) => ok(await zfsTask(req, 'zfs_list_datasets', params(req), 'cannot list datasets:'))),
  );

  server.post(
    { path: '/servers/:server_uuid/datasets', name: 'DatasetCreate' },
    route(log, async (req) => {
      await zfsTask(req, 'zfs_create_dataset', params(req), 'cannot create dataset:');
      return noContent();
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/datasets/:dataset/snapshot', name: 'SnapshotCreate' },
    route(log, async (req) => {
      await zfsTask(req, 'zfs_snapshot_dataset', snapshotParams(req), 'cannot create snapshot: ');
      return noContent();
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/datasets/:dataset/rollback', name: 'SnapshotRollback' },
    route(log, async (req) => {
      await zfsTask(req, 'zfs_rollback_dataset', snapshotParams(req), 'cannot create snapshot: ');
      return noContent();
    }),
  );

  server.get(
    { path: '/servers/:server_uuid/datasets/:dataset/snapshots', name: 'SnapshotList' },
    route(log, async (req) => ok(await zfsTask(req, 'zfs_list_snapshots', params(req), 'cannot list snapshots:'))),
  );

  server.get(
    { path: '/servers/:server_uuid/dataset-properties', name: 'DatasetPropertiesGetAll' },
    route(log, async (req) =>
      ok(withoutLog(await zfsTask(req, 'zfs_get_properties', propertyReadParams(req, false), 'cannot get properties:'))),
    ),
  );

  server.get(
    { path: '/servers/:server_uuid/datasets/:dataset/properties', name: 'DatasePropertiesGet' },
    route(log, async (req) =>
      ok(withoutLog(await zfsTask(req, 'zfs_get_properties', propertyReadParams(req, true), 'cannot get properties:'))),
    ),
  );

  server.post(
    { path: '/servers/:server_uuid/datasets/:dataset/properties', name: 'DatasetPropertiesSet' },
    route(log, async (req) => {
      await zfsTask(req, 'zfs_set_properties', params(req), 'cannot set properties:');
      return noContent();
    }),
  );

  server.del(
    { path: '/servers/:server_uuid/datasets/:dataset', name: 'DatasetDestroy' },
    route(log, async (req) => {
      await zfsTask(req, 'zfs_destroy_dataset', params(req), 'cannot destroy dataset:');
      return noContent();
    }),
  );

  server.get(
    { path: '/servers/:server_uuid/zpools', name: 'ZpoolList' },
    route(log, async (req) => ok(await zfsTask(req, 'zfs_list_pools', params(req), 'cannot list pools:'))),
  );
}
