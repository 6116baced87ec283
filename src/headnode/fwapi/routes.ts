/**
 * The dev FWAPI's routes, answered as sdc-fwapi's endpoints answer them (lib/endpoints/):
 *
 *   GET|HEAD /ping[?agents=true]                    ping.js
 *   GET /rules, POST /rules                         rules/index.js (202 and x-update-id)
 *   GET|PUT|DELETE /rules/:uuid                     rules/index.js, common.js ruleBefore
 *   POST /resolve                                   resolve.js
 *   GET /firewalls/vms/:uuid                        firewalls/vms.js (the VM from VMAPI)
 *   POST /updates                                   updates.js
 *
 * Errors carry FWAPI's bodies: 422 InvalidParameters with `errors` per field, 403 Forbidden
 * "owner does not match", 404 "rule not found", 422 RuleExistsError.
 */
import { MockcloudError } from '../../common/errors.js';
import type { JsonHttpClient } from '../../common/http-client.js';
import { HttpStatusError } from '../../common/http-client.js';
import type { Logger } from '../../common/log.js';
import { isUuid } from '../../common/uuid.js';
import { noContent, ok, params, route, type Handler, type Params, type Req, type RestifyServer } from '../http.js';
import { listRules } from './list.js';
import { invalidParams, makeRule, newVersion, resolveTargets, vmRules, type RuleRecord } from './rules.js';
import type { UpdateServer } from './updates.js';

export interface FwapiContext {
  rules: Map<string, RuleRecord>;
  updates: UpdateServer;
  log: Logger;
  http: JsonHttpClient;
  vmapiUrl?: string;
  /** Resolves once the rules as of the call are on disk. */
  commit(): Promise<void>;
}

const UPDATE_TYPES = ['sync', 'vm.add', 'vm.update', 'vm.delete'];

function badUuid(field: string, value: unknown, message = 'invalid UUID'): MockcloudError {
  return invalidParams([{ field, code: 'InvalidParameter', invalid: [value], message }]);
}

function bool(v: unknown): boolean | undefined {
  if (v === true || v === 'true') return true;
  if (v === false || v === 'false') return false;
  return undefined;
}

function forbidden(): MockcloudError {
  return new MockcloudError('Forbidden', 'owner does not match', {
    restCode: 'Forbidden',
    errors: [{ field: 'owner_uuid', code: 'InvalidParameter', message: 'owner_uuid does not match' }],
  });
}

/** common.js ruleBefore, and disallowOwnerForGlobal for the routes that take it. */
function ruleOf(ctx: FwapiContext, req: Req, p: Params, ownerCheckGlobal: boolean): RuleRecord {
  const uuid = String(req.params.uuid);
  if (!isUuid(uuid)) throw invalidParams([{ field: 'uuid', code: 'InvalidParameter', message: 'Invalid UUID' }]);
  const rule = ctx.rules.get(uuid);
  if (!rule) throw new MockcloudError('ResourceNotFound', 'Rule not found');
  if (p.owner_uuid !== undefined && rule.owner_uuid !== undefined && p.owner_uuid !== rule.owner_uuid) throw forbidden();
  if (ownerCheckGlobal && rule.global === true && p.owner_uuid !== undefined) throw forbidden();
  return rule;
}

function asArray(v: unknown): unknown[] {
  if (v === undefined) return [];
  if (Array.isArray(v)) return v;
  return typeof v === 'string' ? v.split(',') : [v];
}

