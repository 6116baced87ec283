/**
 * The dev NAPI's changefeed, with a `ws` client speaking node-sdc-changefeed's listener
 * protocol: the plain compatibility probe, v2 registration as net-agent does it, v1
 * registration, the change items NAPI publishes (and the ones a listener did not ask
 * for, which it must not get), bad registrations and the stats route.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_HEADNODE_ADMIN_UUID } from '../../src/headnode/napi/service.js';
import { call } from './helpers/sdc-clients.js';
import { FeedClient } from './helpers/feed-client.js';
import { http, startNapi, type NapiEnv } from './helpers/napi-env.js';

const NET_AGENT_RESOURCES = [
  { resource: 'network', subResources: ['create', 'delete', 'gateway', 'resolvers', 'routes'] },
  {
    resource: 'nic',
    subResources: [
      'create',
      'delete',
      'allow_dhcp_spoofing',
      'allow_ip_spoofing',
      'allow_mac_spoofing',
      'allow_restricted_traffic',
      'allow_unfiltered_promisc',
    ],
  },
  { resource: 'aggregation', subResources: ['create', 'delete'] },
];

describe('dev NAPI changefeed', () => {
  let env: NapiEnv;
  const clients: FeedClient[] = [];

  const connect = async (version?: string): Promise<FeedClient> => {
    const c = new FeedClient(env.url, version);
    clients.push(c);
    await c.open();
    return c;
  };

  beforeAll(async () => {
    env = await startNapi();
  });

  afterAll(async () => {
    for (const c of clients) c.close();
    await env?.close();
  });

  it('answers the plain GET /changefeeds probe with its resources', async () => {
    const r = await http(`${env.url}/changefeeds`);
    expect(r.status).toBe(200);
    expect(r.body.nic).toMatchObject({ resource: 'nic', bootstrapRoute: '/nics' });
    expect(r.body.network).toMatchObject({ resource: 'network', bootstrapRoute: '/networks' });
    expect(r.body.nic_tag.subResources).toEqual(['create', 'delete']);
    expect(r.body.aggregation.bootstrapRoute).toBe('/aggregations');
    // The listener sends its protocol version on the probe too.
    expect((await http(`${env.url}/changefeeds`, { headers: { 'accept-version': '~2' } })).status).toBe(200);
  });

  it('registers a v2 listener like net-agent and publishes the NIC and network changes it asked for', async () => {
    const instance = randomUUID();
    const feed = await connect('~2');
    feed.send({ instance, service: 'net-agent', resources: NET_AGENT_RESOURCES });
    const boot = await feed.next();
    expect(boot.bootstrapRoutes.map((b: { resource: string; bootstrapRoute: string }) => [b.resource, b.bootstrapRoute])).toEqual([
      ['network', '/networks'],
      ['nic', '/nics'],
      ['aggregation', '/aggregations'],
    ]);
    feed.send('heartbeat'); // the listener's keepalive is ignored

    const cn = randomUUID();
    const vm = randomUUID();
    const nic = await call(env.client, 'provisionNic', 'admin', { belongs_to_type: 'zone', belongs_to_uuid: vm, owner_uuid: DEFAULT_HEADNODE_ADMIN_UUID, cn_uuid: cn });
    const created = await feed.next();
    expect(created).toMatchObject({
      changeKind: { resource: 'nic', subResources: ['create'] },
      changedResourceId: nic.mac,
      belongs_to_uuid: vm,
      cn_uuid: cn,
    });
    expect(typeof created.etag).toBe('string');
    expect(created.published).toMatch(/^\d+$/);

    // `state` is not among net-agent's subResources: that update is not sent, the next one is.
    await call(env.client, 'updateNic', nic.mac, { state: 'running' });
    await call(env.client, 'updateNic', nic.mac, { allow_ip_spoofing: true, state: 'running' });
    const spoof = await feed.next();
    expect(spoof.changeKind).toEqual({ resource: 'nic', subResources: ['allow_ip_spoofing', 'state'] });
    expect(spoof.changedResourceId).toBe(nic.mac);

    const [external] = await call(env.client, 'listNetworks', { name: 'external' });
    await call(env.client, 'updateNetwork', external.uuid, { resolvers: ['1.1.1.1'] });
    const net = await feed.next();
    expect(net).toMatchObject({ changeKind: { resource: 'network', subResources: ['resolvers'] }, changedResourceId: external.uuid });

    await call(env.client, 'deleteNic', nic.mac);
    expect(await feed.next()).toMatchObject({ changeKind: { resource: 'nic', subResources: ['delete'] }, changedResourceId: nic.mac, cn_uuid: cn });

    const stats = await http(`${env.url}/changefeeds/stats`);
    expect(stats.body.registrations.nic[instance]).toMatchObject({ instance, service: 'net-agent', resource: 'nic' });
  });

  it('speaks v1 to a listener without Accept-Version', async () => {
    const feed = await connect();
    feed.send({ instance: randomUUID(), service: 'test', changeKind: { resource: 'nic_tag', subResources: ['create'] } });
    expect(await feed.next()).toEqual({ resource: 'nic_tag', bootstrapRoute: '/nic_tags', subResources: ['create', 'delete'] });
    await call(env.client, 'createNicTag', 'cf_tag');
    expect(await feed.next()).toMatchObject({ changeKind: { resource: 'nic_tag', subResources: ['create'] }, changedResourceId: 'cf_tag' });
  });

  it('closes the socket on a bad registration, with the reason', async () => {
    const unknown = await connect('~2');
    unknown.send({ instance: 'x', resources: [{ resource: 'vm', subResources: ['create'] }] });
    expect((await unknown.whenClosed()).reason).toBe('unknown resource: vm');

    const garbage = await connect('~2');
    garbage.send('not json');
    expect((await garbage.whenClosed()).reason).toBe('failed to parse v2 registration payload');
  });

  it('closes a listener that sends a frame over 64 KiB (1009, before it is buffered) and keeps serving the others', async () => {
    const good = await connect('~2');
    good.send({ instance: randomUUID(), resources: [{ resource: 'nic', subResources: ['create'] }] });
    await good.next();
    const big = await connect('~2');
    big.send({ instance: randomUUID(), resources: [{ resource: 'nic', subResources: ['create'] }], pad: 'x'.repeat(2 * 1024 * 1024) });
    expect((await big.whenClosed()).code).toBe(1009);
    const nic = await call(env.client, 'provisionNic', 'admin', { belongs_to_type: 'zone', belongs_to_uuid: randomUUID(), owner_uuid: randomUUID() });
    expect((await good.next()).changedResourceId).toBe(nic.mac);
  });

  it('lets a re-registering instance replace its old socket', async () => {
    const instance = randomUUID();
    const reg = { instance, resources: [{ resource: 'nic', subResources: ['create'] }] };
    const old = await connect('~2');
    old.send(reg);
    await old.next();
    const fresh = await connect('~2');
    fresh.send(reg);
    await fresh.next();
    const nic = await call(env.client, 'provisionNic', 'admin', { belongs_to_type: 'zone', belongs_to_uuid: randomUUID(), owner_uuid: DEFAULT_HEADNODE_ADMIN_UUID });
    expect((await fresh.next()).changedResourceId).toBe(nic.mac);
    // The replaced socket is no longer served (fresh got its item, so old's would be queued by now).
    await expect(old.next(300)).rejects.toThrow('no changefeed message arrived');
    const stats = await http(`${env.url}/changefeeds/stats`);
    expect(Object.keys(stats.body.registrations.nic).filter((k) => k === instance)).toHaveLength(1);
  });
});
