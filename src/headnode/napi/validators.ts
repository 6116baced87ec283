/**
 * NAPI validators that look at state (sdc-napi lib/models/nic/common.js, nic-tag.js,
 * lib/util/validate.js): networks by uuid (or `admin` by name), existing nic tags, IPv4
 * addresses, MACs.
 */
import { invalidParam, MSG } from './errors.js';
import { looksLikeIpv6, napiIpv4, parseMac } from './addr.js';
import type { NetworkRecord } from './model.js';
import type { NapiState } from './state.js';
import { arrayify, problem, string, uuid, type Multi } from './validate.js';

export interface StateCtx {
  state: NapiState;
}

export function ipv4(_: unknown, name: string, v: unknown): number {
  const ip = napiIpv4(v);
  if (ip !== undefined) return ip;
  if (looksLikeIpv6(v)) throw problem(invalidParam(name, MSG.ipv4Required));
  throw problem(invalidParam(name, MSG.invalidIp));
}

export function mac(_: unknown, name: string, v: unknown): number {
  const m = parseMac(v);
  if (m === undefined) throw problem(invalidParam(name, 'invalid MAC address'));
  return m;
}

/** A network by uuid, or the admin network by the name `admin` (as NAPI allows for booter). */
export function findNetwork(state: NapiState, id: string): NetworkRecord | undefined {
  if (id === 'admin') {
    return [...state.networks.values()].filter((n) => n.name === 'admin').sort((a, b) => (a.name < b.name ? -1 : 1))[0];
  }
  return state.networks.get(id);
}

/**
 * `validateIPv4Network`: sets `network` (or, for a network pool's uuid, `network_pool`) and
 * the resolved `network_uuid`.
 */
export function ipv4Network(ctx: StateCtx, name: string, v: unknown): Multi {
  if (v !== 'admin') uuid(null, name, v);
  const net = findNetwork(ctx.state, v as string);
  if (net) return { multi: { network: net, [name]: net.uuid } };
  const pool = ctx.state.pools.get(v as string);
  if (pool) return { multi: { network_pool: pool, [name]: pool.uuid } };
  throw problem(invalidParam(name, 'network does not exist'));
}

/** `nicTagsExist(false, …)`: an array (or comma string) of existing tags. */
export function nicTagsExist(ctx: StateCtx, name: string, v: unknown): string[] {
  if (typeof v !== 'string' && !Array.isArray(v)) throw problem(invalidParam(name, 'must be an array'));
  const tags = arrayify(v);
  const notStrings = tags.filter((t) => typeof t !== 'string');
  if (notStrings.length > 0) throw problem(invalidParam(name, MSG.str, { invalid: notStrings }));
  const missing = (tags as string[]).filter((t) => !ctx.state.nicTags.has(t));
  if (missing.length > 0) {
    throw problem(invalidParam(name, `nic tag${missing.length === 1 ? ' does' : 's do'} not exist`, { invalid: missing }));
  }
  return tags as string[];
}

/** `validateNicTag`: one existing tag, optionally `<tag>/<vnet id>`. */
export function nicTag(ctx: StateCtx, name: string, v: unknown): string | Multi {
  const s = string(null, name, v);
  const split = s.split('/');
  if (split.length > 2) throw problem(invalidParam(name, MSG.nicTagSlash));
  const tag = split[0]!;
  if (tag === '') throw problem(invalidParam(name, 'must not be empty'));
  if (!ctx.state.nicTags.has(tag)) throw problem(invalidParam(name, 'nic tag does not exist'));
  if (split[1] === undefined) return tag;
  const vnet = Number(split[1]);
  if (!/^\d+$/.test(split[1]) || vnet > 16777215) {
    throw problem(invalidParam(name, 'VNET ID must be a number between 0 and 16777215'));
  }
  return { multi: { [name]: tag, vnet_id: vnet } };
}
