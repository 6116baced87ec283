/**
 * vmadm create: defaults, NIC normalisation, disks for hardware VMs, state from autoboot,
 * the file on disk, and refusals (existing uuid, unknown keys, wrong brand, bad values).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import { newUuid } from '../../src/common/uuid.js';
import { bhyvePayload, expectReject, makeFixture, osPayload, type Fixture, DC, PLATFORM } from './helpers.js';

let fx: Fixture;
beforeEach(async () => {
  fx = await makeFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

describe('create', () => {
  it('fills in vmadm defaults and the derived fields', async () => {
    const before = Date.now();
    const vm = await fx.store.create(osPayload({ ram: undefined, quota: undefined }));
    expect(vm.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(vm).toMatchObject({
      brand: 'joyent-minimal',
      autoboot: true,
      state: 'running',
      zone_state: 'running',
      cpu_shares: 100,
      max_lwps: 2000,
      zfs_io_priority: 100,
      zpool: 'zones',
      zfs_filesystem: `zones/${vm.uuid}`,
      zonepath: `/zones/${vm.uuid}`,
      zonename: vm.uuid,
      limit_priv: 'default',
      quota: 10,
      max_physical_memory: 256,
      max_locked_memory: 256,
      max_swap: 256,
      server_uuid: fx.serverUuid,
      datacenter_name: DC,
      platform_buildstamp: PLATFORM,
    });
    expect(vm.ram).toBeUndefined(); // OS VMs keep memory in max_physical_memory only
    expect(Date.parse(vm.create_timestamp!)).toBeGreaterThanOrEqual(before - 1);
    expect(vm.boot_timestamp).toBe(vm.create_timestamp);
    expect(typeof vm.pid).toBe('number');
    expect(typeof vm.zoneid).toBe('number');
    expect(Date.parse(vm.last_modified!)).toBeGreaterThanOrEqual(Date.parse(vm.create_timestamp!));
  });

  it('derives memory limits from ram and keeps explicit ones', async () => {
    const a = await fx.store.create(osPayload({ ram: 2048 }));
    expect(a).toMatchObject({ max_physical_memory: 2048, max_locked_memory: 2048, max_swap: 2048 });
    const b = await fx.store.create(osPayload({ ram: undefined, max_physical_memory: 1024, max_swap: 4096, max_locked_memory: 4096 }));
    // locked is clamped to physical, swap kept
    expect(b).toMatchObject({ max_physical_memory: 1024, max_locked_memory: 1024, max_swap: 4096 });
  });

  it('uses the caller uuid and autoboot=false gives a stopped VM without boot data', async () => {
    const uuid = newUuid();
    const vm = await fx.store.create(osPayload({ uuid, autoboot: false }));
    expect(vm.uuid).toBe(uuid);
    expect(vm.state).toBe('stopped');
    expect(vm.zone_state).toBe('stopped');
    expect(vm.boot_timestamp).toBeUndefined();
    expect(vm.pid).toBeUndefined();
    expect(vm.zoneid).toBeUndefined();
  });

  it('writes pretty JSON with a trailing newline and no derived fields', async () => {
    const vm = await fx.store.create(osPayload());
    const text = await fsp.readFile(fx.fileOf(vm.uuid), 'utf8');
    expect(text.endsWith('}\n')).toBe(true);
    expect(text).toBe(`${JSON.stringify(JSON.parse(text), null, 2)}\n`);
    const stored = JSON.parse(text) as Record<string, unknown>;
    for (const k of ['last_modified', 'zonename', 'pid', 'zoneid', 'server_uuid', 'datacenter_name', 'platform_buildstamp', 'zone_state']) {
      expect(stored, k).not.toHaveProperty(k);
    }
    expect(stored.boot_timestamp).toBe(vm.boot_timestamp);
    // last_modified is the file's mtime
    const st = await fsp.stat(fx.fileOf(vm.uuid));
    expect(st.mtime.toISOString()).toBe(vm.last_modified);
  });

  it('normalises NICs: ips from ip+netmask, gateways, MAC generated, interface names, one primary', async () => {
    const vm = await fx.store.create(
      osPayload({
        nics: [
          { ip: '10.1.1.5', netmask: '255.255.0.0', nic_tag: 'admin', allow_ip_spoofing: false },
          { ips: ['172.16.0.9/24'], gateways: ['172.16.0.1'], nic_tag: 'internal', mac: '2:8:20:A:B:C' },
        ],
      }),
    );
    const [n0, n1] = vm.nics!;
    expect(n0).toMatchObject({ ip: '10.1.1.5', ips: ['10.1.1.5/16'], interface: 'net0', primary: true });
    expect(n0!.mac).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
    expect(parseInt(n0!.mac.slice(0, 2), 16) & 0x03).toBe(0x02); // locally administered, unicast
    expect(n0).not.toHaveProperty('allow_ip_spoofing'); // false flags are dropped
    expect(n1).toMatchObject({ ip: '172.16.0.9', gateway: '172.16.0.1', mac: '02:08:20:0a:0b:0c', interface: 'net1' });
    expect(n1).not.toHaveProperty('primary');
  });

  it('generates distinct MACs', async () => {
    const vm = await fx.store.create(osPayload({ nics: Array.from({ length: 8 }, () => ({ nic_tag: 'admin', ip: 'dhcp' })) }));
    expect(new Set(vm.nics!.map((n) => n.mac)).size).toBe(8);
  });

  it('refuses NIC keys vmadm does not know and two primaries', async () => {
    const e1 = await expectReject(fx.store.create(osPayload({ nics: [{ nic_tag: 'admin', belongs_to_uuid: 'x' }] })));
    expect(e1.message).toContain('nics.0.belongs_to_uuid');
    const e2 = await expectReject(
      fx.store.create(osPayload({ nics: [{ nic_tag: 'a', primary: true }, { nic_tag: 'b', primary: true }] })),
    );
    expect(e2.message).toContain('nics');
    const e3 = await expectReject(fx.store.create(osPayload({ nics: [{ ip: '10.0.0.1', nic_tag: 'a' }] })));
    expect(e3.message).toContain('nics.0.netmask');
  });

  it('builds bhyve disks with paths, defaults and image size, plus HVM memory overhead', async () => {
    const vm = await fx.store.create(bhyvePayload());
    expect(vm.ram).toBe(1024);
    expect(vm.max_physical_memory).toBe(1024 + 1280);
    expect(vm.quota).toBe(1);
    expect(vm.vcpus).toBe(2);
    expect(vm.disks).toEqual([
      expect.objectContaining({
        path: `/dev/zvol/rdsk/zones/${vm.uuid}/disk0`,
        zfs_filesystem: `zones/${vm.uuid}/disk0`,
        image_uuid: '462d1d03-8457-e134-a408-cf9ea2b9be96',
        size: 10240,
        boot: true,
        media: 'disk',
        model: 'virtio',
      }),
      expect.objectContaining({ path: `/dev/zvol/rdsk/zones/${vm.uuid}/disk1`, size: 20480, boot: false, refreservation: 20480 }),
    ]);
  });

  it('builds kvm disk paths next to the zone dataset', async () => {
    const vm = await fx.store.create(bhyvePayload({ brand: 'kvm', disk_driver: 'ide' }));
    expect(vm.disks![0]).toMatchObject({ path: `/dev/zvol/rdsk/zones/${vm.uuid}-disk0`, model: 'ide' });
  });

  it('accepts the `{}` cn-agent sends for "no NICs"', async () => {
    const vm = await fx.store.create(osPayload({ nics: {} }));
    expect(vm.nics).toEqual([]);
  });

  it('refuses an existing uuid, also when only the file exists', async () => {
    const vm = await fx.store.create(osPayload());
    const e = await expectReject(fx.store.create(osPayload({ uuid: vm.uuid })));
    expect(e).toMatchObject({ code: 'VmAlreadyExists', statusCode: 409 });
    const handAdded = newUuid();
    await fsp.writeFile(fx.fileOf(handAdded), JSON.stringify({ uuid: handAdded, brand: 'joyent', state: 'stopped' }));
    const e2 = await expectReject(fx.store.create(osPayload({ uuid: handAdded })));
    expect(e2.code).toBe('VmAlreadyExists');
    expect(JSON.parse(await fsp.readFile(fx.fileOf(handAdded), 'utf8'))).toEqual({ uuid: handAdded, brand: 'joyent', state: 'stopped' });
  });

  it('refuses unknown keys, keys of other brands and bad values, naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ frobnicate: 1 }, 'frobnicate'],
      [{ vcpus: 2 }, 'vcpus'], // not for OS VMs
      [{ state: 'stopped' }, 'state'],
      [{ ram: 'lots' }, 'ram'],
      [{ autoboot: 'maybe' }, 'autoboot'],
      [{ uuid: 'not-a-uuid' }, 'uuid'],
      [{ brand: 'xen' }, 'brand'],
      [{ tags: 'x' }, 'tags'],
      [{ nics: 'x' }, 'nics'],
    ];
    for (const [extra, field] of cases) {
      const e = await expectReject(fx.store.create(osPayload(extra)));
      expect(e.code, field).toBe('ValidationFailed');
      expect(e.statusCode).toBe(409);
      expect(e.message, field).toContain(field);
      expect((e.errors as { field: string }[])[0]!.field).toContain(field);
    }
    expect(fx.store.size).toBe(0);
    expect(await fsp.readdir(fx.vmsDir)).toEqual([]);
  });

  it('requires disk sizes for bhyve', async () => {
    const e = await expectReject(fx.store.create(bhyvePayload({ disks: [{ boot: true }] })));
    expect(e.message).toContain('disks.0.size');
  });

  it('accepts digit strings for integers like vmadm', async () => {
    const vm = await fx.store.create(osPayload({ ram: '1024', cpu_cap: '200' }));
    expect(vm.max_physical_memory).toBe(1024);
    expect(vm.cpu_cap).toBe(200);
  });
});
