/**
 * CNAPI's docker routes (sdc-cnapi lib/endpoints/vms.js VmDockerExec, VmDockerCopy,
 * VmDockerStats, VmDockerBuild; task params as lib/models/vm.js sends them). Each waits for
 * cn-agent's answer (60 s, 10 s, 30 s, 30 s; then 500 "Time-out reached waiting for
 * <task> request to return") and passes it through: `{host, port, ...}` of the CN's
 * one-request listener, or `{}` for a detached exec.
 *
 * Failures: docker-copy maps cn-agent's `details.restCode` (FileNotFound 404, PathNotDirectory
 * 400, VmNotRunning 409, DockerCopyStoppedContainerNoPlatformSupport 409); docker-stats maps an
 * `ENOENT,`-prefixed task error to 404; everything else is a 500 with the task's error. CNAPI's
 * docker-stats handler reads `error.orig.error` as a string and crashes the process when
 * cn-agent's error body has none (an unknown task's 404): that case is a 500 here.
 */
import { MockcloudError } from '../../common/errors.js';
import { restCodeOf, taskAnswer, vmPreconditions, type CnapiContext } from './context.js';
import { route, type Params, type RestifyServer } from '../http.js';
import { ensureParamsValid } from './validate.js';

const COPY_ERRORS: Record<string, () => MockcloudError> = {
  FileNotFound: () => new MockcloudError('ResourceNotFound', 'Could not find requested file', { restCode: 'FileNotFound' }),
  PathNotDirectory: () => new MockcloudError('BadRequest', 'Given path was not to a directory', { restCode: 'PathNotDirectory' }),
  VmNotRunning: () => new MockcloudError('Conflict', 'Operation attempted on vm which is not running', { restCode: 'VmNotRunning' }),
  DockerCopyStoppedContainerNoPlatformSupport: () =>
    new MockcloudError('Conflict', 'This container must be running in order to use `docker cp`', {
      restCode: 'DockerCopyStoppedContainerNoPlatformSupport',
    }),
};

export function mountDockerRoutes(server: RestifyServer, ctx: CnapiContext): void {
  const log = ctx.log;

  server.post(
    { path: '/servers/:server_uuid/vms/:uuid/docker-exec', name: 'VmDockerExec' },
    route(log, async (req) => {
      const { server: s, p } = vmPreconditions(ctx, req);
      ensureParamsValid(p, { command: { type: 'object' } });
      return taskAnswer(ctx, s, 'docker_exec', { uuid: p.uuid, command: p.command }, req.getId(), { timeoutS: 60 });
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/vms/:uuid/docker-copy', name: 'VmDockerCopy' },
    route(log, async (req) => {
      const { server: s, p } = vmPreconditions(ctx, req);
      let path = p.path;
      let mode = p.mode;
      // Older sdc-docker sent these inside a `payload`.
      const payload = p.payload as Params | undefined;
      if (!path && payload && typeof payload === 'object') {
        path = payload.path;
        mode = payload.mode;
      }
      const taskParams: Params = { uuid: p.uuid, path, mode, payload: p.payload };
      if (p.no_overwrite_dir) taskParams.no_overwrite_dir = true;
      return taskAnswer(ctx, s, 'docker_copy', dropUndefined(taskParams), req.getId(), { timeoutS: 10 }, (o) => {
        const code = restCodeOf(o);
        return code ? COPY_ERRORS[code]?.() : undefined;
      });
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/vms/:uuid/docker-stats', name: 'VmDockerStats' },
    route(log, async (req) => {
      const { server: s, p } = vmPreconditions(ctx, req);
      const taskParams = dropUndefined({ uuid: p.uuid, payload: p.payload });
      return taskAnswer(ctx, s, 'docker_stats', taskParams, req.getId(), { timeoutS: 30 }, (o) => {
        const orig = o.body as { error?: unknown } | undefined;
        if (orig && typeof orig.error === 'string' && /^ENOENT,/.test(orig.error)) {
          const pl = (p.payload ?? {}) as Params;
          return new MockcloudError(
            'ResourceNotFound',
            `Could not find the file ${String(pl.Resource)} in container ${String(pl.id)}`,
          );
        }
        return undefined;
      });
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/vms/:uuid/docker-build', name: 'VmDockerBuild' },
    route(log, async (req) => {
      const { server: s, p } = vmPreconditions(ctx, req);
      // CNAPI sends this task with log_params false: the payload stays out of its logs too.
      return taskAnswer(ctx, s, 'docker_build', dropUndefined({ uuid: p.uuid, payload: p.payload }), req.getId(), { timeoutS: 30 });
    }),
  );
}

/** What JSON.stringify would drop anyway, dropped up front. */
function dropUndefined(p: Params): Params {
  return Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined));
}
