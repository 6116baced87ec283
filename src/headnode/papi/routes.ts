/**
 * The dev PAPI's routes, as sdc-papi lib/papi.js serves them:
 *
 *   GET/HEAD /packages            ListPackages: the schema attributes as filters (search.ts) or
 *                                 `filter`, with `sort`, `order`, `limit`, `offset`;
 *                                 `x-resource-count` is every match
 *   POST     /packages            CreatePackage (201, `Location`): unknown attributes, then the
 *                                 package's checks (`skip_validation` skips those)
 *   GET/HEAD /packages/:uuid      GetPackage (`owner_uuids` must share an owner, when both have)
 *   PUT      /packages/:uuid      UpdatePackage: immutable attributes refused unless `force`,
 *                                 `null` removes an attribute, then the checks
 *   DELETE   /packages/:uuid      405 unless `force`
 *   GET      /ping
 *
 * Parameters merge as restify 4's parsers gave them to PAPI: the query, then the route's
 * `:uuid`, then the JSON body over both (`overrideParams`). Every answer carries `v: 1`; the
 * errors are restify 4's bodies (ResourceNotFound, `ConflictError`, BadMethod, InvalidArgument,
 * InternalError).
 */
import { MockcloudError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { newUuid } from '../../common/uuid.js';
import { body as reqBody, query, route, type Params, type Req, type RestifyServer } from '../http.js';
import type { PapiState } from './model.js';
import { MorayQueryError } from './moray-query.js';
import { PACKAGE_SCHEMA, type Pkg } from './schema.js';
import { searchFilter } from './search.js';
import { checkImmutables, checkRecognised, validatePackage, validationError } from './validate.js';

export interface PapiContext {
  state: PapiState;
  log: Logger;
  /** Resolves once the state as of the call is on disk. */
  commit(): Promise<void>;
}

const PKG_VERSION = 1;

/** Attributes an old PAPI kept that an update drops. */
const STALE_ATTRS = ['overprovision_cpu', 'overprovision_memory', 'overprovision_storage', 'overprovision_network', 'overprovision_io', 'urn'];

/** Query, then the route's params, then the body over both. */
function papiParams(req: Req): Params {
  const out: Params = { ...query(req) };
  for (const [k, v] of Object.entries(req.params ?? {})) if (v !== undefined) out[k] = v;
  const b = reqBody(req);
  if (b && typeof b === 'object' && !Array.isArray(b)) Object.assign(out, b);
  return out;
}

const notFound = (uuid: unknown): MockcloudError => new MockcloudError('ResourceNotFound', `Package ${String(uuid)} does not exist`);

function withVersion(pkg: Pkg): Pkg {
  return { ...pkg, v: PKG_VERSION };
}

/** PAPI answers with `request-id` the package's uuid when the caller sent none. */
function requestIdHeader(req: Req, uuid: unknown): Record<string, string> {
  return req.headers['request-id'] ? {} : { 'request-id': String(uuid) };
}

export function mountPapiRoutes(server: RestifyServer, ctx: PapiContext): void {
  const { log, state } = ctx;

  const list = route(log, (req) => listPackages(ctx, papiParams(req)));
  server.get('/packages', list);
  server.head('/packages', list);

  server.post(
    '/packages',
    route(log, async (req) => {
      const p = papiParams(req);
      if (typeof p.uuid === 'string' && state.has(p.uuid)) {
        throw new MockcloudError('Conflict', 'A package with the given UUID already exists', { restCode: 'ConflictError' });
      }
      const pkg: Pkg = {};
      for (const key of Object.keys(PACKAGE_SCHEMA)) if (p[key] !== undefined) pkg[key] = p[key];
      if (!pkg.uuid) pkg.uuid = newUuid();
      checkRecognised(p);
      if (!p.skip_validation) {
        const errs = validatePackage(pkg);
        if (errs.length > 0) throw validationError('Package is invalid', errs);
      }
      const uuid = String(pkg.uuid);
      if (!state.create(uuid, pkg)) {
        throw new MockcloudError('Conflict', 'A package with the given UUID already exists', { restCode: 'ConflictError' });
      }
      await ctx.commit();
      return {
        status: 201,
        body: withVersion(state.get(uuid)!),
        headers: { location: `/packages/${uuid}`, ...requestIdHeader(req, uuid) },
      };
    }),
  );

  const get = route(log, (req) => {
    const p = papiParams(req);
    const pkg = typeof p.uuid === 'string' ? state.get(p.uuid) : undefined;
    if (!pkg || !sharesOwner(p.owner_uuids, pkg.owner_uuids)) throw notFound(p.uuid);
    return { status: 200, body: withVersion(pkg), headers: requestIdHeader(req, p.uuid) };
  });
  server.get('/packages/:uuid', get);
  server.head('/packages/:uuid', get);

  server.put(
    '/packages/:uuid',
    route(log, async (req) => {
      const p = papiParams(req);
      const pkg = typeof p.uuid === 'string' ? state.get(p.uuid) : undefined;
      if (!pkg) throw notFound(p.uuid);
      checkRecognised(p);
      if (!p.force) checkImmutables(p, pkg);
      for (const key of Object.keys(PACKAGE_SCHEMA)) {
        const value = p[key];
        if (value === undefined || key === 'uuid') continue;
        if (value !== null) pkg[key] = value;
        else delete pkg[key];
      }
      for (const key of STALE_ATTRS) delete pkg[key];
      if (!p.skip_validation) {
        const errs = validatePackage(pkg);
        if (errs.length > 0) throw validationError('Updated package is invalid', errs);
      }
      const uuid = String(pkg.uuid);
      state.put(uuid, pkg);
      await ctx.commit();
      return { status: 200, body: withVersion(state.get(uuid)!), headers: requestIdHeader(req, uuid) };
    }),
  );

  server.del(
    '/packages/:uuid',
    route(log, async (req) => {
      const p = papiParams(req);
      if (typeof p.uuid !== 'string' || !state.has(p.uuid)) throw notFound(p.uuid);
      if (!p.force) throw new MockcloudError('MethodNotAllowed', 'Packages cannot be deleted', { restCode: 'BadMethod' });
      state.delete(p.uuid);
      await ctx.commit();
      return { status: 204, headers: requestIdHeader(req, p.uuid) };
    }),
  );

  server.get(
    '/ping',
    route(log, () => ({ status: 200, body: { pid: process.pid, backend: 'up' } })),
  );
}

/** getPkg's owner check: a package and a request that both name owners must share one. */
function sharesOwner(requested: unknown, owners: unknown): boolean {
  if (!requested || !owners) return true;
  let req: unknown = requested;
  if (typeof req === 'string') {
    try {
      req = JSON.parse(req);
    } catch {
      // a single owner
    }
  }
  const have = owners as unknown[];
  if (Array.isArray(req)) return req.some((o) => have.includes(o));
  return have.includes(req);
}

function listPackages(ctx: PapiContext, params: Params): { status: number; body?: unknown; headers?: Record<string, string> } {
  const { offset, limit, order, sort, ...rest } = params;
  let dir: 'ASC' | 'DESC' = 'ASC';
  if (order !== undefined && order !== null && order !== '') {
    dir = String(order).toUpperCase() === 'DESC' ? 'DESC' : 'ASC';
  }
  const filter = typeof rest.filter === 'string' && rest.filter ? rest.filter : searchFilter(rest);
  ctx.log.debug({ filter }, 'Get Packages filter');
  if (filter === undefined) return { status: 404 };
  try {
    const found = ctx.state.find(filter, {
      sort: { attribute: sort ? String(sort) : '_id', order: dir },
      ...paging('limit', limit),
      ...paging('offset', offset),
    });
    return { status: 200, body: found.records.map(withVersion), headers: { 'x-resource-count': String(found.total) } };
  } catch (err) {
    if (!(err instanceof MorayQueryError)) throw err;
    if (err.kind === 'InvalidQuery') throw new MockcloudError('InvalidArgument', 'Provided search filter is not valid');
    throw new MockcloudError('InternalError', err.message);
  }
}

/** `limit` / `offset` as Moray puts them into its query: a whole number, else Postgres refuses. */
function paging(key: 'limit' | 'offset', value: unknown): { limit?: number; offset?: number } {
  if (value === undefined || value === null || value === '' || value === 0 || value === '0') return {};
  const text = String(value);
  if (!/^\d+$/.test(text)) throw new MorayQueryError('Other', `syntax error at or near "${text}"`);
  return { [key]: Number(text) };
}
