/**
 * The dev SAPI's routes, answered the way sdc-sapi's endpoints answer them
 * (lib/server/endpoints/{applications,services,instances,ping}.js, lib/server/model.js):
 *
 *   GET /ping
 *   POST /applications, GET /applications[?name&owner_uuid], GET|DELETE /applications/:uuid
 *   POST /services, GET /services[?name&application_uuid&type], GET|DELETE /services/:uuid
 *   POST /instances, GET /instances[?service_uuid|type], GET|DELETE /instances/:uuid
 *   and the update, manifest and config routes of routes-configs.ts
 *
 * Accept-Version: absent means `~1` (SAPI's pre-handler); 1.0.0 and 2.0.0 are offered. Under
 * ~1, lists hold only `vm` objects unless filtered by type or service, and objects carry no
 * `type`. Creating an instance of an `agent` service stores it and deploys nothing; `exists`
 * (AdoptInstance) changes nothing for an agent, as in SAPI. Missing keys are 409
 * MissingParameter "missing required keys: ...", unknown objects 404 "no such <kind>: <uuid>";
 * a DELETE of an unknown service or application is a bare 404.
 */
import { createRequire } from 'node:module';
import { MockcloudError } from '../../common/errors.js';
import { newUuid } from '../../common/uuid.js';
import { noContent, ok, params, route, type Params, type Req, type RestifyServer } from '../http.js';
import type { SapiContext } from './context.js';
import { mountSapiConfigRoutes } from './routes-configs.js';
import { serializeInstance, serializeService, type SapiInstance, type SapiServiceObject, type ServiceType } from './model.js';

// restify's own semver, for Accept-Version ranges as restify matched them for SAPI.
const semver = createRequire(createRequire(import.meta.url).resolve('restify'))('semver') as {
  satisfies(version: string, range: string): boolean;
  ltr(version: string, range: string): boolean;
};

const OFFERED_VERSIONS = ['1.0.0', '2.0.0'];


/** Whether the request's Accept-Version gets 2.0.0 representations (sdc-sapi semverGter). */
export function wantsV2(req: Req): boolean {
  const header = req.headers['accept-version'];
  const range = typeof header === 'string' && header !== '' ? header : '~1';
  if (range !== '*' && !OFFERED_VERSIONS.some((v) => semver.satisfies(v, range))) {
    throw new MockcloudError('InvalidVersion', `${range} is not supported by ${req.method} ${req.path()}`);
  }
  return range === '*' || semver.satisfies('2.0.0', range) || semver.ltr('2.0.0', range);
}

function requireKeys(p: Params, keys: readonly string[]): void {
  const missing = keys.filter((k) => p[k] === undefined);
  if (missing.length > 0) throw new MockcloudError('MissingParameter', `missing required keys: ${missing.join(', ')}`);
}

/** params, metadata, manifests and friends: objects when given (SAPI asserts it). */
function optionalObject(p: Params, key: string): Record<string, unknown> | undefined {
  const v = p[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new MockcloudError('InvalidArgument', `${key} must be an object`);
  }
  return v as Record<string, unknown>;
}

function optionalString(p: Params, key: string): string | undefined {
  const v = p[key];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') throw new MockcloudError('InvalidArgument', `${key} must be a string`);
  return v;
}

function notFound(kind: string, uuid: string): MockcloudError {
  return new MockcloudError('ResourceNotFound', `no such ${kind}: ${uuid}`);
}

export type { SapiContext };

