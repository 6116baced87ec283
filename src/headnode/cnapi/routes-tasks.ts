/**
 * CNAPI's server-level task routes (ensure-image, agents, reboot, sysinfo-refresh, nop,
 * execute, NIC updates, cn-agent history/pause/resume), the task records (`/tasks/:id`,
 * `/tasks/:id/wait`) and ping (sdc-cnapi lib/endpoints/{servers,nics,tasks,index}.js).
 */
import { randomUUID } from 'node:crypto';
import { MockcloudError } from '../../common/errors.js';
import { HttpStatusError } from '../../common/http-client.js';
import type { Sysinfo } from '../../common/sysinfo.js';
import {
  cnAgentOf,
  requireRunning,
  requireServer,
  runTaskSync,
  sendAsync,
  sysinfoOf,
  type CnapiContext,
} from './context.js';
import { noContent, ok, params, query, route, type Params, type Req, type RestifyServer } from '../http.js';
import type { ServerRecord } from './servers.js';
import { TASK_WAIT_DEFAULT_S } from './tasks.js';
import { ensureParamsValid, invalidParameters, versionGte } from './validate.js';

const CN_AGENT_WITH_AGENTS_UNINSTALL = '2.8.0';
const CN_AGENT_WITH_SERVER_SYSINFO = '2.10.0';
const CN_AGENT_WITH_SERVER_REBOOT = '2.11.0';
const CN_AGENT_WITH_COMMAND_EXECUTE = '2.6.0';

/** `ensure({prepopulate: ['server'], serverRunning: true})`. */
function runningServer(ctx: CnapiContext, req: Req): { server: ServerRecord; p: Params } {
  const p = params(req);
  const server = requireServer(ctx, p.server_uuid);
  requireRunning(server);
  return { server, p };
}

/** `true`, `"true"` (the query-string form) and the JSON boolean are all accepted. */
function boolish(p: Params, name: string): void {
  const v = p[name];
  if (v === 'true') p[name] = true;
  else if (v === 'false') p[name] = false;
}

