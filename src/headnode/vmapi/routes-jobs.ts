/**
 * VMAPI's job routes (sdc-vmapi lib/endpoints/jobs.js) and ping. Since this VMAPI is also
 * its own workflow API (the `workflow-api` header points here), `/jobs/:uuid` is what
 * sdc-clients' `createVmAndWait` polls.
 */
import { MockcloudError } from '../../common/errors.js';
import { ok, params, query, route, type RestifyServer } from '../http.js';
import { loadVm, type VmapiContext } from './context.js';
import { renderJob } from './jobs.js';

export function mountJobRoutes(server: RestifyServer, ctx: VmapiContext): void {
  const log = ctx.log;

  const listJobs = (vmUuid: string | undefined, q: Record<string, unknown>) =>
    ctx.jobs
      .list({
        vm_uuid: vmUuid ?? (typeof q.vm_uuid === 'string' ? q.vm_uuid : undefined),
        execution: typeof q.execution === 'string' ? q.execution : undefined,
        task: typeof q.task === 'string' ? q.task : undefined,
      })
      .map(renderJob);

  server.get(
    { path: '/vms/:uuid/jobs', name: 'ListVmJobs' },
    route(log, async (req) => {
      const p = params(req);
      const vm = loadVm(ctx, p.uuid, p.owner_uuid);
      return ok(listJobs(vm.uuid, query(req)));
    }),
  );

  server.get({ path: '/jobs', name: 'ListJobs' }, route(log, async (req) => ok(listJobs(undefined, query(req)))));

  server.get(
    { path: '/jobs/:job_uuid', name: 'GetJob' },
    route(log, async (req) => {
      const job = ctx.jobs.get(String(req.params.job_uuid));
      if (!job) throw new MockcloudError('ResourceNotFound', 'Job not found');
      return ok(renderJob(job));
    }),
  );

  server.get(
    { path: '/jobs/:job_uuid/wait', name: 'WaitJob' },
    route(log, async (req) => {
      const job = await ctx.jobs.wait(String(req.params.job_uuid));
      if (!job) throw new MockcloudError('ResourceNotFound', 'Job not found');
      return ok(renderJob(job));
    }),
  );

  server.get(
    { path: '/ping', name: 'Ping' },
    route(log, async () =>
      ok({
        pingErrors: {},
        pid: process.pid,
        status: 'OK',
        healthy: true,
        services: { moray: 'online', wfapi: 'online' },
      }),
    ),
  );
}