export function mountSapiRoutes(server: RestifyServer, ctx: SapiContext): void {
  const r = (fn: Parameters<typeof route>[1]) => route(ctx.log, fn);
  const { state } = ctx;

  server.get('/ping', r(() => ok({ mode: 'full', storType: 'MorayStorage', storAvailable: true })));
  mountSapiConfigRoutes(server, ctx, {
    serverUuid: ctx.serverUuid ?? '00000000-0000-0000-0000-000000000000',
    wantsV2,
    ...(ctx.onConfig ? { onConfig: ctx.onConfig } : {}),
  });

  // ---- applications
  server.post('/applications', r(async (req) => {
    wantsV2(req);
    const p = params(req);
    requireKeys(p, ['name', 'owner_uuid']);
    const app = {
      uuid: optionalString(p, 'uuid') ?? newUuid(),
      name: String(p.name),
      owner_uuid: String(p.owner_uuid),
      ...withObjects(p, ['params', 'metadata', 'metadata_schema', 'manifests']),
      ...(typeof p.master === 'boolean' ? { master: p.master } : {}),
    };
    state.applications.set(app.uuid, app);
    await ctx.commit();
    return ok(app);
  }));
  server.get('/applications', r((req) => {
    wantsV2(req);
    const p = params(req);
    return ok([...state.applications.values()].filter(
      (a) => (p.name === undefined || a.name === p.name) && (p.owner_uuid === undefined || a.owner_uuid === p.owner_uuid),
    ));
  }));
  server.get('/applications/:uuid', r((req) => {
    wantsV2(req);
    const uuid = String(req.params.uuid);
    const app = state.applications.get(uuid);
    if (!app) throw notFound('application', uuid);
    return ok(app);
  }));
  server.del('/applications/:uuid', r(async (req) => {
    wantsV2(req);
    if (!state.applications.delete(String(req.params.uuid))) return { status: 404 };
    await ctx.commit();
    return noContent();
  }));

  // ---- services
  server.post('/services', r(async (req) => {
    const v2 = wantsV2(req);
    const p = params(req);
    requireKeys(p, ['name', 'application_uuid']);
    const type = p.type === undefined ? 'vm' : p.type;
    if (type !== 'vm' && type !== 'agent') throw new MockcloudError('InternalError', `service type is invalid: ${String(type)}`);
    const appUuid = String(p.application_uuid);
    if (!state.applications.has(appUuid)) throw notFound('application', appUuid);
    const svc: SapiServiceObject = {
      uuid: optionalString(p, 'uuid') ?? newUuid(),
      name: String(p.name),
      application_uuid: appUuid,
      ...withObjects(p, ['params', 'metadata', 'manifests']),
      ...(typeof p.master === 'boolean' ? { master: p.master } : {}),
      type: type as ServiceType,
    };
    state.services.set(svc.uuid, svc);
    await ctx.commit();
    return ok(serializeService(svc, v2));
  }));
  server.get('/services', r((req) => {
    const v2 = wantsV2(req);
    const p = params(req);
    const type = p.type !== undefined ? p.type : v2 ? undefined : 'vm';
    const out = [...state.services.values()].filter(
      (s) =>
        (type === undefined || s.type === type) &&
        (p.name === undefined || s.name === p.name) &&
        (p.application_uuid === undefined || s.application_uuid === p.application_uuid),
    );
    return ok(out.map((s) => serializeService(s, v2)));
  }));
  server.get('/services/:uuid', r((req) => {
    const v2 = wantsV2(req);
    const uuid = String(req.params.uuid);
    const svc = state.services.get(uuid);
    if (!svc) throw notFound('service', uuid);
    return ok(serializeService(svc, v2));
  }));
  server.del('/services/:uuid', r(async (req) => {
    wantsV2(req);
    if (!state.services.delete(String(req.params.uuid))) return { status: 404 };
    await ctx.commit();
    return noContent();
  }));

  // ---- instances
  server.post('/instances', r(async (req) => {
    const v2 = wantsV2(req);
    const p = params(req);
    requireKeys(p, ['service_uuid']);
    const svcUuid = String(p.service_uuid);
    const objects = withObjects(p, ['params', 'metadata', 'manifests']);
    const svc = state.services.get(svcUuid);
    if (!svc) throw notFound('service', svcUuid);
    // The instance takes its service's type; an agent instance is stored, nothing deployed.
    const inst: SapiInstance = {
      uuid: optionalString(p, 'uuid') ?? newUuid(),
      service_uuid: svcUuid,
      ...objects,
      ...(typeof p.master === 'boolean' ? { master: p.master } : {}),
      type: svc.type,
    };
    if (inst.type !== 'agent') {
      throw new MockcloudError('NotImplemented', 'the dev SAPI deploys no VM instances (only services of type agent take instances)');
    }
    state.instances.set(inst.uuid, inst);
    await ctx.record({ op: 'put', instance: inst });
    return ok(serializeInstance(inst, v2));
  }));
  server.get('/instances', r((req) => {
    const v2 = wantsV2(req);
    const p = params(req);
    let type = v2 ? undefined : 'vm';
    if (p.service_uuid !== undefined) type = undefined;
    else if (p.type !== undefined) type = String(p.type);
    const out = [...state.instances.values()].filter(
      (i) => (type === undefined || i.type === type) && (p.service_uuid === undefined || i.service_uuid === p.service_uuid),
    );
    return ok(out.map((i) => serializeInstance(i, v2)));
  }));
  server.get('/instances/:uuid', r((req) => {
    const v2 = wantsV2(req);
    const uuid = String(req.params.uuid);
    const inst = state.instances.get(uuid);
    if (!inst) throw notFound('instance', uuid);
    return ok(serializeInstance(inst, v2));
  }));
  server.del('/instances/:uuid', r(async (req) => {
    wantsV2(req);
    const uuid = String(req.params.uuid);
    if (!state.instances.delete(uuid)) throw notFound('instance', uuid);
    await ctx.record({ op: 'del', uuid });
    return noContent();
  }));
}

function withObjects(p: Params, keys: readonly string[]): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const k of keys) {
    const v = optionalObject(p, k);
    if (v !== undefined) out[k] = v;
  }
  return out;
}
