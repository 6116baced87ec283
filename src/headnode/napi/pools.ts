/**
 * Network pools (sdc-napi lib/models/network-pool.js, lib/endpoints/network-pools.js): named
 * sets of up to 64 networks of one address family, optionally owned, listed by uuid, that
 * provisioning (and VMAPI) can name instead of a network. Their `nic_tags_present` (and the
 * representative `nic_tag`) come from the networks they hold.
 */
import { randomUUID } from 'node:crypto';
import { MockcloudError } from '../../common/errors.js';
import type { NapiContext } from './context.js';
import { invalidParam, notFound } from './errors.js';
import { etagOf, type NetworkPoolRecord, type NetworkRecord } from './model.js';
import { uuidPrefix } from './networks.js';
import { enumOf, limit, offset, page, problem, string, stringOrArray, uuid, uuidArray, validateParams, type Schema } from './validate.js';
import type { StateCtx } from './validators.js';

const MAX_NETS = 64;
const POOL_OWNER_MATCH = 'network owner_uuids do not match the owner_uuids of the pool';

/** `validateNetworks`: existing networks of one family; `_netobjs` carries them along. */
function poolNetworks(ctx: StateCtx & { family?: string }, name: string, v: unknown): { multi: Record<string, unknown> } {
  const uuids = uuidArray(ctx, name, v);
  if (uuids.length === 0) throw problem(invalidParam(name, 'network pool must contain at least one network'));
  if (uuids.length > MAX_NETS) throw problem(invalidParam(name, `maximum ${MAX_NETS} networks per network pool`));
  const missing = uuids.filter((u) => !ctx.state.networks.has(u));
  if (missing.length) {
    throw problem(invalidParam(name, `unknown network${missing.length === 1 ? '' : 's'}`, { invalid: missing }));
  }
  const nets = uuids.map((u) => ctx.state.networks.get(u)!);
  if (ctx.family !== undefined && ctx.family !== 'ipv4') {
    throw problem(invalidParam(name, 'address family of all networks in a network pool must match'));
  }
  return { multi: { [name]: nets.map((n) => n.uuid), _netobjs: nets } };
}

/** `validateNetworkOwners`: an owned network must allow one of the pool's owners (or the admin). */
function checkOwners(ctx: StateCtx, _raw: Record<string, unknown>, parsed: Record<string, unknown>): void {
  const owners = parsed.owner_uuids as string[] | undefined;
  const nets = parsed._netobjs as NetworkRecord[] | undefined;
  if (!owners || !nets || owners.length === 0 || nets.length === 0) return;
  const allowed = new Set([...owners, ctx.state.adminUuid]);
  const bad = nets.filter((n) => n.owner_uuids && !n.owner_uuids.some((o) => allowed.has(o))).map((n) => n.uuid);
  if (bad.length) throw problem(invalidParam('networks', POOL_OWNER_MATCH, { invalid: bad }));
}

export function serializePool(ctx: StateCtx, p: NetworkPoolRecord): Record<string, unknown> {
  const ser: Record<string, unknown> = {
    family: p.family,
    uuid: p.uuid,
    name: p.name,
    ...(p.description !== undefined ? { description: p.description } : {}),
    networks: [...p.networks].sort(),
  };
  const tags: string[] = [];
  for (const u of ser.networks as string[]) {
    const tag = ctx.state.networks.get(u)?.nic_tag;
    if (tag !== undefined && !tags.includes(tag)) tags.push(tag);
  }
  if (tags.length) {
    ser.nic_tags_present = tags;
    ser.nic_tag = tags[0];
  }
  if (p.owner_uuids) ser.owner_uuids = p.owner_uuids;
  return ser;
}

/** A pool's networks that still exist, in its order. */
export function poolNetworkRecords(ctx: StateCtx, p: NetworkPoolRecord): NetworkRecord[] {
  return [...p.networks].sort().flatMap((u) => ctx.state.networks.get(u) ?? []);
}

/** `isOwner`: an unowned pool is anyone's; the admin owns every pool. */
export function poolHasOwner(ctx: StateCtx, p: NetworkPoolRecord, owner: string): boolean {
  if (!p.owner_uuids || p.owner_uuids.length === 0) return true;
  return owner === ctx.state.adminUuid || p.owner_uuids.includes(owner);
}

const LIST_SCHEMA: Schema<unknown> = {
  strict: true,
  optional: {
    uuid: uuidPrefix,
    limit,
    offset,
    name: string,
    family: enumOf(['ipv4', 'ipv6']),
    networks: stringOrArray,
    provisionable_by: uuid,
  },
  after: [
    (_c, _raw, parsed) => {
      if (Array.isArray(parsed.networks) && parsed.networks.length > 1) {
        throw problem(invalidParam('networks', 'Only one network UUID allowed'));
      }
    },
  ],
};

