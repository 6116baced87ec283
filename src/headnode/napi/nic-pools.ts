/**
 * Provisioning a NIC on a network pool (sdc-napi lib/models/nic/common.js
 * `validateNetworkParams`, lib/util/intersect.js `getPoolIntersections`,
 * lib/models/nic/provision.js `NetworkPoolProvision`): the pool's networks that fit the NIC's
 * constraints (nic_tag, nic_tags_available, vlan_id), tried in order until one has a free
 * address; no address in any of them is `All networks in pool <uuid> are full`.
 */
import { invalidParam, invalidParamsError, missingParam, MSG } from './errors.js';
import type { NetworkPoolRecord, NetworkRecord } from './model.js';
import { poolHasOwner, poolNetworkRecords } from './pools.js';
import { problem } from './validate.js';
import type { StateCtx } from './validators.js';

type Parsed = Record<string, unknown>;

/** The pool checks of `validateNetworkParams`; sets `pool_networks` to the candidates. */
export function checkPoolParams(ctx: StateCtx, parsed: Parsed, pool: NetworkPoolRecord): void {
  if (parsed.ip !== undefined) throw problem(invalidParam('ip', 'IP cannot be specified with a network pool'));
  const checkOwner = parsed.check_owner === undefined || parsed.check_owner === true;
  if (typeof parsed.owner_uuid === 'string' && checkOwner && !poolHasOwner(ctx, pool, parsed.owner_uuid)) {
    throw problem(invalidParam('owner_uuid', MSG.ownerMatch));
  }
  const nets = poolNetworkRecords(ctx, pool);
  const tags = [...new Set(nets.map((n) => n.nic_tag))];
  if (parsed.nic_tag === undefined && parsed.nic_tags_available === undefined && tags.length > 1) {
    throw problem(missingParam('nic_tags_available', `Network pool ${pool.uuid} has mixed nic_tag values`));
  }
  const avail = parsed.nic_tags_available as string[] | undefined;
  const fits = nets.filter(
    (n) =>
      (parsed.nic_tag === undefined || parsed.nic_tag === n.nic_tag) &&
      (avail === undefined || avail.includes(n.nic_tag)) &&
      (parsed.vlan_id === undefined || parsed.vlan_id === n.vlan_id),
  );
  if (fits.length === 0) {
    throw problem(invalidParam('network_uuid', `No networks in network pool ${pool.uuid} match provisioning constraints`));
  }
  parsed.pool_networks = fits;
}

/** `NetworkPoolProvision`: the first candidate network with a free address, and that address. */
export function takePoolIp(
  ctx: StateCtx,
  pool: NetworkPoolRecord,
  candidates: NetworkRecord[],
): { network: NetworkRecord; ip: number } {
  for (const network of candidates) {
    const ip = ctx.state.nextFreeIp(network);
    if (ip !== undefined) return { network, ip };
  }
  throw invalidParamsError([invalidParam('network_uuid', `All networks in pool ${pool.uuid} are full`)]);
}
