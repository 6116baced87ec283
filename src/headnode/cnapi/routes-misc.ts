/**
 * CNAPI's operator routes (sdc-cnapi lib/endpoints/index.js: `/diagnostics`, `/info`,
 * `/loglevel`), platforms (lib/endpoints/platforms.js) and ImageGet
 * (lib/endpoints/images.js: the `image_get` task, answered synchronously).
 */
import { MockcloudError } from '../../common/errors.js';
import { ok, params, route, type RestifyServer } from '../http.js';
import { requireServer, runTaskSync, type CnapiContext } from './context.js';
import { listPlatforms } from './platforms.js';
import { ensureParamsValid } from './validate.js';

/** The sdc-cnapi version the dev CNAPI answers as. */
export const CNAPI_VERSION = '1.26.6';
const IMAGE_GET_TIMEOUT_MS = 60_000;

export function mountMiscRoutes(server: RestifyServer, ctx: CnapiContext): void {
  const log = ctx.log;

  server.get(
    { path: '/diagnostics', name: 'Diagnostics' },
    route(log, () =>
      ok({
        start_timestamp: ctx.startTimestamp,
        memory: process.memoryUsage(),
        taskCallbacks: ctx.tasks.waitersByTask(),
        pendingActivationsByServer: {},
      }),
    ),
  );

  server.get(
    { path: '/info', name: 'Info' },
    route(log, () => ok({ version: CNAPI_VERSION })),
  );

  server.get(
    { path: '/loglevel', name: 'LogLevelGet' },
    route(log, () => ok({ level: log.level() })),
  );

  server.post(
    { path: '/loglevel', name: 'LogLevelSet' },
    route(log, (req) => {
      const level = params(req).level;
      try {
        log.level(level as 'info');
      } catch (err) {
        // bunyan throws on an unknown level name; CNAPI's handler would die there.
        throw new MockcloudError('InternalError', (err as Error).message);
      }
      return { status: 200 };
    }),
  );

  server.get(
    { path: '/platforms', name: 'PlatformList' },
    route(log, (req) => {
      const p = ensureParamsValid(
        params(req),
        { os: { optional: true, regex: /^(true|false)$/i, toBoolean: true } },
        { strict: true },
      );
      return ok(listPlatforms(ctx, { os: p.os === true }));
    }),
  );

  server.get(
    { path: '/servers/:server_uuid/images/:uuid', name: 'ImageGet' },
    route(log, async (req) => {
      const p0 = params(req);
      const s = requireServer(ctx, p0.server_uuid);
      const p = ensureParamsValid(p0, { jobid: { optional: true, type: 'string' }, uuid: { type: 'string' } });
      const outcome = await runTaskSync(ctx, s, 'image_get', { uuid: p.uuid }, req.getId(), { timeoutMs: IMAGE_GET_TIMEOUT_MS });
      if (!outcome.ok) throw new MockcloudError('InternalError', outcome.message);
      return ok(outcome.body);
    }),
  );
}
