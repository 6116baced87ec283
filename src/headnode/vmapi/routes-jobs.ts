/**
 * VMAPI's job routes (sdc-vmapi lib/endpoints/jobs.js), ListStatuses (statuses.js) and ping
 * (ping.js). This VMAPI is also its own workflow API (the `workflow-api` header points here),
 * so `/jobs/:uuid` answers as wf-api does: a missing job is wf-api's 404, an unknown
 * `execution` filter its 409. `/job_results` is the post-back of failed provisions.
 */
import { ok, params, route, type RestifyServer } from '../http.js';
import { loadVm, type VmapiContext } from './context.js';
import { plainError, VmapiError, vmapiErrors } from './errors.js';
import { renderJob } from './jobs.js';
import { postBackFailed } from './workflow-provision.js';

const EXECUTIONS = ['queued', 'failed', 'succeeded', 'running', 'canceled'];

export function mountJobRoutes(server: RestifyServer, ctx: VmapiContext): void {
  const log = ctx.log;

  const listJobs = (vmUuid: string | undefined, p: Record<string, unknown>) => {
    if (p.execution && !EXECUTIONS.includes(String(p.execution))) {
      throw new VmapiError('Conflict', 'Execution must be one of queued, failed, succeeded, canceled or running');
    }
    return ctx.jobs
      .list({
        vm_uuid: vmUuid ?? (typeof p.vm_uuid === 'string' ? p.vm_uuid : undefined),
        execution: typeof p.execution === 'string' ? p.execution : undefined,
        task: typeof p.task === 'string' ? p.task : undefined,
      })
      .map(renderJob);
  };

  const notFound = (uuid: unknown) => vmapiErrors.notFound(`Job with uuid '${String(uuid)}' does not exist`);

  server.get(
    { path: '/vms/:uuid/jobs', name: 'ListVmJobs' },
    route(log, async (req) => {
      const p = params(req);
      const vm = loadVm(ctx, p.uuid, p.owner_uuid);
      return ok(listJobs(vm.uuid, p));
    }),
  );

  server.get({ path: '/jobs', name: 'ListJobs' }, route(log, async (req) => ok(listJobs(undefined, params(req)))));

  server.get(
    { path: '/jobs/:job_uuid', name: 'GetJob' },
    route(log, async (req) => {
      const job = ctx.jobs.get(String(req.params.job_uuid));
      if (!job) throw notFound(req.params.job_uuid);
      return ok(renderJob(job));
    }),
  );

  server.get(
    { path: '/jobs/:job_uuid/wait', name: 'WaitJob' },
    route(log, async (req) => {
      const job = await ctx.jobs.wait(String(req.params.job_uuid));
      if (!job) throw notFound(req.params.job_uuid);
      return ok(renderJob(job));
    }),
  );

  server.post(
    { path: '/job_results', name: 'JobResults' },
    route(log, async (req) => {
      const p = params(req);
      if (p.execution === 'failed' && p.vm_uuid) {
        // Moray's ObjectNotFoundError, sent as VMAPI sends a non-restify error.
        if (!postBackFailed(ctx.env, p)) throw plainError(`vmapi_vms::${String(p.vm_uuid)} does not exist`);
        await ctx.saveVms();
      }
      return { status: 200 };
    }),
  );

  server.get(
    { path: '/statuses', name: 'ListStatuses' },
    route(log, async (req) => {
      const uuids = params(req).uuids;
      if (!uuids) throw vmapiErrors.missingParameter('uuids is required');
      const out: Record<string, unknown> = {};
      for (const uuid of String(uuids).split(',')) {
        const vm = ctx.vms.get(uuid);
        if (vm) out[vm.uuid] = vm.state;
      }
      return ok(out);
    }),
  );

  server.get(
    { path: '/ping', name: 'Ping' },
    route(log, async () =>
      ok({
        dataMigrations: { latestCompletedMigrations: { vms: 1 } },
        healthy: true,
        initialization: { moray: { status: 'BUCKETS_REINDEX_DONE' } },
        pid: process.pid,
        pingErrors: {},
        status: 'OK',
        services: { moray: 'online', wfapi: 'online' },
      }),
    ),
  );
}