export function mountFwapiRoutes(server: RestifyServer, ctx: FwapiContext): void {
  const r = (fn: Handler) => route(ctx.log, fn);

  const ping: Handler = (req) => {
    const p = params(req);
    const body: Record<string, unknown> = {
      healthy: true,
      services: { fast: ctx.updates.listening ? 'online' : 'offline', moray: 'online', ufds: 'online' },
      status: 'OK',
    };
    if (bool(p.agents)) body.agents = ctx.updates.ping();
    return ok(body);
  };
  server.get('/ping', r(ping));
  server.head('/ping', r(ping));

  server.get('/rules', r((req) => ok(listRules(ctx.rules.values(), params(req)))));

  server.post('/rules', r(async (req) => {
    const p = params(req);
    if (!p.rule) throw new MockcloudError('MissingParameter', '"rule" parameter required');
    delete p.objectclass;
    if (typeof p.uuid === 'string' && ctx.rules.has(p.uuid)) {
      throw new MockcloudError('InvalidParameters', 'rule already exists', {
        restCode: 'RuleExistsError',
        errors: [{ field: 'uuid', code: 'Duplicate', message: 'Already exists' }],
      });
    }
    const rule = makeRule(p).serialize() as RuleRecord;
    ctx.rules.set(rule.uuid, rule);
    await ctx.commit();
    const update = ctx.updates.queueUpdate('fw.add_rule', rule);
    return { status: 202, body: rule, headers: { 'x-update-id': update } };
  }));

  server.get('/rules/:uuid', r((req) => ok(ruleOf(ctx, req, params(req), true))));

  server.put('/rules/:uuid', r(async (req) => {
    const p = params(req);
    const old = ruleOf(ctx, req, p, true);
    const merged: Record<string, unknown> = { ...old, ...p, uuid: old.uuid };
    delete merged.objectclass;
    merged.version = newVersion();
    const rule = makeRule(merged).serialize() as RuleRecord;
    ctx.rules.set(rule.uuid, rule);
    await ctx.commit();
    const update = ctx.updates.queueUpdate('fw.update_rule', rule);
    return { status: 202, body: rule, headers: { 'x-update-id': update } };
  }));

  server.del('/rules/:uuid', r(async (req) => {
    const p = params(req);
    for (const k of Object.keys(p)) {
      if (k !== 'uuid' && k !== 'owner_uuid') throw invalidParams([{ field: k, code: 'InvalidParameter', message: 'unknown parameter' }]);
    }
    if (p.owner_uuid !== undefined && !isUuid(p.owner_uuid)) throw badUuid('owner_uuid', p.owner_uuid);
    const rule = ruleOf(ctx, req, p, true);
    ctx.rules.delete(rule.uuid);
    await ctx.commit();
    const update = ctx.updates.queueUpdate('fw.del_rule', rule);
    return { status: 204, headers: { 'x-update-id': update } };
  }));

  server.post('/resolve', r((req) => {
    const p = params(req);
    if (p.owner_uuid === undefined) throw invalidParams([{ field: 'owner_uuid', code: 'MissingParameter', message: 'Missing parameter' }]);
    if (!isUuid(p.owner_uuid)) throw badUuid('owner_uuid', p.owner_uuid);
    if (p.tags !== undefined && (typeof p.tags !== 'object' || p.tags === null)) {
      throw invalidParams([{ field: 'tags', code: 'InvalidParameter', message: 'must be an object' }]);
    }
    const vms = p.vms === undefined ? undefined : asArray(p.vms);
    const badVms = (vms ?? []).filter((v) => !isUuid(v));
    if (badVms.length > 0) throw invalidParams([{ field: 'vms', code: 'InvalidParameter', invalid: badVms, message: 'invalid UUID' }]);
    const filter = {
      owner_uuid: p.owner_uuid,
      ...(vms ? { vms: vms as string[] } : {}),
      ...(p.tags ? { tags: p.tags as Record<string, unknown> } : {}),
    };
    const rules = vmRules(ctx.rules.values(), filter);
    const side = resolveTargets(rules, filter);
    return ok({ rules, ...side, owner_uuid: p.owner_uuid });
  }));

  server.get('/firewalls/vms/:uuid', r(async (req) => {
    const p = params(req);
    const uuid = String(req.params.uuid);
    if (!isUuid(uuid)) throw badUuid('uuid', uuid);
    if (p.owner_uuid !== undefined && !isUuid(p.owner_uuid)) throw badUuid('owner_uuid', p.owner_uuid);
    if (!ctx.vmapiUrl) throw new MockcloudError('ServiceUnavailable', 'FWAPI has no VMAPI to ask');
    let vm: Record<string, unknown>;
    try {
      const q = p.owner_uuid ? `?owner_uuid=${encodeURIComponent(String(p.owner_uuid))}` : '';
      vm = (await ctx.http.call<Record<string, unknown>>({ method: 'GET', url: `${ctx.vmapiUrl}/vms/${uuid}${q}` })).body;
    } catch (err) {
      if (err instanceof HttpStatusError && err.statusCode === 404) throw new MockcloudError('ResourceNotFound', 'VM not found');
      throw err;
    }
    const rules = vmRules(ctx.rules.values(), {
      ...(typeof vm.owner_uuid === 'string' ? { owner_uuid: vm.owner_uuid } : {}),
      tags: (vm.tags as Record<string, unknown> | undefined) ?? {},
      vms: [uuid],
    });
    return ok(rules);
  }));

  server.post('/updates', r((req) => {
    const p = params(req);
    if (!p.type) throw new MockcloudError('MissingParameter', '"type" parameter required');
    if (!UPDATE_TYPES.includes(String(p.type))) throw invalidParams([{ field: 'type', code: 'InvalidParameter', message: 'Invalid update type' }]);
    for (const k of ['uuid', 'req_id', 'owner_uuid', 'server_uuid']) if (p[k] !== undefined && !isUuid(p[k])) throw badUuid(k, p[k]);
    return ok({ update_uuid: ctx.updates.queueUpdate(String(p.type), p) }, 202);
  }));

  void noContent;
}
