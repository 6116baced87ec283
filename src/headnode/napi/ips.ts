/**
 * A network's IPs (sdc-napi lib/endpoints/networks/ips.js, lib/models/ip/index.js) and IP
 * search (lib/endpoints/search.js): list and get (an address with no record is a free one),
 * UpdateIP (`PUT /networks/:uuid/ips/:ip`: create or update the record, `free` to wipe it,
 * `unassign` to drop only who it belongs to), and `GET /search/ips` across every network whose
 * subnet holds the address.
 */
import { cidrContains } from '../../common/ipv4.js';
import { napiIpv4 } from './addr.js';
import type { NapiContext } from './context.js';
import { invalidParam, missingParam, notFound, MSG, type NapiFieldError } from './errors.js';
import { cidrOf, serializeIp, type IpRecord, type NetworkRecord } from './model.js';
import { bool, limit, offset, page, problem, string, uuid, validateParams, type Schema } from './validate.js';
import { ipv4, type StateCtx } from './validators.js';

const IP_LIST_SCHEMA: Schema<unknown> = {
  strict: true,
  optional: { belongs_to_type: string, belongs_to_uuid: uuid, owner_uuid: uuid, limit, offset },
};

export function listIps(ctx: NapiContext, net: NetworkRecord, params: Record<string, unknown>): Record<string, unknown>[] {
  const parsed = validateParams(IP_LIST_SCHEMA, null, params);
  const recs = ctx.state.ipRecords(net.uuid).filter((r: IpRecord) => {
    for (const p of ['belongs_to_type', 'belongs_to_uuid', 'owner_uuid'] as const) {
      if (parsed[p] !== undefined && r[p] !== parsed[p]) return false;
    }
    return true;
  });
  return page(recs, parsed).map((r) => serializeIp(r, net.uuid));
}

/** `validateIP` of ips.js: an address inside the subnet, else a 404. */
export function ipOnNetwork(net: NetworkRecord, ipText: unknown): number {
  const ip = napiIpv4(ipText);
  if (ip === undefined) throw notFound('Invalid IP address');
  if (!cidrContains(cidrOf(net), ip)) throw notFound('IP is not in subnet');
  return ip;
}

/** The record of an address, or the free record NAPI answers for one it never stored. */
export function ipRecord(ctx: StateCtx, net: NetworkRecord, ip: number): { rec: IpRecord; stored: boolean } {
  const rec = ctx.state.getIp(net.uuid, ip);
  return rec ? { rec, stored: true } : { rec: { ip, reserved: false }, stored: false };
}

/** `GET /networks/:uuid/ips/:ip`. */
export function getIp(ctx: NapiContext, net: NetworkRecord, ipText: unknown): Record<string, unknown> {
  return serializeIp(ipRecord(ctx, net, ipOnNetwork(net, ipText)).rec, net.uuid);
}

function isNetworkOwner(ctx: StateCtx, net: NetworkRecord, owner: string): boolean {
  return !net.owner_uuids || owner === ctx.state.adminUuid || net.owner_uuids.includes(owner);
}

/** `validateNetworkOwner`: a new owner must be one of the network's, unless check_owner is false. */
function checkOwner(ctx: StateCtx, net: NetworkRecord, parsed: Record<string, unknown>): void {
  if (typeof parsed.owner_uuid === 'string' && parsed.check_owner !== false && !isNetworkOwner(ctx, net, parsed.owner_uuid)) {
    throw problem(invalidParam('owner_uuid', MSG.ownerMatch));
  }
}

const OWNING = ['belongs_to_uuid', 'belongs_to_type', 'owner_uuid'] as const;

