/**
 * The dev SAPI's configuration routes, answered as sdc-sapi answers them:
 *
 *   PUT /applications/:uuid, PUT /services/:uuid, PUT /instances/:uuid (UpdateApplication,
 *     UpdateService, UpdateInstance: `action` update (default), replace or delete over
 *     params, metadata, manifests and metadata_schema; lib/server/attributes.js applyChange)
 *   POST /manifests, GET /manifests, GET|DELETE /manifests/:uuid (lib/server/endpoints/manifests.js)
 *   GET /configs/:uuid (lib/server/endpoints/configs.js, attributes.js generateZoneConfig): the
 *     instance's manifests and metadata merged application, then service, then instance, with
 *     `SERVER_UUID`, `ZONE_UUID` and `INSTANCE_UUID`; an `Etag` (the sha1 of the flattened,
 *     sorted config) and `If-None-Match` answered 304, as restify's conditionalRequest does.
 *     This is what every config-agent polls.
 */
import { createHash } from 'node:crypto';
import { MockcloudError } from '../../common/errors.js';
import { newUuid } from '../../common/uuid.js';
import { noContent, ok, params, route, type Handler, type Params, type Req, type RestifyServer } from '../http.js';
import type { SapiContext } from './context.js';
import { serializeInstance, serializeService, type SapiApplication, type SapiInstance, type SapiManifest, type SapiServiceObject } from './model.js';

const FIELDS = ['params', 'metadata', 'manifests', 'metadata_schema'] as const;
type Field = (typeof FIELDS)[number];
type Attributed = Partial<Record<Field, Record<string, unknown>>>;

/** sdc-sapi attributes.js applyChange, for the actions the update endpoints accept. */
function applyChange<T extends Attributed>(obj: T, p: Params): T {
  const action = typeof p.action === 'string' && p.action !== '' ? p.action.toLowerCase() : 'update';
  if (action !== 'update' && action !== 'replace' && action !== 'delete') {
    throw new MockcloudError('InvalidArgument', 'invalid action');
  }
  const out: T = { ...obj };
  for (const field of FIELDS) {
    const change = p[field];
    if (change === undefined || change === null || change === '') continue;
    if (typeof change !== 'object' || Array.isArray(change)) throw new MockcloudError('InvalidArgument', `${field} must be an object`);
    const ch = change as Record<string, unknown>;
    if (action === 'replace') out[field] = { ...ch } as T[Field];
    else {
      const cur: Record<string, unknown> = { ...(out[field] ?? {}) };
      for (const key of Object.keys(ch)) {
        if (action === 'update') cur[key] = ch[key];
        else delete cur[key];
      }
      out[field] = cur as T[Field];
    }
  }
  return out;
}

/** sdc-sapi configs.js flatten: `key,subkey,value` strings, arrays under their own key. */
function flatten(value: unknown, prefix: string, out: string[]): void {
  if (Array.isArray(value)) {
    for (const v of value) flatten(v, prefix, out);
  } else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix === '' ? k : `${prefix},${k}`, out);
  } else {
    out.push(`${prefix},${String(value)}`);
  }
}

export function configEtag(config: unknown): string {
  const flat: string[] = [];
  flatten(config, '', flat);
  flat.sort();
  return createHash('sha1').update(JSON.stringify(flat), 'utf8').digest('hex');
}

/** Whether an If-None-Match header names this etag (quoted, weak or not; or `*`). */
function noneMatch(header: unknown, etag: string): boolean {
  if (typeof header !== 'string' || header === '') return false;
  return header.split(',').some((t) => {
    const v = t.trim().replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
    return v === '*' || v === etag;
  });
}

/** generateZoneConfig: what GET /configs/:uuid answers for an instance. */
export function zoneConfig(ctx: SapiContext, uuid: string, serverUuid: string): { manifests: SapiManifest[]; metadata: Record<string, unknown> } {
  const inst = ctx.state.instances.get(uuid);
  if (!inst) throw new MockcloudError('ResourceNotFound', `no such instance: ${uuid}`);
  const svc = ctx.state.services.get(inst.service_uuid);
  if (!svc) throw new MockcloudError('ResourceNotFound', `no such service: ${inst.service_uuid}`);
  const app = ctx.state.applications.get(svc.application_uuid);
  if (!app) throw new MockcloudError('ResourceNotFound', `no such application: ${svc.application_uuid}`);
  const merged = (f: 'params' | 'metadata' | 'manifests'): Record<string, unknown> => ({ ...app[f], ...svc[f], ...inst[f] });
  const metadata = merged('metadata');
  const p = merged('params');
  metadata.SERVER_UUID = typeof p.server_uuid === 'string' ? p.server_uuid : serverUuid;
  metadata.ZONE_UUID = inst.uuid;
  metadata.INSTANCE_UUID = inst.uuid;
  delete metadata['user-script'];
  const manifests: SapiManifest[] = [];
  for (const m of Object.values(merged('manifests'))) {
    const mf = typeof m === 'string' ? ctx.state.manifests.get(m) : undefined;
    if (!mf) throw new MockcloudError('ResourceNotFound', `no such manifest: ${String(m)}`);
    manifests.push(mf);
  }
  return { manifests, metadata };
}

