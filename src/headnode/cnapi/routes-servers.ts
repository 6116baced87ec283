/**
 * CNAPI's server routes that carry no cn-agent task: list/get/update/delete, and the three
 * routes cn-agent itself calls (sysinfo registration, heartbeat, status)
 * (sdc-cnapi lib/endpoints/servers.js).
 */
import { MockcloudError } from '../../common/errors.js';
import type { Sysinfo } from '../../common/sysinfo.js';
import { isUuid } from '../../common/uuid.js';
import { requireServer, runTaskSync, type CnapiContext } from './context.js';
import { noContent, ok, params, route, type RestifyServer } from '../http.js';
import type { DapiServer } from './dapi/algorithms.js';
import { EXTRAS_ALL, fieldsFromStatus, renderServer, type Extras } from './servers.js';
import { ensureParamsValid, invalidParameters, type Rules } from './validate.js';
import { logFailure } from '../../common/log.js';

const LIST_MIN_LIMIT = 1;
const LIST_MAX_LIMIT = 1000;
const BOOL_STRING = /^(true|false)$/i;
const WORD_LIST = /^[a-zA-Z_]+(,[a-zA-Z_]+)*$/i;

const LIST_RULES: Rules = {
  setup: { optional: true, regex: BOOL_STRING, toBoolean: true },
  extras: { optional: true, regex: WORD_LIST },
  fields: { optional: true, regex: WORD_LIST },
  reserved: { optional: true, regex: BOOL_STRING, toBoolean: true },
  reservoir: { optional: true, regex: BOOL_STRING, toBoolean: true },
  headnode: { optional: true, regex: BOOL_STRING, toBoolean: true },
  hostname: { optional: true, type: 'string', trim: true },
  limit: { optional: true, type: 'int' },
  offset: { optional: true, type: 'int' },
  uuids: { optional: true, regex: /^[-a-z0-9A-Z]+(,[-a-z0-9A-Z]+)*$/i },
};

const UPDATE_RULES: Rules = {
  agents: { optional: true, type: 'array' },
  boot_params: { optional: true, type: 'object' },
  boot_platform: { optional: true, type: 'string', trim: true },
  comments: { optional: true, type: 'string', trim: true },
  datacenter: { optional: true, type: 'string', trim: true },
  default_console: { optional: true, type: 'string', trim: true },
  etag_retries: { optional: true, type: 'number' },
  next_reboot: { optional: true, type: 'string', trim: true },
  nics: { optional: true, type: 'array' },
  overprovision_ratios: { optional: true, type: 'object' },
  rack_identifier: { optional: true, type: 'string', trim: true },
  reservation_ratio: { optional: true, type: 'number' },
  reserved: { optional: true, type: 'boolean' },
  reservoir: { optional: true, type: 'boolean' },
  serial: { optional: true, type: 'string', trim: true },
  server_uuid: { type: 'string' },
  setting_up: { optional: true, type: 'boolean' },
  setup: { optional: true, type: 'boolean' },
  traits: { optional: true, type: 'object' },
  transitional_status: { optional: true, type: 'string', trim: true },
};

/** ServerUpdate's writable attributes and the type each is cast to. */
const UPDATE_ATTRS: [string, 'string' | 'boolean' | 'number' | 'raw'][] = [
  ['agents', 'raw'],
  ['boot_params', 'raw'],
  ['boot_platform', 'string'],
  ['comments', 'string'],
  ['datacenter', 'string'],
  ['default_console', 'string'],
  ['next_reboot', 'string'],
  ['rack_identifier', 'string'],
  ['reservation_ratio', 'number'],
  ['reserved', 'boolean'],
  ['reservoir', 'boolean'],
  ['serial', 'string'],
  ['setting_up', 'boolean'],
  ['setup', 'boolean'],
  ['traits', 'raw'],
  ['transitional_status', 'string'],
];

/**
 * Designation.serverCapacity on rendered servers, as CNAPI runs it for ServerGet and
 * extras=capacity: every server gets `score: 0`; those DAPI counts (setup, running, valid)
 * also get DAPI's `overprovision_ratios`, `unreserved_{cpu,ram,disk}` and the VMs it counted.
 */
