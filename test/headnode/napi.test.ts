/**
 * The dev NAPI, driven with sdc-clients' NAPI class (real Triton client code) and raw HTTP
 * where the client has no method: a fresh DC's tags and networks, nic tags, NIC
 * provisioning and address allocation, validation bodies, ETag / If-Match, list filters
 * and paging, and persistence across a restart.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, callError } from './helpers/sdc-clients.js';
import { callRes, http, startNapi, type NapiEnv } from './helpers/napi-env.js';

const ADMIN = '930896af-bf8c-48d4-885c-6573a94b1853';

function ipNum(ip: string): number {
  return ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);
}

function zoneNic(owner: string, vm: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { belongs_to_type: 'zone', belongs_to_uuid: vm, owner_uuid: owner, ...extra };
}

/** A NIC on `admin` for any owner: the admin network is the admin user's, so tests about
 * other things than ownership skip NAPI's owner check, as its `check_owner` allows. */
function adminNic(owner: string, vm: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return zoneNic(owner, vm, { check_owner: false, ...extra });
}

describe('dev NAPI', () => {
  let env: NapiEnv;

  beforeAll(async () => {
    env = await startNapi();
  });

  afterAll(async () => {
    await env?.close();
  });

  it('comes up with the admin and external nic tags and networks of a fresh DC', async () => {
    const tags = await call(env.client, 'listNicTags');
    const byName = new Map(tags.map((t: { name: string }) => [t.name, t]));
    for (const name of ['admin', 'external']) {
      expect(byName.get(name)).toMatchObject({ name, mtu: 1500 });
      expect((byName.get(name) as { uuid: string }).uuid).toMatch(/^[0-9a-f-]{36}$/);
    }

    const admins = await call(env.client, 'listNetworks', { name: 'admin' });
    expect(admins).toHaveLength(1);
    const admin = admins[0];
    expect(admin).toMatchObject({ name: 'admin', nic_tag: 'admin', vlan_id: 0, mtu: 1500, family: 'ipv4' });
    for (const k of ['subnet', 'netmask', 'gateway', 'provision_start_ip', 'provision_end_ip']) expect(typeof admin[k]).toBe('string');
    expect(Array.isArray(admin.resolvers) && admin.resolvers.length > 0).toBe(true);
    const [base, bits] = admin.subnet.split('/');
    const size = 2 ** (32 - Number(bits));
    const inSubnet = (ip: string) => ipNum(ip) >= ipNum(base) && ipNum(ip) < ipNum(base) + size;
    expect(inSubnet(admin.gateway) && inSubnet(admin.provision_start_ip) && inSubnet(admin.provision_end_ip)).toBe(true);
    expect(ipNum(admin.provision_start_ip)).toBeLessThan(ipNum(admin.provision_end_ip));

    // `admin` resolves by name as well as by uuid (booter's special case).
    expect(await call(env.client, 'getNetwork', 'admin')).toEqual(admin);
    expect(await call(env.client, 'getNetwork', admin.uuid)).toEqual(admin);

    const external = await call(env.client, 'listNetworks', { nic_tag: 'external' });
    expect(external.map((n: { name: string }) => n.name)).toEqual(['external']);
    expect(external[0].vlan_id).toBe(0);
  });

  it('keeps the admin network for the admin user, as a fresh DC seeds it (node-sdc-clients "get unprovisionable network")', async () => {
    const admin = await call(env.client, 'getNetwork', 'admin');
    expect(admin.owner_uuids).toEqual([ADMIN]);
    const refused = await callError(env.client, 'getNetwork', admin.uuid, { params: { provisionable_by: randomUUID() } });
    expect(refused.statusCode).toBe(403);
    expect(refused.body).toEqual({ code: 'NotAuthorized', message: 'owner cannot provision on network' });
    expect(await call(env.client, 'getNetwork', admin.uuid, { params: { provisionable_by: ADMIN } })).toMatchObject({ uuid: admin.uuid });
    // The external network stays open to every owner.
    const [external] = await call(env.client, 'listNetworks', { name: 'external' });
    expect(external.owner_uuids).toBeUndefined();
    expect(await call(env.client, 'getNetwork', external.uuid, { params: { provisionable_by: randomUUID() } })).toMatchObject({ name: 'external' });
  });

  it('creates nic tags and refuses duplicates the way CNAPI expects (422 Duplicate on name)', async () => {
    const created = await call(env.client, 'createNicTag', 'mc_tag1', { mtu: 9000 });
    expect(created).toMatchObject({ name: 'mc_tag1', mtu: 9000 });
    expect(await call(env.client, 'getNicTag', 'mc_tag1')).toEqual(created);

    const dup = await callError(env.client, 'createNicTag', 'mc_tag1');
    expect(dup.statusCode).toBe(422);
    expect(dup.body).toMatchObject({ code: 'InvalidParameters', errors: [{ field: 'name', code: 'Duplicate' }] });

    const badName = await callError(env.client, 'createNicTag', 'bad-name');
    expect(badName.statusCode).toBe(422);
    expect(badName.body?.errors?.[0]).toMatchObject({ field: 'name', code: 'InvalidParameter' });

    const badMtu = await callError(env.client, 'createNicTag', 'mc_tag2', { mtu: 100 });
    expect(badMtu.body?.errors?.[0]).toMatchObject({ field: 'mtu', code: 'InvalidParameter' });

    const missing = await callError(env.client, 'getNicTag', 'no_such_tag');
    expect(missing.statusCode).toBe(404);
    expect(missing.body?.code).toBe('ResourceNotFound');

    const all = (await call(env.client, 'listNicTags')).map((t: { name: string }) => t.name);
    expect(all).toEqual([...all].sort());
    const page = await call(env.client, 'listNicTags', { limit: 1, offset: 1 });
    expect(page.map((t: { name: string }) => t.name)).toEqual([all[1]]);
  });

  it('updates nic tags within NAPI’s rules', async () => {
    await call(env.client, 'createNicTag', 'mc_rename_me');
    const renamed = await call(env.client, 'updateNicTag', 'mc_rename_me', { name: 'mc_renamed', mtu: 1600 });
    expect(renamed).toMatchObject({ name: 'mc_renamed', mtu: 1600 });
    expect((await callError(env.client, 'getNicTag', 'mc_rename_me')).statusCode).toBe(404);

    const admin = await callError(env.client, 'updateNicTag', 'admin', { mtu: 9000 });
    expect(admin.body?.errors?.[0]).toMatchObject({ field: 'name', message: 'admin nic tag cannot be updated' });
    const external = await callError(env.client, 'updateNicTag', 'external', { name: 'outside' });
    expect(external.body?.errors?.map((e) => e.code)).toContain('UsedBy');
    expect((await call(env.client, 'getNicTag', 'external')).name).toBe('external');

    await call(env.client, 'deleteNicTag', 'mc_renamed');
    expect((await callError(env.client, 'getNicTag', 'mc_renamed')).statusCode).toBe(404);
  });

  it('provisions NICs on admin with distinct addresses from its provision range', async () => {
    const admin = await call(env.client, 'getNetwork', 'admin');
    const owner = randomUUID();
    const nics = await Promise.all(
      Array.from({ length: 25 }, () => call(env.client, 'provisionNic', 'admin', adminNic(owner, randomUUID()))),
    );
    const ips = nics.map((n) => n.ip as string);
    expect(new Set(ips).size).toBe(ips.length);
    expect(new Set(nics.map((n) => n.mac)).size).toBe(nics.length);
    for (const n of nics) {
      expect(ipNum(n.ip)).toBeGreaterThanOrEqual(ipNum(admin.provision_start_ip));
      expect(ipNum(n.ip)).toBeLessThanOrEqual(ipNum(admin.provision_end_ip));
      expect(n.ip).not.toBe(admin.gateway);
      expect(n).toMatchObject({
        network_uuid: admin.uuid,
        nic_tag: 'admin',
        vlan_id: 0,
        netmask: admin.netmask,
        gateway: admin.gateway,
        resolvers: admin.resolvers,
        mtu: admin.mtu,
        state: 'provisioning',
        primary: false,
      });
      expect(n.mac).toMatch(/^90:b8:d0(:[0-9a-f]{2}){3}$/);
    }
    // Each address is recorded as held by its NIC's owner.
    const rec = await call(env.client, 'getIP', admin.uuid, nics[0].ip);
    expect(rec).toMatchObject({ ip: nics[0].ip, belongs_to_uuid: nics[0].belongs_to_uuid, belongs_to_type: 'zone', free: false });
    expect(await call(env.client, 'listNics', { owner_uuid: owner })).toHaveLength(25);
  });

  it('answers 507 SubnetFull when a network has no address left, and reuses a freed one', async () => {
    const net = await call(env.client, 'createNetwork', {
      name: `tiny-${randomUUID().slice(0, 8)}`,
      nic_tag: 'external',
      vlan_id: 0,
      subnet: '192.168.77.0/29',
      provision_start_ip: '192.168.77.2',
      provision_end_ip: '192.168.77.4',
      gateway: '192.168.77.1',
    });
    const owner = randomUUID();
    const got = [];
    for (let i = 0; i < 3; i++) got.push(await call(env.client, 'provisionNic', net.uuid, zoneNic(owner, randomUUID())));
    expect(got.map((n) => n.ip).sort()).toEqual(['192.168.77.2', '192.168.77.3', '192.168.77.4']);

    const full = await callError(env.client, 'provisionNic', net.uuid, zoneNic(owner, randomUUID()));
    expect(full.statusCode).toBe(507);
    expect(full.body).toMatchObject({ code: 'SubnetFull', message: 'no more free IPs', network_uuid: net.uuid });

    await call(env.client, 'deleteNic', got[1].mac);
    const again = await call(env.client, 'provisionNic', net.uuid, zoneNic(owner, randomUUID()));
    expect(again.ip).toBe(got[1].ip);
  });

  it('does not hand a just-freed address out again while never-used ones remain', async () => {
    const owner = randomUUID();
    const first = await call(env.client, 'provisionNic', 'admin', adminNic(owner, randomUUID()));
    await call(env.client, 'deleteNic', first.mac);
    const second = await call(env.client, 'provisionNic', 'admin', adminNic(owner, randomUUID()));
    expect(second.ip).not.toBe(first.ip);
    expect((await call(env.client, 'getIP', first.network_uuid, first.ip)).free).toBe(true);
  });

  it('validates POST /nics like NAPI, naming every offending field', async () => {
    const missing = await callError(env.client, 'createNic', '90:b8:d0:00:00:01', {});
    expect(missing.statusCode).toBe(422);
    expect(missing.body?.message).toBe('Missing parameters');
    expect(missing.body?.errors?.map((e) => [e.field, e.code])).toEqual([
      ['belongs_to_type', 'MissingParameter'],
      ['belongs_to_uuid', 'MissingParameter'],
      ['owner_uuid', 'MissingParameter'],
    ]);

    const bad = await callError(env.client, 'createNic', 'not-a-mac', {
      belongs_to_type: 'vm',
      belongs_to_uuid: 'nope',
      owner_uuid: randomUUID(),
      state: 'on',
      nic_tags_provided: ['admin', 'no_such_tag'],
    });
    expect(bad.statusCode).toBe(422);
    expect(bad.body?.code).toBe('InvalidParameters');
    expect(bad.body?.message).toBe('Invalid parameters');
    const fields = Object.fromEntries((bad.body?.errors ?? []).map((e) => [e.field, e]));
    expect(Object.keys(fields)).toEqual(['belongs_to_type', 'belongs_to_uuid', 'mac', 'nic_tags_provided', 'state']);
    expect(fields.belongs_to_type?.message).toBe('must be one of: "other", "server", "zone"');
    expect(fields.belongs_to_uuid?.message).toBe('invalid UUID');
    expect(fields.nic_tags_provided).toMatchObject({ message: 'nic tag does not exist', invalid: ['no_such_tag'] });

    const owner = randomUUID();
    const noNet = await callError(env.client, 'provisionNic', randomUUID(), zoneNic(owner, randomUUID()));
    expect(noNet.body?.errors?.[0]).toMatchObject({ field: 'network_uuid', message: 'network does not exist' });

    const admin = await call(env.client, 'getNetwork', 'admin');
    const outside = await callError(env.client, 'createNic', '90:b8:d0:00:00:02', adminNic(owner, randomUUID(), { network_uuid: admin.uuid, ip: '10.1.2.3' }));
    expect(outside.body?.errors?.[0]).toMatchObject({ field: 'ip', code: 'InvalidParameter' });

    const holder = await call(env.client, 'provisionNic', 'admin', adminNic(owner, randomUUID()));
    const taken = await callError(env.client, 'createNic', '90:b8:d0:00:00:03', adminNic(owner, randomUUID(), { network_uuid: admin.uuid, ip: holder.ip }));
    expect(taken.statusCode).toBe(422);
    expect(taken.body?.errors?.[0]).toMatchObject({ field: 'ip', code: 'UsedBy', type: 'zone', id: holder.belongs_to_uuid });

    const dupMac = await callError(env.client, 'createNic', holder.mac, zoneNic(owner, randomUUID()));
    expect(dupMac.body?.errors?.[0]).toMatchObject({ field: 'mac', code: 'Duplicate' });

    const ipOnly = await callError(env.client, 'createNic', '90:b8:d0:00:00:04', zoneNic(owner, randomUUID(), { ip: '10.99.99.250' }));
    expect(ipOnly.body?.errors?.map((e) => [e.field, e.code])).toEqual([
      ['nic_tag', 'MissingParameter'],
      ['vlan_id', 'MissingParameter'],
    ]);

    // Nothing of the refused requests was stored.
    for (const m of ['90b8d0000001', '90b8d0000002', '90b8d0000003', '90b8d0000004']) {
      expect((await callError(env.client, 'getNic', m)).statusCode).toBe(404);
    }
  });

  it('places a NIC given ip, nic_tag and vlan_id on the network holding that address (server NICs)', async () => {
    const server = randomUUID();
    const mac = '00:10:fe:aa:bb:01';
    const nic = await call(env.client, 'createNic', mac, {
      belongs_to_type: 'server',
      belongs_to_uuid: server,
      owner_uuid: ADMIN,
      ip: '10.99.99.201',
      nic_tag: 'admin',
      vlan_id: 0,
      nic_tags_provided: ['admin'],
      state: 'running',
      check_owner: false,
    });
    const admin = await call(env.client, 'getNetwork', 'admin');
    expect(nic).toMatchObject({ mac, ip: '10.99.99.201', network_uuid: admin.uuid, netmask: admin.netmask, nic_tags_provided: ['admin'], state: 'running' });
  });

  it('serves /nics/:mac in colon-free, colon and dash forms with an Etag, and honours If-Match', async () => {
    const owner = randomUUID();
    const created = await callRes(env.client, 'provisionNic', 'admin', adminNic(owner, randomUUID()));
    const mac = created.body.mac as string;
    const etag = created.headers.etag as string;
    expect(etag).toMatch(/^\w+$/);

    for (const form of [mac.replace(/:/g, ''), mac, mac.replace(/:/g, '-')]) {
      const r = await http(`${env.url}/nics/${form}`);
      expect(r.status).toBe(200);
      expect(r.body.mac).toBe(mac);
      expect(r.headers.get('etag')).toBe(etag);
    }
    expect((await http(`${env.url}/nics/not-a-mac`)).body.errors[0]).toMatchObject({ field: 'mac', message: 'invalid MAC address' });
    expect((await http(`${env.url}/nics/${mac.replace(/:/g, '')}`, { headers: { 'if-none-match': etag } })).status).toBe(304);

    const updated = await callRes(env.client, 'updateNic', mac, { state: 'running', check_owner: false });
    expect(updated.body.state).toBe('running');
    const etag2 = updated.headers.etag as string;
    expect(etag2).not.toBe(etag);

    const stale = await callError(env.client, 'updateNic', mac, { state: 'stopped' }, { headers: { 'If-Match': etag } });
    expect(stale.statusCode).toBe(412);
    expect(stale.body?.code).toBe('PreconditionFailed');
    expect((await call(env.client, 'getNic', mac)).state).toBe('running');

    const staleDel = await callError(env.client, 'deleteNic', mac, {}, { headers: { 'If-Match': etag } });
    expect(staleDel.statusCode).toBe(412);
    expect((await call(env.client, 'getNic', mac)).mac).toBe(mac);

    const del = await http(`${env.url}/nics/${mac.replace(/:/g, '')}`, { method: 'DELETE', headers: { 'if-match': etag2 } });
    expect(del.status).toBe(204);
    const gone = await callError(env.client, 'getNic', mac);
    expect(gone.statusCode).toBe(404);
    expect(gone.body).toMatchObject({ code: 'ResourceNotFound', message: 'nic not found' });
  });

  it('updates ownership (claiming a booter NIC) and moves its address with it', async () => {
    const admin = await call(env.client, 'getNetwork', 'admin');
    const booter = await call(env.client, 'provisionNic', 'admin', {
      belongs_to_type: 'other',
      belongs_to_uuid: ADMIN,
      owner_uuid: ADMIN,
      nic_tags_provided: ['admin'],
    });
    const server = randomUUID();
    const claimed = await call(env.client, 'updateNic', booter.mac, {
      belongs_to_type: 'server',
      belongs_to_uuid: server,
      owner_uuid: ADMIN,
      state: 'running',
      check_owner: false,
    });
    expect(claimed).toMatchObject({ ip: booter.ip, belongs_to_type: 'server', belongs_to_uuid: server, nic_tags_provided: ['admin'] });
    expect(await call(env.client, 'getIP', admin.uuid, booter.ip)).toMatchObject({ belongs_to_uuid: server, belongs_to_type: 'server' });

    const badUpdate = await callError(env.client, 'updateNic', booter.mac, { state: 'gone', belongs_to_type: 'vm' });
    expect(badUpdate.body?.errors?.map((e) => e.field)).toEqual(['belongs_to_type', 'state']);
  });

  it('moves a NIC to a named address or network on update, freeing the old address', async () => {
    const admin = await call(env.client, 'getNetwork', 'admin');
    const owner = randomUUID();
    const vm = randomUUID();
    const nic = await call(env.client, 'provisionNic', 'admin', adminNic(owner, vm));

    const moved = await call(env.client, 'updateNic', nic.mac, { ip: '10.99.250.1' });
    expect(moved).toMatchObject({ ip: '10.99.250.1', network_uuid: admin.uuid });
    expect((await call(env.client, 'getIP', admin.uuid, nic.ip)).free).toBe(true);
    expect(await call(env.client, 'getIP', admin.uuid, '10.99.250.1')).toMatchObject({ belongs_to_uuid: vm, free: false });

    const other = await call(env.client, 'provisionNic', 'admin', adminNic(owner, randomUUID()));
    const clash = await callError(env.client, 'updateNic', nic.mac, { ip: other.ip });
    expect(clash.statusCode).toBe(422);
    expect(clash.body?.errors?.[0]).toMatchObject({ field: 'ip', code: 'UsedBy', id: other.belongs_to_uuid });

    // A NIC created without an address gets one when it is put on a network.
    const bare = await call(env.client, 'createNic', '90:b8:d0:ee:00:01', zoneNic(owner, randomUUID()));
    expect(bare.ip).toBeUndefined();
    const [external] = await call(env.client, 'listNetworks', { name: 'external' });
    const placed = await call(env.client, 'updateNic', bare.mac, { network_uuid: external.uuid });
    expect(placed).toMatchObject({ network_uuid: external.uuid, nic_tag: 'external', netmask: external.netmask });
    expect(typeof placed.ip).toBe('string');
  });

  it('enforces a network’s owner_uuids unless check_owner is false', async () => {
    const owner = randomUUID();
    const net = await call(env.client, 'createNetwork', {
      name: `owned-${randomUUID().slice(0, 8)}`,
      nic_tag: 'external',
      vlan_id: 7,
      subnet: '192.168.88.0/24',
      provision_start_ip: '192.168.88.10',
      provision_end_ip: '192.168.88.20',
      owner_uuids: [owner],
    });
    expect(net.owner_uuids).toEqual([owner]);
    const stranger = randomUUID();
    const refused = await callError(env.client, 'provisionNic', net.uuid, zoneNic(stranger, randomUUID()));
    expect(refused.body?.errors?.[0]).toMatchObject({ field: 'owner_uuid', message: 'network owner_uuids do not match' });
    expect(await call(env.client, 'provisionNic', net.uuid, zoneNic(owner, randomUUID()))).toMatchObject({ network_uuid: net.uuid, vlan_id: 7 });
    expect(await call(env.client, 'provisionNic', net.uuid, zoneNic(stranger, randomUUID(), { check_owner: false }))).toMatchObject({ network_uuid: net.uuid });
    expect((await call(env.client, 'listNetworks', { provisionable_by: stranger })).map((n: { uuid: string }) => n.uuid)).not.toContain(net.uuid);
    expect((await call(env.client, 'listNetworks', { provisionable_by: owner })).map((n: { uuid: string }) => n.uuid)).toContain(net.uuid);
  });

  it('keeps one primary NIC per owner', async () => {
    const owner = randomUUID();
    const vm = randomUUID();
    const a = await call(env.client, 'provisionNic', 'admin', adminNic(owner, vm, { primary: true }));
    const [external] = await call(env.client, 'listNetworks', { name: 'external' });
    // Only `admin` resolves by name; other networks go by uuid.
    expect((await callError(env.client, 'provisionNic', 'external', zoneNic(owner, vm))).body?.errors?.[0]).toMatchObject({ field: 'network_uuid', message: 'invalid UUID' });
    const b = await call(env.client, 'provisionNic', external.uuid, zoneNic(owner, vm, { primary: true }));
    expect(b.primary).toBe(true);
    expect((await call(env.client, 'getNic', a.mac)).primary).toBe(false);
  });

  it('lists NICs with filters and paging in MAC order', async () => {
    const ownerA = randomUUID();
    const ownerB = randomUUID();
    const vm1 = randomUUID();
    const vm2 = randomUUID();
    const cn = randomUUID();
    const external = await call(env.client, 'getNetwork', (await call(env.client, 'listNetworks', { name: 'external' }))[0].uuid);
    const made = [
      await call(env.client, 'provisionNic', 'admin', adminNic(ownerA, vm1, { cn_uuid: cn, state: 'running' })),
      await call(env.client, 'provisionNic', external.uuid, zoneNic(ownerA, vm1, { cn_uuid: cn })),
      await call(env.client, 'provisionNic', 'admin', adminNic(ownerA, vm2, { state: 'stopped' })),
      await call(env.client, 'provisionNic', 'admin', adminNic(ownerB, randomUUID())),
    ];
    const macs = (nics: { mac: string }[]) => nics.map((n) => n.mac).sort();

    expect(macs(await call(env.client, 'listNics', { belongs_to_uuid: vm1 }))).toEqual(macs(made.slice(0, 2)));
    expect(macs(await call(env.client, 'listNics', { belongs_to_uuid: [vm1, vm2] }))).toEqual(macs(made.slice(0, 3)));
    expect(macs(await call(env.client, 'listNics', { owner_uuid: ownerA }))).toEqual(macs(made.slice(0, 3)));
    expect(macs(await call(env.client, 'listNics', { cn_uuid: cn }))).toEqual(macs(made.slice(0, 2)));
    expect(macs(await call(env.client, 'listNics', { owner_uuid: ownerA, network_uuid: external.uuid }))).toEqual([made[1].mac]);
    expect(macs(await call(env.client, 'listNics', { owner_uuid: ownerA, nic_tag: 'admin', state: 'stopped' }))).toEqual([made[2].mac]);
    expect(macs(await call(env.client, 'listNics', { owner_uuid: ownerA, belongs_to_type: 'server' }))).toEqual([]);

    const all = await call(env.client, 'listNics', { owner_uuid: [ownerA, ownerB] });
    expect(all.map((n: { mac: string }) => n.mac)).toEqual(macs(made));
    const p1 = await call(env.client, 'listNics', { owner_uuid: [ownerA, ownerB], limit: 2 });
    const p2 = await call(env.client, 'listNics', { owner_uuid: [ownerA, ownerB], limit: 2, offset: 2 });
    expect([...p1, ...p2].map((n: { mac: string }) => n.mac)).toEqual(all.map((n: { mac: string }) => n.mac));

    const unknown = await callError(env.client, 'listNics', { bogus: 1 });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.body?.errors?.[0]).toMatchObject({ code: 'UnknownParameters', field: ['bogus'] });
    const badLimit = await callError(env.client, 'listNics', { limit: 0 });
    expect(badLimit.body?.errors?.[0]).toMatchObject({ field: 'limit', code: 'InvalidParameter' });
  });

  it('refuses to delete a nic tag a network uses, or a network that has NICs', async () => {
    const tagInUse = await callError(env.client, 'deleteNicTag', 'external');
    expect(tagInUse.statusCode).toBe(422);
    expect(tagInUse.body?.errors?.[0]).toMatchObject({ field: 'nic_tag', code: 'UsedBy', type: 'network' });

    const admin = await call(env.client, 'getNetwork', 'admin');
    const netInUse = await callError(env.client, 'deleteNetwork', admin.uuid);
    expect(netInUse.statusCode).toBe(422);
    expect(netInUse.body?.code).toBe('InUse');
    expect(await call(env.client, 'getNetwork', admin.uuid)).toMatchObject({ uuid: admin.uuid });
  });

  it('lists a network’s IP records: the admin-reserved gateway and held addresses', async () => {
    const admin = await call(env.client, 'getNetwork', 'admin');
    const ips = await call(env.client, 'listIPs', admin.uuid);
    const gw = ips.find((r: { ip: string }) => r.ip === admin.gateway);
    expect(gw).toMatchObject({ reserved: true, free: false, belongs_to_type: 'other', belongs_to_uuid: ADMIN });
    expect(ips.map((r: { ip: string }) => ipNum(r.ip))).toEqual(ips.map((r: { ip: string }) => ipNum(r.ip)).sort((a: number, b: number) => a - b));
    const unused = await call(env.client, 'getIP', admin.uuid, '10.99.200.200');
    expect(unused).toMatchObject({ ip: '10.99.200.200', free: true, reserved: false });
    expect((await callError(env.client, 'getIP', admin.uuid, '10.98.0.1')).statusCode).toBe(404);
  });
});

