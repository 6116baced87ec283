/**
 * The dev NAPI's IP routes and network checks, black box through sdc-clients' NAPI client:
 * UpdateIP (sdc-napi lib/endpoints/networks/ips.js, lib/models/ip/index.js: reserve, take
 * over, unassign, free), IP search (lib/endpoints/search.js), subnet overlap
 * (lib/models/network.js validateProvisionRange), the uuid prefix filter (restify-warden
 * validateUUIDPrefix), a NIC update onto a held address (lib/models/nic/update.js
 * prepareUpdate), and the fabric routes of a NAPI without overlays
 * (lib/endpoints/fabrics/common.js ensureOverlaysEnabled).
 * Follows sdc-napi test/integration/ips.test.js, network-overlap.test.js and fabrics-invalid.test.js.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, callError } from './helpers/sdc-clients.js';
import { http, startNapi, type NapiEnv } from './helpers/napi-env.js';

type Obj = Record<string, any>;

describe('dev NAPI IPs, search and network checks', () => {
  let env: NapiEnv;
  let net: Obj;
  const owner = randomUUID();

  beforeAll(async () => {
    env = await startNapi();
    net = await call<Obj>(env.client, 'createNetwork', {
      name: 'ips-test', vlan_id: 0, nic_tag: 'external', subnet: '198.51.100.0/24',
      provision_start_ip: '198.51.100.10', provision_end_ip: '198.51.100.200',
    });
  });

  afterAll(async () => {
    await env?.close();
  });

  it('reserves, unassigns and frees an address with UpdateIP', async () => {
    const server = randomUUID();
    const reserved = await call<Obj>(env.client, 'updateIP', net.uuid, '198.51.100.150', { reserved: true });
    expect(reserved).toEqual({ ip: '198.51.100.150', network_uuid: net.uuid, reserved: true, free: false });
    const taken = await call<Obj>(env.client, 'updateIP', net.uuid, '198.51.100.150', {
      belongs_to_type: 'server', belongs_to_uuid: server, owner_uuid: owner,
    });
    expect(taken).toMatchObject({ belongs_to_uuid: server, belongs_to_type: 'server', owner_uuid: owner, reserved: true, free: false });
    // A NIC may not be provisioned on an address someone holds.
    const nic = await callError(env.client, 'createNic', 'aa:bb:cc:00:11:22', {
      belongs_to_type: 'zone', belongs_to_uuid: randomUUID(), owner_uuid: owner, network_uuid: net.uuid, ip: '198.51.100.150',
    });
    expect(nic.body?.errors?.[0]).toMatchObject({ field: 'ip', code: 'UsedBy', type: 'server', id: server });
    const unassigned = await call<Obj>(env.client, 'updateIP', net.uuid, '198.51.100.150', { unassign: true });
    expect(unassigned).toEqual({ ip: '198.51.100.150', network_uuid: net.uuid, owner_uuid: owner, reserved: true, free: false });
    const freed = await call<Obj>(env.client, 'updateIP', net.uuid, '198.51.100.150', { free: true });
    expect(freed).toEqual({ ip: '198.51.100.150', network_uuid: net.uuid, reserved: false, free: true });

    await call(env.client, 'updateIP', net.uuid, '198.51.100.151', { reserved: true });
    const conflict = await callError(env.client, 'updateIP', net.uuid, '198.51.100.151', { free: true, unassign: true });
    expect(conflict.body?.errors).toEqual([
      { field: 'unassign', code: 'InvalidParameter', message: 'free and unassign cannot both be set to "true"' },
    ]);
    const outside = await http(`${env.url}/networks/${net.uuid}/ips/203.0.113.5`, { method: 'PUT', body: { reserved: true } });
    expect(outside.status).toBe(404);
    expect(outside.body).toEqual({ code: 'ResourceNotFound', message: 'IP is not in subnet' });
  });

  it('keeps UpdateIP reservations across a restart', async () => {
    await call(env.client, 'updateIP', net.uuid, '198.51.100.160', { reserved: true, owner_uuid: owner });
    await env.restart();
    expect(await call<Obj>(env.client, 'getIP', net.uuid, '198.51.100.160')).toEqual({
      ip: '198.51.100.160', network_uuid: net.uuid, owner_uuid: owner, reserved: true, free: false,
    });
  });

  it('finds an address on every network whose subnet holds it', async () => {
    await call(env.client, 'updateIP', net.uuid, '198.51.100.170', { belongs_to_type: 'other', belongs_to_uuid: owner, owner_uuid: owner });
    expect(await call<Obj[]>(env.client, 'searchIPs', '198.51.100.170', {})).toEqual([
      { ip: '198.51.100.170', network_uuid: net.uuid, belongs_to_type: 'other', belongs_to_uuid: owner, owner_uuid: owner, reserved: false, free: false },
    ]);
    const none = await callError(env.client, 'searchIPs', '203.0.113.9', {});
    expect(none.statusCode).toBe(404);
    expect(none.body).toEqual({ code: 'ResourceNotFound', message: 'No networks found matching search criteria' });
  });

  it('refuses a public subnet overlapping another network, and lets private ones overlap', async () => {
    const err = await callError(env.client, 'createNetwork', {
      name: 'ips-overlap', vlan_id: 0, nic_tag: 'external', subnet: '198.51.100.128/25',
      provision_start_ip: '198.51.100.130', provision_end_ip: '198.51.100.140',
    });
    expect(err.statusCode).toBe(422);
    expect(err.body).toEqual({
      code: 'InvalidParameters',
      message: 'Invalid parameters',
      errors: [{ field: 'subnet', code: 'UsedBy', type: 'network', id: net.uuid, message: 'subnet overlaps with another network' }],
    });
    // The dev DC's admin network is 10.99.99.0/24: RFC 1918 subnets may overlap it.
    const priv = await call<Obj>(env.client, 'createNetwork', {
      name: 'ips-private', vlan_id: 0, nic_tag: 'external', subnet: '10.99.0.0/16',
      provision_start_ip: '10.99.1.10', provision_end_ip: '10.99.1.20',
    });
    expect(priv.subnet).toBe('10.99.0.0/16');
  });

  // sdc-napi lib/models/network.js: CREATE_SCHEMA's fabric, vnet_id, subnet_alloc and
  // subnet_prefix, validateFabricOwner, validateSubnetAlloc, validateProvisionRange (private
  // fabrics, overlaps per vnet_id), nameStr, the fabric fields of serialize(), and
  // validateImmutableFields; restify-warden stops at the first failing `after` check.
  it('creates fabric networks through POST /networks as NAPI does, and checks their fields', async () => {
    const fab = { vlan_id: 2, nic_tag: 'external', fabric: true, vnet_id: 4321, subnet: '192.168.77.0/24',
      provision_start_ip: '192.168.77.5', provision_end_ip: '192.168.77.250' };
    const noOwner = await callError(env.client, 'createNetwork', { name: 'fab0', ...fab });
    expect(noOwner.body?.errors).toEqual([{ field: 'owner_uuids', code: 'MissingParameter', message: 'Missing parameter' }]);
    const twoOwners = await callError(env.client, 'createNetwork', { name: 'fab0', ...fab, owner_uuids: [owner, randomUUID()] });
    expect(twoOwners.body?.errors).toEqual([
      { field: 'owner_uuids', code: 'InvalidParameter', message: 'Fabric networks must have exactly one owner' },
    ]);
    const pub = await callError(env.client, 'createNetwork', {
      name: 'fab0', ...fab, owner_uuids: [owner], subnet: '203.0.113.0/24', provision_start_ip: '203.0.113.5', provision_end_ip: '203.0.113.9',
    });
    expect(pub.body?.errors).toEqual([{ field: 'subnet', code: 'InvalidParameter', message: 'subnet must be within private ranges' }]);
    const created = await call<Obj>(env.client, 'createNetwork', { name: 'fab0', ...fab, owner_uuids: [owner], internet_nat: true });
    expect(created).toMatchObject({
      fabric: true, vnet_id: 4321, internet_nat: true, gateway: '192.168.77.5', gateway_provisioned: false,
      owner_uuids: [owner], subnet: '192.168.77.0/24',
    });
    expect(Object.keys(created).slice(9, 13)).toEqual(['fabric', 'vnet_id', 'internet_nat', 'gateway_provisioned']);
    // Fabric names are unique per owner; fabric subnets may not overlap on one vnet_id.
    const otherOwner = await call<Obj>(env.client, 'createNetwork', {
      name: 'fab0', ...fab, vnet_id: 99, owner_uuids: [randomUUID()],
    });
    expect(otherOwner.name).toBe('fab0');
    const overlap = await callError(env.client, 'createNetwork', {
      name: 'fab1', ...fab, owner_uuids: [owner], subnet: '192.168.77.0/25', provision_start_ip: '192.168.77.5', provision_end_ip: '192.168.77.100',
    });
    expect(overlap.body?.errors).toEqual([
      { field: 'subnet', code: 'UsedBy', type: 'network', id: created.uuid, message: 'subnet overlaps with another network' },
    ]);
    const fabrics = await call<Obj[]>(env.client, 'listNetworks', { fabric: true, name: 'fab0' });
    expect(fabrics.map((n) => n.uuid).sort()).toEqual([created.uuid, otherOwner.uuid].sort());
    expect(await call<Obj[]>(env.client, 'listNetworks', { name: 'fab0' })).toEqual([]);
    expect((await call<Obj[]>(env.client, 'listNetworks', { fabric: false })).some((n) => n.fabric)).toBe(false);

    const fixed = await callError(env.client, 'updateNetwork', created.uuid, { gateway: '192.168.77.6', internet_nat: true });
    expect(fixed.body?.errors).toEqual([
      { field: 'gateway', code: 'InvalidParameter', message: 'Network updates for this field are not supported on fabrics' },
      { field: 'internet_nat', code: 'InvalidParameter', message: 'Network updates for this field are not supported' },
    ]);

    const alloc = await callError(env.client, 'createNetwork', { name: 'auto', vlan_id: 0, nic_tag: 'external', subnet_alloc: true });
    expect(alloc.body?.errors).toEqual([
      { field: 'subnet_auto_alloc', code: 'InvalidParameter', message: 'Subnet allocation is not enabled on this instance' },
    ]);
    const prefix = await callError(env.client, 'createNetwork', { name: 'auto', vlan_id: 0, nic_tag: 'external', subnet_prefix: 24 });
    expect(prefix.body?.errors).toEqual([
      { field: 'provision_end_ip', code: 'MissingParameter', message: 'Missing parameter' },
      { field: 'provision_start_ip', code: 'MissingParameter', message: 'Missing parameter' },
      { field: 'subnet', code: 'MissingParameter', message: 'Missing parameter' },
      { field: 'subnet_prefix', code: 'InvalidParameter', message: 'Auto allocation parameter not allowed' },
    ]);
    // The range check fails first, so the MTU check (the next one) is not reported.
    const first = await callError(env.client, 'createNetwork', {
      name: 'mtu', vlan_id: 0, nic_tag: 'external', subnet: '10.200.0.0/24', mtu: 9000,
      provision_start_ip: '10.200.0.50', provision_end_ip: '10.200.0.10',
    });
    expect(first.body?.errors?.map((e: Obj) => e.field)).toEqual(['provision_end_ip', 'provision_start_ip']);
  });

  it("names a non-UUID uuid filter as restify-warden does, and answers fabric routes with NAPI's 428", async () => {
    const bad = await callError(env.client, 'listNetworks', { uuid: 'badcafe' });
    expect(bad.body).toEqual({
      code: 'InvalidParameters',
      message: 'Invalid parameters',
      errors: [{ field: 'Invalid UUID', code: 'InvalidParameter', message: 'Invalid parameters' }],
    });
    const fabric = await http(`${env.url}/fabrics/${owner}/vlans`);
    expect(fabric.status).toBe(428);
    // sdc-napi lib/endpoints/fabrics/common.js: restify 4's PreconditionRequiredError.
    expect(fabric.body).toEqual({ code: 'PreconditionRequiredError', message: 'overlay networking is not enabled' });
  });

  it('sizes HEAD answers as a GET would be (restify 4)', async () => {
    const get = await fetch(`${env.url}/networks/${net.uuid}`);
    const head = await fetch(`${env.url}/networks/${net.uuid}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String((await get.text()).length));
    expect(head.headers.get('content-type')).toBe('application/json');
    expect((await fetch(`${env.url}/ping`, { method: 'HEAD' })).status).toBe(200);
  });
});