function withCapacity(ctx: CnapiContext, rendered: Record<string, unknown>[]): void {
  ctx.allocator.serverCapacity(rendered as DapiServer[]);
}

export function mountServerRoutes(server: RestifyServer, ctx: CnapiContext): void {
  const log = ctx.log;

  server.get(
    { path: '/servers', name: 'ServerList' },
    route(log, async (req) => {
      const p = ensureParamsValid(params(req), LIST_RULES, { strict: true });
      let limit: number | undefined;
      if (p.limit !== undefined) {
        limit = Number(p.limit);
        if (limit < LIST_MIN_LIMIT || limit > LIST_MAX_LIMIT) {
          const err = invalidParameters([
            {
              field: 'limit',
              code: 'Invalid',
              message: `limit must be in the range ${LIST_MIN_LIMIT}-${LIST_MAX_LIMIT} (inclusive)`,
            },
          ]);
          return { status: 400, body: err.toBody() };
        }
      }
      const offset = p.offset !== undefined ? Number(p.offset) : 0;
      const uuids = typeof p.uuids === 'string' ? p.uuids.split(/\s*,\s*/) : undefined;

      let extras: Extras;
      let dropVms = false;
      let dropSysinfo = false;
      if (typeof p.extras === 'string') {
        extras = { status: true, last_heartbeat: true };
        for (const f of p.extras.split(',')) (extras as Record<string, boolean>)[f] = true;
        if (extras.capacity && !extras.all) {
          // Capacity needs everything; CNAPI strips vms and sysinfo again unless asked for.
          dropVms = !extras.vms;
          dropSysinfo = !extras.sysinfo;
          extras = { ...extras, all: true };
        }
      } else {
        extras = { status: true };
      }

      let records = ctx.servers.list().filter((s) => s.uuid !== 'default');
      if (uuids) records = records.filter((s) => uuids.includes(s.uuid));
      for (const key of ['setup', 'reserved', 'reservoir', 'headnode', 'hostname'] as const) {
        if (p[key] !== undefined) records = records.filter((s) => s[key] === p[key]);
      }
      records = records.slice(offset, limit === undefined ? undefined : offset + limit);

      const result = records.map((rec) => {
        const s = renderServer(rec, extras, ctx.heartbeats.lastHeartbeat(rec.uuid));
        if (!extras.all && !extras.sysinfo) delete s.sysinfo;
        return s;
      });
      if (extras.capacity || extras.all) {
        withCapacity(ctx, result);
        for (const s of result) {
          if (dropVms) delete s.vms;
          if (dropSysinfo) delete s.sysinfo;
        }
      }
      if (typeof p.fields !== 'string') return ok(result);
      const wanted = p.fields.split(',');
      return ok(
        result.map((s) => {
          const out: Record<string, unknown> = {};
          for (const f of wanted) if (Object.prototype.hasOwnProperty.call(s, f)) out[f] = s[f];
          return out;
        }),
      );
    }),
  );

  server.get(
    { path: '/servers/:server_uuid', name: 'ServerGet' },
    route(log, async (req) => {
      const p = params(req);
      const rec = requireServer(ctx, p.server_uuid);
      ensureParamsValid(p, { server_uuid: { type: 'string' } }, { strict: true });
      const s = renderServer(rec, EXTRAS_ALL, ctx.heartbeats.lastHeartbeat(rec.uuid));
      withCapacity(ctx, [s]);
      return ok(s);
    }),
  );

  server.post(
    { path: '/servers/:server_uuid', name: 'ServerUpdate' },
    route(log, async (req) => {
      const p0 = params(req);
      const rec = requireServer(ctx, p0.server_uuid);
      if (rec.uuid === 'default') {
        // CNAPI asserts a UUID here, and its process dies on the assertion (restify runs
        // without an uncaught-exception handler); the dev CNAPI answers with the assertion.
        throw new MockcloudError('InternalError', 'req.params.server_uuid (uuid) is required');
      }
      const p = ensureParamsValid(p0, UPDATE_RULES, { strict: true });
      if (p.overprovision_ratios !== undefined) {
        for (const [k, v] of Object.entries(p.overprovision_ratios as Record<string, unknown>)) {
          if (!['cpu', 'ram', 'disk', 'io', 'net'].includes(k)) throw new MockcloudError('InvalidArgument', `Invalid key ${k}`);
          if (typeof v !== 'number') throw new MockcloudError('InvalidArgument', `Invalid type for ${k}`);
          if (v < 0) throw new MockcloudError('InvalidArgument', `Invalid value for ${k}`);
        }
      }
      const nextReboot = p.next_reboot as string | undefined;
      if (nextReboot && !isIsoDate(nextReboot)) {
        throw new MockcloudError('InvalidArgument', 'Invalid date for next_reboot; not an ISO date format');
      }
      const change: Record<string, unknown> = {};
      for (const [attr, type] of UPDATE_ATTRS) {
        const v = p[attr];
        if (v === undefined) continue;
        if (type === 'boolean') {
          if (v === true || v === false) change[attr] = v;
        } else if (type === 'number') change[attr] = Number(v);
        else change[attr] = v;
      }
      if (p.overprovision_ratios !== undefined && rec.setup === true) {
        // On a setup server CNAPI first tells the CN (server_overprovision_ratio task).
        const value = new URLSearchParams(
          Object.entries(p.overprovision_ratios as Record<string, number>).map(([k, v]): [string, string] => [k, String(v)]),
        ).toString();
        const outcome = await runTaskSync(ctx, rec, 'server_overprovision_ratio', { value }, req.getId());
        if (!outcome.ok) throw new MockcloudError('InternalError', outcome.message);
      }
      ctx.servers.upsert(rec.uuid, change);
      await ctx.saveServers(true);
      return noContent();
    }),
  );

  server.del(
    { path: '/servers/:server_uuid', name: 'ServerDelete' },
    route(log, async (req) => {
      const p = params(req);
      const rec = requireServer(ctx, p.server_uuid);
      ensureParamsValid(p, { server_uuid: { type: 'string' } }, { strict: true });
      ctx.servers.delete(rec.uuid);
      ctx.heartbeats.forget(rec.uuid);
      await ctx.saveServers(true);
      return { status: 200 };
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/sysinfo', name: 'ServerSysinfoRegister' },
    route(log, async (req) => {
      const p = ensureParamsValid(
        params(req),
        { server_uuid: { type: 'string' }, sysinfo: { type: 'object' } },
        { strict: true },
      );
      const sysinfo = p.sysinfo as Sysinfo;
      // CNAPI asserts both; an assertion there is a 500, here it is the caller's 409.
      if (!isUuid(sysinfo.UUID)) throw new MockcloudError('InvalidArgument', 'sysinfo.UUID is not a UUID');
      if (sysinfo.UUID !== p.server_uuid) throw new MockcloudError('InvalidArgument', 'Got sysinfo for wrong server');
      await ctx.updateFromSysinfo(sysinfo);
      return { status: 200 };
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/events/heartbeat', name: 'ServerEventHeartbeat' },
    route(log, async (req) => {
      const p = ensureParamsValid(params(req), { server_uuid: { type: 'string' } }, { strict: true });
      ctx.heartbeats.beat(p.server_uuid as string);
      return noContent();
    }),
  );

  server.post(
    { path: '/servers/:server_uuid/events/status', name: 'ServerEventStatusUpdate' },
    route(log, async (req) => {
      const p = params(req);
      const rec = requireServer(ctx, p.server_uuid);
      // CNAPI answers at once and applies the sample afterwards; errors are only logged.
      setImmediate(() => {
        try {
          if (!p.vms || typeof p.vms !== 'object' || Array.isArray(p.vms)) {
            throw new MockcloudError('InvalidArgument', 'statusUpdate.vms (object) is required');
          }
          for (const k of ['meminfo', 'diskinfo']) if (!p[k]) log.warn({ server_uuid: rec.uuid }, `update missing "${k}"`);
          if (!ctx.servers.get(rec.uuid)) return;
          const r = ctx.servers.upsert(rec.uuid, fieldsFromStatus(p));
          if (r.modified) void ctx.saveServers(false);
        } catch (err) {
          logFailure(log, err, { server_uuid: rec.uuid }, 'Failed to update status');
        }
      });
      return noContent();
    }),
  );
}

function isIsoDate(s: string): boolean {
  const d = new Date(s);
  return !Number.isNaN(d.getTime()) && d.toISOString() === s;
}