export interface ConfigRoutesOptions {
  /** SAPI's own server uuid (the headnode's), SERVER_UUID when the instance names none. */
  serverUuid: string;
  /** Accept-Version handling of routes.ts: throws on an unsupported range, true for 2.x. */
  wantsV2(req: Req): boolean;
  /** Every GET /configs/:uuid answered (200 or 304): for the stats. */
  onConfig?(status: number): void;
}

export function mountSapiConfigRoutes(server: RestifyServer, ctx: SapiContext, opts: ConfigRoutesOptions): void {
  const r = (fn: Handler) => route(ctx.log, fn);
  const { state } = ctx;
  const need = <T>(map: Map<string, T>, kind: string, req: Req): T => {
    const uuid = String(req.params.uuid);
    const v = map.get(uuid);
    if (!v) throw new MockcloudError('ResourceNotFound', `no such ${kind}: ${uuid}`);
    return v;
  };

  server.put('/applications/:uuid', r(async (req) => {
    opts.wantsV2(req);
    const p = params(req);
    const app: SapiApplication = applyChange(need(state.applications, 'application', req), p);
    // sdc-sapi model.js updateObject: the owner can be changed through UpdateApplication.
    if (typeof p.owner_uuid === 'string' && p.owner_uuid !== '') app.owner_uuid = p.owner_uuid;
    state.applications.set(app.uuid, app);
    await ctx.commit();
    return ok(app);
  }));
  server.put('/services/:uuid', r(async (req) => {
    const v2 = opts.wantsV2(req);
    const svc: SapiServiceObject = applyChange(need(state.services, 'service', req), params(req));
    state.services.set(svc.uuid, svc);
    await ctx.commit();
    return ok(serializeService(svc, v2));
  }));
  server.put('/instances/:uuid', r(async (req) => {
    const v2 = opts.wantsV2(req);
    const inst: SapiInstance = applyChange(need(state.instances, 'instance', req), params(req));
    state.instances.set(inst.uuid, inst);
    await ctx.record({ op: 'put', instance: inst });
    return ok(serializeInstance(inst, v2));
  }));

  server.post('/manifests', r(async (req) => {
    opts.wantsV2(req);
    const p = params(req);
    const missing = ['name', 'path', 'template'].filter((k) => p[k] === undefined);
    if (missing.length > 0) throw new MockcloudError('MissingParameter', `missing required keys: ${missing.join(', ')}`);
    const str = (k: string): string | undefined => (typeof p[k] === 'string' ? (p[k] as string) : p[k] === undefined ? undefined : JSON.stringify(p[k]));
    const mf: SapiManifest = {
      uuid: str('uuid') ?? newUuid(),
      name: str('name')!,
      path: str('path')!,
      template: str('template')!,
      ...(str('post_cmd') !== undefined ? { post_cmd: str('post_cmd')! } : {}),
      ...(str('post_cmd_linux') !== undefined ? { post_cmd_linux: str('post_cmd_linux')! } : {}),
      ...(str('version') !== undefined ? { version: str('version')! } : {}),
      ...(typeof p.master === 'boolean' ? { master: p.master } : {}),
    };
    state.manifests.set(mf.uuid, mf);
    await ctx.commit();
    return ok(mf);
  }));
  server.get('/manifests', r((req) => {
    opts.wantsV2(req);
    return ok([...state.manifests.values()]);
  }));
  server.get('/manifests/:uuid', r((req) => {
    opts.wantsV2(req);
    return ok(need(state.manifests, 'manifest', req));
  }));
  server.del('/manifests/:uuid', r(async (req) => {
    opts.wantsV2(req);
    if (!state.manifests.delete(String(req.params.uuid))) return { status: 404 };
    await ctx.commit();
    return noContent();
  }));

  server.get('/configs/:uuid', r((req) => {
    opts.wantsV2(req);
    const config = zoneConfig(ctx, String(req.params.uuid), opts.serverUuid);
    const etag = configEtag(config);
    const notModified = noneMatch(req.headers['if-none-match'], etag);
    opts.onConfig?.(notModified ? 304 : 200);
    if (notModified) return { status: 304, headers: { etag } };
    return { status: 200, body: config, headers: { etag } };
  }));
}