describe('dev NAPI persistence', () => {
  it('keeps tags, networks, NICs, etags and address ownership across a restart', async () => {
    const env = await startNapi();
    try {
      await call(env.client, 'createNicTag', 'persist_tag');
      const net = await call(env.client, 'createNetwork', {
        name: 'persist-net',
        nic_tag: 'persist_tag',
        vlan_id: 42,
        subnet: '172.16.5.0/24',
        provision_start_ip: '172.16.5.10',
        provision_end_ip: '172.16.5.20',
        resolvers: ['172.16.5.1'],
      });
      const owner = randomUUID();
      const made = [];
      for (let i = 0; i < 3; i++) made.push(await callRes(env.client, 'provisionNic', net.uuid, zoneNic(owner, randomUUID())));

      await env.restart();

      expect(await call(env.client, 'getNicTag', 'persist_tag')).toMatchObject({ name: 'persist_tag' });
      expect(await call(env.client, 'getNetwork', net.uuid)).toEqual(net);
      for (const m of made) {
        const again = await callRes(env.client, 'getNic', m.body.mac);
        expect(again.body).toEqual(m.body);
        expect(again.headers.etag).toBe(m.headers.etag);
      }
      const next = await call(env.client, 'provisionNic', net.uuid, zoneNic(owner, randomUUID()));
      expect(made.map((m) => m.body.ip)).not.toContain(next.ip);
      // The fresh-DC seed ran once: still exactly one admin network.
      expect(await call(env.client, 'listNetworks', { name: 'admin' })).toHaveLength(1);
    } finally {
      await env.close();
    }
  });
});