/** `PUT /networks/:uuid/ips/:ip`: the IP record after the change. */
export async function updateIp(ctx: NapiContext, net: NetworkRecord, ipText: unknown, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const ip = ipOnNetwork(net, ipText);
  const { rec: old, stored } = ipRecord(ctx, net, ip);
  const p = { ...params };
  delete p.uuid;
  delete p.network_uuid;
  delete p.ip_addr;
  let next: IpRecord;
  if (p.free && !('unassign' in p)) {
    next = { ip, reserved: false };
  } else if (!stored) {
    const parsed = validateParams<StateCtx>(
      {
        optional: { check_owner: bool, belongs_to_uuid: uuid, belongs_to_type: string, owner_uuid: uuid, reserved: bool },
        after: [
          (_c, _raw, v) => {
            if (!('belongs_to_uuid' in v) && !('belongs_to_type' in v)) return;
            const missing: NapiFieldError[] = OWNING.filter((f) => !(f in v)).map((f) => missingParam(f));
            if (missing.length) throw problem(missing);
          },
          (c, _raw, v) => checkOwner(c, net, v),
        ],
      },
      ctx,
      { ...p, ip: ipText },
    );
    next = { ip, reserved: parsed.reserved === true };
    for (const f of OWNING) if (typeof parsed[f] === 'string') next[f] = parsed[f] as string;
  } else {
    const required: Schema<StateCtx>['required'] = {};
    const optional: NonNullable<Schema<StateCtx>['optional']> = {
      belongs_to_type: string, belongs_to_uuid: uuid, check_owner: bool, owner_uuid: uuid, reserved: bool, unassign: bool, free: bool,
    };
    const promote = (f: string): void => {
      required[f] = optional[f]!;
      delete optional[f];
    };
    if (p.belongs_to_uuid && !old.belongs_to_type) promote('belongs_to_type');
    if (p.belongs_to_type && !old.belongs_to_uuid) promote('belongs_to_uuid');
    if (!old.owner_uuid && (p.belongs_to_type || p.belongs_to_uuid)) promote('owner_uuid');
    const parsed = validateParams<StateCtx>(
      {
        required,
        optional,
        after: [
          (c, _raw, v) => checkOwner(c, net, v),
          (_c, _raw, v) => {
            if (v.free && v.unassign) throw problem(invalidParam('unassign', 'free and unassign cannot both be set to "true"'));
          },
        ],
      },
      ctx,
      p,
    );
    next = { ...old };
    delete next.freed_at;
    if (parsed.unassign) {
      delete next.belongs_to_type;
      delete next.belongs_to_uuid;
    } else {
      for (const f of OWNING) if (typeof parsed[f] === 'string') next[f] = parsed[f] as string;
      if (typeof parsed.reserved === 'boolean') next.reserved = parsed.reserved;
    }
  }
  next.explicit = true;
  ctx.state.putIp(net.uuid, next);
  await ctx.commit();
  return serializeIp(next, net.uuid);
}

const SEARCH_SCHEMA: Schema<unknown> = {
  strict: true,
  required: { ip: ipv4 },
  optional: { belongs_to_type: string, belongs_to_uuid: uuid, fabric: bool, owner_uuid: uuid },
};

/** `GET /search/ips`: the address on every network that holds it, filtered by the owning fields. */
export function searchIps(ctx: NapiContext, params: Record<string, unknown>): Record<string, unknown>[] {
  const parsed = validateParams(SEARCH_SCHEMA, null, params);
  const ip = parsed.ip as number;
  const out: Record<string, unknown>[] = [];
  const nets = [...ctx.state.networks.values()].sort((a, b) => (a.uuid < b.uuid ? -1 : 1));
  for (const net of nets) {
    if (parsed.fabric === true) continue;
    if (!cidrContains(cidrOf(net), ip)) continue;
    const ser = serializeIp(ipRecord(ctx, net, ip).rec, net.uuid);
    const ok = (['belongs_to_type', 'belongs_to_uuid', 'owner_uuid'] as const).every(
      (f) => parsed[f] === undefined || ser[f] === parsed[f],
    );
    if (ok) out.push(ser);
  }
  if (out.length === 0) throw notFound('No networks found matching search criteria');
  return out;
}
