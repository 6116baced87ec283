/**
 * recovery_config: stage or activate a zpool recovery configuration (EDAR). Only a server
 * whose sysinfo has "Zpool Encrypted" can do it; on others the task fails with the real
 * message. The params are checked as the real task checks them, with its messages.
 *
 * On success "Zpool Recovery" in sysinfo.json gets `staged` (sha512 of the template) or
 * `active` (the staged one), the CN re-registers its sysinfo, and KBMAPI is told
 * (`PUT /pivtokens/<pivtoken>/recovery-tokens`) when a KBMAPI URL is configured.
 */
import { createHash } from 'node:crypto';
import { messageOf } from '../../../common/errors.js';
import { repeatableUuidFromHex } from '../../../common/uuid.js';
import { defineTask, TaskError } from '../types.js';
import { invalid, optStringParam } from '../task-support/params.js';
import { readCnSysinfo, reloadSysinfo, writeCnSysinfo } from '../task-support/sysinfo-file.js';

interface RecoveryParams {
  action?: string;
  pivtoken?: string;
  recoveryUuid?: string;
  template?: string;
  token?: string;
}

function sha512hex(s: string): string {
  return createHash('sha512').update(s).digest('hex');
}

export const recoveryConfig = defineTask<RecoveryParams>({
  name: 'recovery_config',
  queue: 'server_tasks',
  locks: ['sysinfo'],
  validate: (p) => {
    const out: RecoveryParams = {};
    const action = optStringParam(p, 'action');
    const pivtoken = optStringParam(p, 'pivtoken');
    const recoveryUuid = optStringParam(p, 'recovery_uuid');
    const template = optStringParam(p, 'template');
    const token = optStringParam(p, 'token');
    // The PIV token ends up in a KBMAPI URL path: nothing but a token id may pass.
    if (pivtoken !== undefined && pivtoken !== '' && !/^[A-Za-z0-9_-]{1,128}$/.test(pivtoken)) {
      throw invalid('params.pivtoken must be a PIV token id (letters, digits, "-" and "_")');
    }
    if (action !== undefined) out.action = action;
    if (pivtoken !== undefined) out.pivtoken = pivtoken;
    if (recoveryUuid !== undefined) out.recoveryUuid = recoveryUuid;
    if (template !== undefined) out.template = template;
    if (token !== undefined) out.token = token;
    return out;
  },
  async run(ctx, p) {
    const fail = (msg: string) => new TaskError(`Recovery Configuration error: ${msg}`);
    if (!p.action || !p.pivtoken || !p.recoveryUuid) throw fail('Missing required request parameters');
    if (p.action !== 'activate' && p.action !== 'stage') throw fail('Invalid value for action parameter');
    if (p.action === 'stage' && !p.template) throw fail('Missing template request parameter');
    ctx.progress(10);

    let sysinfo;
    try {
      sysinfo = await readCnSysinfo(ctx.cn);
    } catch (err) {
      throw fail(messageOf(err));
    }
    if (!sysinfo['Zpool Encrypted']) {
      throw fail('Recovery configuration can be staged or activated only on servers with encrypted zpools');
    }
    const recovery: Record<string, string> = {};
    for (const [k, v] of Object.entries(sysinfo['Zpool Recovery'] ?? {})) if (typeof v === 'string') recovery[k] = v;
    ctx.progress(25);

    if (p.action === 'activate') {
      if (!recovery.staged || repeatableUuidFromHex(recovery.staged) !== p.recoveryUuid) {
        throw fail('Only the staged recovery configuration can be activated');
      }
      recovery.active = recovery.staged;
      delete recovery.staged;
    } else {
      ctx.progress(50);
      recovery.staged = sha512hex(p.template!);
    }
    ctx.progress(65);

    sysinfo['Zpool Recovery'] = recovery;
    try {
      await writeCnSysinfo(ctx.cn, sysinfo);
    } catch (err) {
      throw fail(messageOf(err));
    }
    ctx.progress(75);
    await reloadSysinfo(ctx.cn, ctx.log);

    const kbmapi = ctx.env.kbmapiUrl;
    if (!kbmapi) {
      ctx.log.info('no KBMAPI URL configured: not posting the recovery configuration');
      return {};
    }
    const body: Record<string, unknown> = { zpool_recovery: {}, cn_uuid: ctx.cn.uuid };
    for (const [k, v] of Object.entries(recovery)) (body.zpool_recovery as Record<string, string>)[k] = repeatableUuidFromHex(v);
    if (p.token) body.recovery_token = repeatableUuidFromHex(sha512hex(p.token));
    try {
      await ctx.env.http.call({
        method: 'PUT',
        url: `${kbmapi.replace(/\/+$/, '')}/pivtokens/${encodeURIComponent(p.pivtoken)}/recovery-tokens`,
        body,
      });
    } catch (err) {
      throw fail(messageOf(err));
    }
    ctx.progress(100);
    return {};
  },
});