export function mountTaskRoutes(server: RestifyServer, ctx: CnapiContext): void {
  const log = ctx.log;

  server.post(
    { path: '/servers/:server_uuid/ensure-image', name: 'ServerEnsureImage' },
    route(log, async (req) => {
      const { server: s, p } = runningServer(ctx, req);
      ensureParamsValid(
        p,
        {
          server_uuid: { type: 'string' },
          image_uuid: { type: 'string' },
          zfs_storage_pool_name: { optional: true, type: 'string' },
          imgapiPeers: { optional: true, type: 'array' },
        },
        { strict: true },
      );
      return sendAsync(ctx, s, 'image_ensure_present', p, req.getId());
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/install-agent', name: 'ServerInstallAgent' },
    route(log, async (req) => {
      const { server: s, p } = runningServer(ctx, req);
      return sendAsync(ctx, s, 'agent_install', p, req.getId());
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/uninstall-agents', name: 'ServerUninstallAgents' },
    route(log, async (req) => {
      const { server: s, p } = runningServer(ctx, req);
      ensureParamsValid(p, { agents: { type: 'array' } });
      const version = cnAgentOf(s).version;
      if (!versionGte(version, CN_AGENT_WITH_AGENTS_UNINSTALL)) {
        throw new MockcloudError(
          'PreconditionFailed',
          `cn-agent (v${String(version)}) on server ${s.uuid} does not support "agents_uninstall": ` +
            `require at least cn-agent v${CN_AGENT_WITH_AGENTS_UNINSTALL}`,
        );
      }
      return sendAsync(ctx, s, 'agents_uninstall', p, req.getId());
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/sysinfo-refresh', name: 'ServerSysinfoRefresh' },
    route(log, async (req) => {
      const { server: s, p } = runningServer(ctx, req);
      ensureParamsValid(p, { server_uuid: { type: 'string' } }, { strict: true });
      if (!versionGte(cnAgentOf(s).version, CN_AGENT_WITH_SERVER_SYSINFO)) {
        // CNAPI would fall back to Ur's /usr/bin/sysinfo; the dev headnode has no Ur.
        throw new MockcloudError('InternalError', 'Unable to gather latest sysinfo');
      }
      await refreshSysinfo(ctx, s, p, req.getId());
      return { status: 200 };
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/reboot', name: 'ServerReboot' },
    route(log, async (req) => {
      const { server: s, p } = runningServer(ctx, req);
      boolish(p, 'nojob');
      boolish(p, 'drain');
      ensureParamsValid(
        p,
        {
          server_uuid: { type: 'string' },
          creator_uuid: { optional: true, type: 'string' },
          drain: { optional: true, type: 'boolean' },
          nojob: { optional: true, type: 'boolean' },
          origin: { optional: true, type: 'string' },
        },
        { strict: true },
      );
      const version = cnAgentOf(s).version;
      const supported = versionGte(version, CN_AGENT_WITH_SERVER_REBOOT);
      if (!supported) {
        throw new MockcloudError(
          'ServiceUnavailable',
          `cn-agent version on server does not support server_reboot: ${version ?? 'unknown'} < ${CN_AGENT_WITH_SERVER_REBOOT}`,
        );
      }
      if (p.nojob) {
        const outcome = await runTaskSync(ctx, s, 'server_reboot', p, req.getId());
        if (!outcome.ok) {
          throw new MockcloudError('InternalError', `posting task to cn-agent: ${outcome.message}`);
        }
        return noContent();
      }
      // CNAPI's server-reboot workflow: mark the server rebooting, then the server_reboot
      // task; the mark clears when the CN reports its new boot time (see ServerRegistry).
      ctx.servers.upsert(s.uuid, { transitional_status: 'rebooting' });
      await ctx.saveServers(true);
      const jobUuid = randomUUID();
      const sent = ctx.dispatcher.sendTask({
        serverUuid: s.uuid,
        sysinfo: sysinfoOf(s),
        task: 'server_reboot',
        params: p,
        reqId: req.getId(),
      });
      void sent.outcome.then((o) => {
        if (!o.ok) log.warn({ server_uuid: s.uuid, job_uuid: jobUuid, error: o.message }, 'server reboot failed');
      });
      return ok({ job_uuid: jobUuid }, 202);
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/nop', name: 'DoNop' },
    route(log, async (req) => {
      const { server: s, p } = runningServer(ctx, req);
      p.sleep = Number.parseInt(String(p.sleep), 10) || 0;
      return sendAsync(ctx, s, 'nop', p, req.getId());
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/execute', name: 'CommandExecute' },
    route(log, async (req) => {
      const { server: s, p: p0 } = runningServer(ctx, req);
      const p = ensureParamsValid(p0, {
        args: { optional: true, type: 'array' },
        env: { optional: true, type: 'object' },
        json: { optional: true, regex: /^(true|false)$/i, toBoolean: true },
        script: { type: 'string' },
        timeout: { optional: true, type: 'number' },
      });
      // Without Ur, the dev headnode acts as if FEATURE_USE_CNAGENT_COMMAND_EXECUTE were on.
      if (!versionGte(cnAgentOf(s).version, CN_AGENT_WITH_COMMAND_EXECUTE)) {
        throw new MockcloudError('InternalError', 'command execution needs cn-agent >= 2.6.0 (no Ur here)');
      }
      const taskParams = { args: p.args, env: p.env, timeout: p.timeout, script: p.script };
      const outcome = await runTaskSync(ctx, s, 'command_execute', taskParams, req.getId());
      if (!outcome.ok) throw new MockcloudError('InternalError', outcome.message);
      const result = (outcome.body ?? {}) as { exitCode?: number; stdout?: string };
      if (p.json) return ok(result);
      if (result.exitCode !== 0) throw new MockcloudError('InternalError', 'Error executing on remote system');
      return ok(String(result.stdout ?? '').trim());
    }),
  );

  server.put(
    { path: '/servers/:server_uuid/nics', name: 'NicUpdate' },
    route(log, async (req) => {
      const { server: s, p } = runningServer(ctx, req);
      ensureParamsValid(p, { action: { type: 'string' }, nics: { type: 'array' } });
      const action = p.action as string;
      if (!['update', 'replace', 'delete'].includes(action)) {
        throw invalidParameters([
          { field: 'action', code: 'Invalid', message: "action must be 'update', 'replace', or 'delete'" },
        ]);
      }
      if (s.setup !== true) throw new MockcloudError('InternalError', 'Server is not setup');
      const jobUuid = randomUUID();
      void serverUpdateNics(ctx, s.uuid, action, p.nics as Params[], req.getId()).catch((err: unknown) =>
        log.warn({ err, server_uuid: s.uuid, job_uuid: jobUuid }, 'server-update-nics failed'),
      );
      return ok({ job_uuid: jobUuid }, 202);
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/nics/update', name: 'UpdateNicTask' },
    route(log, async (req) => {
      const { server: s, p } = runningServer(ctx, req);
      return sendAsync(ctx, s, 'server_update_nics', p, req.getId());
    }),
  );

  server.get(
    { path: '/servers/:server_uuid/task-history', name: 'ServerTaskHistory' },
    route(log, async (req) => {
      const p = params(req);
      const s = requireServer(ctx, p.server_uuid);
      ensureParamsValid(p, { server_uuid: { type: 'string' } }, { strict: true });
      return ok(await agentRequest(ctx, s, 'GET', '/history'));
    }),
  );

  for (const [action, name] of [
    ['pause', 'ServerPauseCnAgent'],
    ['resume', 'ServerResumeCnAgent'],
  ] as const) {
    server.post(
      { path: `/servers/:server_uuid/cn-agent/${action}`, name },
      route(log, async (req) => {
        const { server: s } = runningServer(ctx, req);
        await agentRequest(ctx, s, 'POST', `/${action}`);
        return noContent();
      }),
    );
  }

  server.get(
    { path: '/tasks/:taskid', name: 'TaskGet' },
    route(log, async (req) => {
      const rec = ctx.tasks.get(String(req.params.taskid));
      if (!rec) throw new MockcloudError('ResourceNotFound', 'no such task found');
      return ok(rec);
    }),
  );

  server.get(
    { path: '/tasks/:taskid/wait', name: 'TaskWait' },
    route(log, async (req) => {
      const id = String(req.params.taskid);
      if (!ctx.tasks.get(id)) throw new MockcloudError('ResourceNotFound', 'no such task found');
      const seconds = Number.parseInt(String(query(req).timeout), 10) || TASK_WAIT_DEFAULT_S;
      const rec = await ctx.tasks.wait(id, Math.max(1, seconds) * 1000);
      if (!rec) throw new MockcloudError('ResourceNotFound', 'no such task found');
      return ok(rec);
    }),
  );

  server.get(
    { path: '/ping', name: 'Ping' },
    route(log, async () =>
      ok({ ready: true, services: { workflow: 'online', moray: 'online', amqp: 'online' } }),
    ),
  );
}

/** A non-task cn-agent request; any failure is CNAPI's `500 InternalError`. */
async function agentRequest(ctx: CnapiContext, s: ServerRecord, method: 'GET' | 'POST', path: string): Promise<unknown> {
  let res;
  try {
    res = await ctx.dispatcher.sendRequest(s.uuid, sysinfoOf(s), method, path);
  } catch (err) {
    throw new MockcloudError('InternalError', err instanceof Error ? err.message : String(err));
  }
  if (res.statusCode < 200 || res.statusCode >= 300) {
    const msg = (res.body as { message?: string } | undefined)?.message ?? `cn-agent answered ${res.statusCode}`;
    throw new MockcloudError('InternalError', msg);
  }
  return res.body;
}

/** sysinfo-refresh: run cn-agent's `server_sysinfo` and register what it returns. */
async function refreshSysinfo(ctx: CnapiContext, s: ServerRecord, p: Params, reqId: string): Promise<void> {
  const outcome = await runTaskSync(ctx, s, 'server_sysinfo', p, reqId);
  if (!outcome.ok) throw new MockcloudError('InternalError', outcome.message);
  const sysinfo = (outcome.body as { sysinfo?: Sysinfo } | undefined)?.sysinfo;
  if (!sysinfo || typeof sysinfo !== 'object') throw new MockcloudError('InternalError', 'Unable to gather latest sysinfo');
  await ctx.updateFromSysinfo(sysinfo);
}

/**
 * The `server-update-nics` workflow, in process: apply the NIC changes to the server's NICs
 * in NAPI (those NAPI knows; the CN's own NICs may not be there), send cn-agent
 * `server_update_nics` with the resulting NICs, then refresh the server's sysinfo (the
 * workflow's `cnapi.refresh_server_sysinfo`, wf-shared's refreshServerSysinfo: the task's own
 * sysinfo when it returned one, else sysinfo-refresh; the real task finishes with `{}`).
 */
async function serverUpdateNics(
  ctx: CnapiContext,
  serverUuid: string,
  action: string,
  nics: Params[],
  reqId: string,
): Promise<void> {
  const updated: Params[] = [];
  for (const nic of nics) {
    const mac = typeof nic.mac === 'string' ? nic.mac : undefined;
    if (!mac) continue;
    let merged: Params = { ...nic };
    try {
      const res = await ctx.http.call<Params>({
        method: 'PUT',
        url: `${ctx.peers.napi}/nics/${mac.replace(/:/g, '')}`,
        body: action === 'delete' ? { ...nic, nic_tags_provided: [] } : nic,
        headers: { 'x-request-id': reqId },
      });
      merged = { ...res.body, ...nic };
    } catch (err) {
      if (!(err instanceof HttpStatusError && err.statusCode === 404)) throw err;
    }
    if (action === 'delete') merged.nic_tags_provided = [];
    updated.push(merged);
  }
  const server = ctx.servers.get(serverUuid);
  if (!server) return;
  const outcome = await runTaskSync(ctx, server, 'server_update_nics', { server_uuid: serverUuid, nics: updated }, reqId);
  if (!outcome.ok) throw new Error(outcome.message);
  const sysinfo = (outcome.body as { sysinfo?: Sysinfo } | undefined)?.sysinfo;
  if (sysinfo && typeof sysinfo === 'object' && sysinfo.UUID === serverUuid) await ctx.updateFromSysinfo(sysinfo);
  else await refreshSysinfo(ctx, server, { server_uuid: serverUuid }, reqId);
}
