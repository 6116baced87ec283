/**
 * The dev NAPI's link aggregations, black box through sdc-clients' NAPI client, as sdc-napi
 * lib/endpoints/aggregations.js and lib/models/aggregation.js serve them: a server's NICs under
 * an interface name (`<server>-<name>` is the id), their checks (known MACs of one server's
 * NICs, an interface name ending in a number, LACP modes, duplicate names), list filters,
 * update and delete, with the changefeed items NAPI publishes.
 * Follows sdc-napi test/integration/aggregations.test.js.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FeedClient } from './helpers/feed-client.js';
import { call, callError } from './helpers/sdc-clients.js';
import { http, startNapi, type NapiEnv } from './helpers/napi-env.js';

type Obj = Record<string, any>;

describe('dev NAPI aggregations', () => {
  let env: NapiEnv;
  const server = randomUUID();
  const owner = randomUUID();
  let macs: string[];
  let zoneMac: string;

  beforeAll(async () => {
    env = await startNapi();
    macs = [];
    for (let i = 0; i < 2; i++) {
      const nic = await call<Obj>(env.client, 'createNic', `00:aa:bb:cc:dd:0${i}`, { belongs_to_type: 'server', belongs_to_uuid: server, owner_uuid: owner });
      macs.push(nic.mac);
    }
    zoneMac = (await call<Obj>(env.client, 'createNic', '00:aa:bb:cc:dd:09', { belongs_to_type: 'zone', belongs_to_uuid: randomUUID(), owner_uuid: owner })).mac;
  });

  afterAll(async () => {
    await env?.close();
  });

  it('creates, lists, updates and deletes an aggregation, announcing it on the changefeed', async () => {
    const feed = new FeedClient(env.url, '~2');
    await feed.open();
    feed.send({ instance: randomUUID(), service: 'test', resources: [{ resource: 'aggregation', subResources: ['create', 'delete', 'lacp_mode'] }] });
    await feed.next(); // bootstrap
    try {
      const aggr = await call<Obj>(env.client, 'createAggr', { name: 'aggr0', macs, nic_tags_provided: ['admin'] });
      expect(aggr).toEqual({
        belongs_to_uuid: server, id: `${server}-aggr0`, lacp_mode: 'off', name: 'aggr0', macs, nic_tags_provided: ['admin'],
      });
      expect((await feed.next()).changeKind).toEqual({ resource: 'aggregation', subResources: ['create'] });
      expect((await call<Obj[]>(env.client, 'listAggrs', { belongs_to_uuid: server })).map((a) => a.id)).toEqual([aggr.id]);
      expect(await call<Obj[]>(env.client, 'listAggrs', { belongs_to_uuid: randomUUID() })).toEqual([]);

      const dup = await callError(env.client, 'createAggr', { name: 'aggr0', macs });
      expect(dup.body).toEqual({
        code: 'InvalidParameters',
        message: 'Invalid parameters',
        errors: [{ field: 'name', code: 'Duplicate', message: 'aggregation with same belongs_to_uuid and name already exists' }],
      });

      const updated = await call<Obj>(env.client, 'updateAggr', aggr.id, { lacp_mode: 'active' });
      expect(updated.lacp_mode).toBe('active');
      expect((await feed.next()).changeKind).toEqual({ resource: 'aggregation', subResources: ['lacp_mode'] });

      await call(env.client, 'deleteAggr', aggr.id);
      expect((await feed.next()).changeKind).toEqual({ resource: 'aggregation', subResources: ['delete'] });
      expect((await http(`${env.url}/aggregations/${aggr.id}`)).body).toEqual({ code: 'ResourceNotFound', message: 'aggregation not found' });
    } finally {
      feed.close();
    }
  });

  it("refuses names not ending in a number, unknown MACs, zones' NICs and unknown LACP modes", async () => {
    const name = await callError(env.client, 'createAggr', { name: 'aggr', macs });
    expect(name.body?.errors).toEqual([{ field: 'name', code: 'InvalidParameter', message: 'must end in a number' }]);
    const unknown = await callError(env.client, 'createAggr', { name: 'aggr1', macs: ['00:aa:bb:cc:dd:ee'] });
    expect(unknown.body?.errors).toEqual([
      { field: 'macs', code: 'InvalidParameter', message: 'unknown MAC addresses', invalid: ['00:aa:bb:cc:dd:ee'] },
    ]);
    const zone = await callError(env.client, 'createAggr', { name: 'aggr1', macs: [zoneMac] });
    expect(zone.body?.errors).toEqual([
      { field: 'macs', code: 'InvalidParameter', message: 'all nics must have belongs_to_uuid of type server', invalid: [zoneMac] },
    ]);
    const lacp = await callError(env.client, 'createAggr', { name: 'aggr1', macs, lacp_mode: 'sometimes' });
    expect(lacp.body?.errors?.[0]?.message).toBe('Invalid LACP mode. Supported modes: off, active, passive');
  });
});