export function listPools(ctx: NapiContext, params: Record<string, unknown>): NetworkPoolRecord[] {
  const parsed = validateParams(LIST_SCHEMA, null, params);
  const prefix = parsed.uuid as string | undefined;
  const net = parsed.networks === undefined ? undefined : String(Array.isArray(parsed.networks) ? parsed.networks[0] : parsed.networks);
  const out = [...ctx.state.pools.values()].filter((p) => {
    if (prefix !== undefined && (prefix.endsWith('*') ? !p.uuid.startsWith(prefix.slice(0, -1)) : p.uuid !== prefix)) return false;
    if (parsed.name !== undefined && p.name !== parsed.name) return false;
    if (parsed.family !== undefined && p.family !== parsed.family) return false;
    if (net !== undefined && !p.networks.includes(net)) return false;
    if (typeof parsed.provisionable_by === 'string' && p.owner_uuids && p.owner_uuids.length > 0) {
      if (!p.owner_uuids.includes(parsed.provisionable_by)) return false;
    }
    return true;
  });
  out.sort((a, b) => (a.uuid < b.uuid ? -1 : 1));
  return page(out, parsed);
}

/** GET /network_pools/:uuid (and `provisionable_by`, as GetNetworkPool checks it). */
export function getPool(ctx: NapiContext, params: Record<string, unknown>): NetworkPoolRecord {
  const parsed = validateParams({ required: { uuid }, optional: { provisionable_by: uuid } }, null, params);
  const pool = ctx.state.pools.get(parsed.uuid as string);
  if (!pool) throw notFound('network pool not found');
  if (typeof parsed.provisionable_by === 'string' && pool.owner_uuids && pool.owner_uuids.length > 0) {
    if (!pool.owner_uuids.concat(ctx.state.adminUuid).includes(parsed.provisionable_by)) {
      throw new MockcloudError('Forbidden', 'owner cannot provision on network pool', { restCode: 'NotAuthorized' });
    }
  }
  return pool;
}

/** Pools are not on NAPI's changefeed. */
async function save(ctx: NapiContext, pool: NetworkPoolRecord): Promise<NetworkPoolRecord> {
  pool.etag = etagOf(pool);
  ctx.state.pools.set(pool.uuid, pool);
  await ctx.commit();
  return pool;
}

export async function createPool(ctx: NapiContext, params: Record<string, unknown>): Promise<NetworkPoolRecord> {
  const parsed = validateParams<StateCtx>(
    {
      required: { name: string, networks: poolNetworks },
      optional: { description: string, owner_uuids: uuidArray, uuid },
      after: [checkOwners],
    },
    ctx,
    params,
  );
  const pool: NetworkPoolRecord = {
    uuid: (parsed.uuid as string | undefined) ?? randomUUID(),
    name: parsed.name as string,
    ...(parsed.description !== undefined ? { description: parsed.description as string } : {}),
    networks: [...(parsed.networks as string[])].sort(),
    ...(parsed.owner_uuids !== undefined ? { owner_uuids: parsed.owner_uuids as string[] } : {}),
    family: 'ipv4',
    etag: '',
  };
  return save(ctx, pool);
}

export async function updatePool(ctx: NapiContext, old: NetworkPoolRecord, params: Record<string, unknown>): Promise<NetworkPoolRecord> {
  const p = { ...params };
  delete p.uuid;
  if (!('networks' in p) && 'owner_uuids' in p) p.networks = old.networks;
  const parsed = validateParams<StateCtx & { family?: string }>(
    {
      optional: {
        name: string,
        description: string,
        networks: poolNetworks,
        owner_uuids: (c, name, v) => (v === null ? [] : uuidArray(c, name, v)),
      },
      after: [
        (c, raw, v) => {
          if (!('owner_uuids' in v) && old.owner_uuids) v.owner_uuids = old.owner_uuids;
          checkOwners(c, raw, v);
        },
      ],
    },
    { state: ctx.state, family: old.family },
    p,
  );
  const next: NetworkPoolRecord = { ...old };
  if (parsed.name !== undefined) next.name = parsed.name as string;
  if (parsed.description !== undefined) next.description = parsed.description as string;
  if (parsed.networks !== undefined) next.networks = [...(parsed.networks as string[])].sort();
  if (parsed.owner_uuids !== undefined) {
    const owners = parsed.owner_uuids as string[];
    if (owners.length === 0) delete next.owner_uuids;
    else next.owner_uuids = owners;
  }
  return save(ctx, next);
}

export async function deletePool(ctx: NapiContext, pool: NetworkPoolRecord): Promise<void> {
  ctx.state.pools.delete(pool.uuid);
  await ctx.commit();
}
