/**
 * Server setup and recovery configuration (sdc-cnapi lib/endpoints/servers.js Server.setup,
 * Server.recoveryConfig). Every mock CN boots set up, so ServerSetup answers a set-up server's
 * `204` after CNAPI's parameter checks; the server-setup workflow itself (for a server
 * registered with `Setup: false`) is not run by the dev headnode (`501 NotImplemented`).
 */
import { MockcloudError } from '../../common/errors.js';
import { repeatableUuidFromHex } from '../../common/uuid.js';
import { noContent, params, route, type Params, type RestifyServer } from '../http.js';
import { cnAgentOf, requireRunning, requireServer, sendAsync, type CnapiContext } from './context.js';
import { ensureParamsValid, versionGte, type Rules } from './validate.js';

const VALID_LAYOUTS = ['single', 'mirror', 'raidz1', 'raidz2', 'raidz3'];
const CN_AGENT_WITH_RECOVERY_CONFIG = '2.13.0';

const SETUP_RULES: Rules = {
  hostname: { optional: true, type: 'string' },
  nics: { optional: true, type: 'array' },
  postsetup_script: { optional: true, type: 'string' },
  server_uuid: { type: 'string' },
  disk_spares: { optional: true, type: 'numberGte0' },
  disk_width: { optional: true, type: 'numberGte0' },
  disk_cache: { optional: true, type: 'booleanString' },
  disk_layout: { optional: true, type: 'string' },
  encryption_enabled: { optional: true, type: 'booleanString' },
  disk_exclude: { optional: true, type: 'string' },
};

function precondition(message: string): MockcloudError {
  return new MockcloudError('PreconditionFailed', message);
}

export function mountSetupRoutes(server: RestifyServer, ctx: CnapiContext): void {
  const log = ctx.log;

  server.put(
    { path: '/servers/:server_uuid/setup', name: 'ServerSetup' },
    route(log, (req) => {
      const p0 = params(req);
      const s = requireServer(ctx, p0.server_uuid);
      requireRunning(s);
      const p = ensureParamsValid(p0, SETUP_RULES, { strict: true });
      if (p.disk_layout !== undefined && !VALID_LAYOUTS.includes(String(p.disk_layout))) {
        throw new MockcloudError('InvalidArgument', `disk_layout must be one of: '${VALID_LAYOUTS.join("', '")}'`);
      }
      if (s.setup) return noContent();
      throw new MockcloudError('NotImplemented', 'the dev headnode does not run the server-setup workflow');
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/recovery-config', name: 'ServerRecoveryConfig' },
    route(log, (req) => {
      const p: Params = params(req);
      const s = requireServer(ctx, p.server_uuid);
      requireRunning(s);
      const action = p.action;
      if (!action || !p.recovery_uuid || !p.pivtoken) {
        throw precondition('"recovery_uuid", "pivtoken" and "action" params must be provided');
      }
      if (action !== 'stage' && action !== 'activate') {
        throw precondition('Invalid "action" param. It must be one of "stage" or "activate"');
      }
      if (action === 'stage' && (!p.template || !p.token)) {
        throw precondition('"template" and "token" params must be provided for recovery configuration "stage"');
      }
      const version = cnAgentOf(s).version;
      if (!versionGte(version, CN_AGENT_WITH_RECOVERY_CONFIG)) {
        throw precondition(
          `cn-agent (v${String(version)}) on server ${s.uuid} does not support "recovery_config": ` +
            `require at least cn-agent v${CN_AGENT_WITH_RECOVERY_CONFIG}`,
        );
      }
      const sysinfo = (s.sysinfo ?? {}) as Record<string, unknown>;
      if (!sysinfo['Zpool Encrypted']) {
        throw precondition('Recovery Configuration can be set only for servers with encrypted zpools');
      }
      const recovery = (sysinfo['Zpool Recovery'] ?? {}) as { active?: string; staged?: string };
      const active = recovery.active ? repeatableUuidFromHex(recovery.active) : undefined;
      const staged = recovery.staged ? repeatableUuidFromHex(recovery.staged) : undefined;
      if (active && active === p.recovery_uuid && action === 'activate') {
        throw precondition(`Recovery configuration ${String(p.recovery_uuid)} is already active`);
      }
      if (action === 'activate' && (!staged || staged !== p.recovery_uuid)) {
        throw precondition('Only the staged Recovery configuration can be activated');
      }
      const taskParams: Params = { action, recovery_uuid: p.recovery_uuid, pivtoken: p.pivtoken };
      if (p.template) taskParams.template = p.template;
      if (p.token) taskParams.token = p.token;
      return sendAsync(ctx, s, 'recovery_config', taskParams, req.getId());
    }),
  );
}
