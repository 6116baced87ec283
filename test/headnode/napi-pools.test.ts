/**
 * The dev NAPI's network pools, black box through sdc-clients' NAPI client, as sdc-napi
 * lib/endpoints/network-pools.js and lib/models/network-pool.js serve them (create, get,
 * list filters, update, delete, owner checks), and NIC provisioning on a pool as
 * lib/models/nic/common.js (validateNetworkParams) and lib/models/nic/provision.js
 * (NetworkPoolProvision: the next network when one is full, PoolFullError) do it.
 * Follows sdc-napi test/integration/network-pools.test.js (and test/unit/network-pools.test.js).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, callError } from './helpers/sdc-clients.js';
import { http, startNapi, type NapiEnv } from './helpers/napi-env.js';

type Obj = Record<string, any>;

describe('dev NAPI network pools', () => {
  let env: NapiEnv;
  const owner = randomUUID();
  let small: Obj;
  let big: Obj;
  let owned: Obj;

  const network = (name: string, third: number, start: number, end: number, extra: Obj = {}) =>
    call<Obj>(env.client, 'createNetwork', {
      name,
      vlan_id: 0,
      nic_tag: 'external',
      subnet: `10.120.${third}.0/24`,
      provision_start_ip: `10.120.${third}.${start}`,
      provision_end_ip: `10.120.${third}.${end}`,
      ...extra,
    });

  beforeAll(async () => {
    env = await startNapi();
    small = await network('pool-small', 1, 10, 11);
    big = await network('pool-big', 2, 10, 200);
    owned = await network('pool-owned', 3, 10, 200, { owner_uuids: [randomUUID()] });
  });

  afterAll(async () => {
    await env?.close();
  });

  it('creates a pool of networks and serves it with its nic tags, sorted networks and an etag', async () => {
    const pool = await call<Obj>(env.client, 'createNetworkPool', 'pool-a', { networks: [big.uuid, small.uuid] });
    expect(pool).toEqual({
      family: 'ipv4',
      uuid: pool.uuid,
      name: 'pool-a',
      networks: [big.uuid, small.uuid].sort(),
      nic_tags_present: ['external'],
      nic_tag: 'external',
    });
    const got = await http(`${env.url}/network_pools/${pool.uuid}`);
    expect(got.body).toEqual(pool);
    expect(got.headers.get('etag')).toBeTruthy();
    // restify's conditionalRequest() in front of the pool routes.
    expect((await http(`${env.url}/network_pools/${pool.uuid}`, { headers: { 'if-match': '"nope"' } })).status).toBe(412);

    const listed = await call<Obj[]>(env.client, 'listNetworkPools', { networks: small.uuid });
    expect(listed.map((p) => p.uuid)).toEqual([pool.uuid]);
    expect(await call<Obj[]>(env.client, 'listNetworkPools', { name: 'no-such-pool' })).toEqual([]);
    await call(env.client, 'deleteNetworkPool', pool.uuid, {});
    expect((await callError(env.client, 'getNetworkPool', pool.uuid)).body).toEqual({
      code: 'ResourceNotFound',
      message: 'network pool not found',
    });
  });

  it("refuses unknown networks, empty pools, and owned networks the pool's owners cannot use", async () => {
    const ghost = randomUUID();
    const unknown = await callError(env.client, 'createNetworkPool', 'bad', { networks: [ghost] });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.body).toEqual({
      code: 'InvalidParameters',
      message: 'Invalid parameters',
      errors: [{ field: 'networks', code: 'InvalidParameter', message: 'unknown network', invalid: [ghost] }],
    });
    const empty = await callError(env.client, 'createNetworkPool', 'bad', { networks: [] });
    expect(empty.body?.errors?.[0]?.message).toBe('network pool must contain at least one network');
    const mismatch = await callError(env.client, 'createNetworkPool', 'bad', { networks: [owned.uuid], owner_uuids: [owner] });
    expect(mismatch.body?.errors).toEqual([
      {
        field: 'networks',
        code: 'InvalidParameter',
        message: 'network owner_uuids do not match the owner_uuids of the pool',
        invalid: [owned.uuid],
      },
    ]);
    const twoNets = await callError(env.client, 'listNetworkPools', { networks: [small.uuid, big.uuid] });
    expect(twoNets.body?.errors?.[0]?.message).toBe('Only one network UUID allowed');
  });

  it('answers provisionable_by: 403 for an owner the pool does not allow, and filters the list', async () => {
    const pool = await call<Obj>(env.client, 'createNetworkPool', 'pool-owned-by', { networks: [big.uuid], owner_uuids: [owner] });
    const stranger = randomUUID();
    const denied = await http(`${env.url}/network_pools/${pool.uuid}?provisionable_by=${stranger}`);
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ code: 'NotAuthorized', message: 'owner cannot provision on network pool' });
    expect((await http(`${env.url}/network_pools/${pool.uuid}?provisionable_by=${owner}`)).status).toBe(200);
    const mine = await call<Obj[]>(env.client, 'listNetworkPools', { provisionable_by: stranger });
    expect(mine.map((p) => p.uuid)).not.toContain(pool.uuid);
    const updated = await call<Obj>(env.client, 'updateNetworkPool', pool.uuid, { owner_uuids: null });
    expect(updated).not.toHaveProperty('owner_uuids');
  });

  it('provisions a NIC on the next network of a pool with room, and says when every one is full', async () => {
    const pool = await call<Obj>(env.client, 'createNetworkPool', 'pool-fill', { networks: [small.uuid] });
    const vm = randomUUID();
    const nic = (extra: Obj = {}) =>
      call<Obj>(env.client, 'provisionNic', pool.uuid, { belongs_to_type: 'zone', belongs_to_uuid: vm, owner_uuid: owner, ...extra });
    const first = await nic();
    expect(first.network_uuid).toBe(small.uuid);
    expect(first.ip).toMatch(/^10\.120\.1\.1[01]$/);
    await nic();
    const full = await callError(env.client, 'provisionNic', pool.uuid, { belongs_to_type: 'zone', belongs_to_uuid: vm, owner_uuid: owner });
    expect(full.statusCode).toBe(422);
    expect(full.body).toEqual({
      code: 'InvalidParameters',
      message: 'Invalid parameters',
      errors: [{ field: 'network_uuid', code: 'InvalidParameter', message: `All networks in pool ${pool.uuid} are full` }],
    });
    await call(env.client, 'updateNetworkPool', pool.uuid, { networks: [small.uuid, big.uuid] });
    expect((await nic()).network_uuid).toBe(big.uuid);
    const withIp = await callError(env.client, 'provisionNic', pool.uuid, {
      belongs_to_type: 'zone', belongs_to_uuid: vm, owner_uuid: owner, ip: '10.120.2.50',
    });
    expect(withIp.body?.errors).toEqual([{ field: 'ip', code: 'InvalidParameter', message: 'IP cannot be specified with a network pool' }]);
  });
});
