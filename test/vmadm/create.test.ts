/**
 * vmadm create: defaults, NIC normalisation, disks for hardware VMs, state from autoboot,
 * the file on disk, what a brand does not take (removed with a warning, as SmartOS VM.js
 * normalizePayload does), docker, and refusals (existing uuid, bad values).
 * Facts: smartos-live src/vm/node_modules/VM.js (applyZoneDefaults, fixPayloadMemory,
 * normalizePayload), proptable.js, vmload/index.js.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import { newUuid } from '../../src/common/uuid.js';
import { bhyvePayload, expectReject, makeFixture, osPayload, warningLog, type Fixture, DC, PLATFORM } from './helpers.js';

const ZERO_UUID = '00000000-0000-0000-0000-000000000000';

let fx: Fixture;
beforeEach(async () => {
  fx = await makeFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

describe('create', () => {
  it('fills in vmadm defaults and the derived fields', async () => {
    const noIds = await fx.store.create(osPayload({ owner_uuid: undefined }));
    expect(noIds).toMatchObject({ owner_uuid: ZERO_UUID, billing_id: ZERO_UUID });
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
    // VM.js applyZoneDefaults / fixPayloadMemory, and what vmload always adds.
    expect(vm).toMatchObject({
      dns_domain: 'local',
      tmpfs: 256,
      max_shm_memory: 256,
      max_msg_ids: 4096,
      max_sem_ids: 4096,
      max_shm_ids: 4096,
      hvm: false,
      resolvers: [],
      firewall_enabled: false,
      snapshots: [],
      zonedid: expect.any(Number),
    });
    expect(Date.parse(vm.create_timestamp!)).toBeGreaterThanOrEqual(before - 1);
    expect(vm.boot_timestamp).toBe(vm.create_timestamp);
    expect(typeof vm.pid).toBe('number');
    expect(typeof vm.zoneid).toBe('number');
    expect(Date.parse(vm.last_modified!)).toBeGreaterThanOrEqual(Date.parse(vm.create_timestamp!));
  });

  it('tmpfs follows max_physical_memory for zone brands (clamped to it); HVM VMs get none, nor dns_domain', async () => {
    expect(await fx.store.create(osPayload({ ram: 2048 }))).toMatchObject({ tmpfs: 2048, max_shm_memory: 2048 });
    expect(await fx.store.create(osPayload({ ram: 2048, tmpfs: 512 }))).toMatchObject({ tmpfs: 512 });
    expect(await fx.store.create(osPayload({ ram: 2048, tmpfs: 4096 }))).toMatchObject({ tmpfs: 2048 });
    expect(await fx.store.create(osPayload({ tmpfs: 0 }))).toMatchObject({ tmpfs: 0 });
    const hvm = await fx.store.create(bhyvePayload({ dns_domain: 'example.com' }));
    for (const k of ['tmpfs', 'dns_domain']) expect(hvm, k).not.toHaveProperty(k);
    expect(hvm).toMatchObject({ hvm: true, max_shm_memory: 1024 + 1280, max_msg_ids: 4096 });
  });

  it('shows v 1, routes {} and zfs_root_recsize 131072 for every brand, as vmload does; a given routes or recsize is kept', async () => {
    const made = [
      await fx.store.create(osPayload()),
      await fx.store.create(osPayload({ brand: 'joyent' })),
      await fx.store.create(osPayload({ brand: 'lx', kernel_version: '4.3.0' })),
      await fx.store.create(bhyvePayload()),
      await fx.store.create(bhyvePayload({ brand: 'kvm' })),
    ];
    for (const vm of made) expect(vm, vm.brand).toMatchObject({ v: 1, routes: {}, zfs_root_recsize: 131072 });
    // `v` is the zone's vm-version: vmadm sets it on create whatever the payload says.
    const given = await fx.store.create(osPayload({ v: 7, routes: { '10.1.0.0/16': '10.99.99.1' }, zfs_root_recsize: 8192 }));
    expect(given).toMatchObject({ v: 1, routes: { '10.1.0.0/16': '10.99.99.1' }, zfs_root_recsize: 8192 });
    const reopened = await fx.reopen();
    expect(reopened.get(made[3]!.uuid)).toMatchObject({ v: 1, routes: {}, zfs_root_recsize: 131072 });
  });

  it('hands out a distinct zonedid per VM, kept across reopen', async () => {
    const a = await fx.store.create(osPayload());
    const b = await fx.store.create(osPayload());
    expect(b.zonedid).not.toBe(a.zonedid);
    const store = await fx.reopen();
    expect(store.get(a.uuid)!.zonedid).toBe(a.zonedid);
    const c = await store.create(osPayload());
    expect([a.zonedid, b.zonedid]).not.toContain(c.zonedid);
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

  it('removes NIC keys the brand does not take, with a warning; refuses two primaries', async () => {
    const w = warningLog();
    const vm = await fx.store.create(
      osPayload({ nics: [{ nic_tag: 'admin', ip: 'dhcp', belongs_to_uuid: 'x', model: 'virtio' }] }),
      { log: w },
    );
    expect(vm.nics![0]).not.toHaveProperty('belongs_to_uuid');
    expect(vm.nics![0]).not.toHaveProperty('model'); // nics.*.model is for bhyve/kvm only
    expect(w.removed()).toEqual(['nics.*.belongs_to_uuid', 'nics.*.model']);
    const e2 = await expectReject(
      fx.store.create(osPayload({ nics: [{ nic_tag: 'a', primary: true }, { nic_tag: 'b', primary: true }] })),
    );
    expect(e2.message).toContain('nics');
    const e3 = await expectReject(fx.store.create(osPayload({ nics: [{ ip: '10.0.0.1', nic_tag: 'a' }] })));
    expect(e3.message).toContain('nics.0.netmask');
  });

  it('names lx NICs eth0, eth1 (the brand\'s interface prefix) and gives HVM NICs nic_driver as model', async () => {
    const lx = await fx.store.create(osPayload({ brand: 'lx', kernel_version: '4.3.0', nics: [{ nic_tag: 'a', ip: 'dhcp' }, { nic_tag: 'b', ip: 'dhcp' }] }));
    expect(lx.nics!.map((n) => n.interface)).toEqual(['eth0', 'eth1']);
    const hvm = await fx.store.create(bhyvePayload({ nic_driver: 'e1000' }));
    expect(hvm.nics![0]).toMatchObject({ model: 'e1000', interface: 'net0' });
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

  it('refuses bad values, naming the field, and writes nothing', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ ram: 'lots' }, 'ram'],
      [{ autoboot: 'maybe' }, 'autoboot'],
      [{ uuid: 'not-a-uuid' }, 'uuid'],
      [{ brand: 'xen' }, 'brand'],
      [{ tags: 'x' }, 'tags'],
      [{ nics: 'x' }, 'nics'],
      [{ filesystems: [{ source: '/a' }] }, 'filesystems.0.target'],
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

  it('removes, with one warning, unknown keys, read-only keys and other brands\' keys instead of refusing them', async () => {
    const w = warningLog();
    const vm = await fx.store.create(
      osPayload({ frobnicate: 1, vcpus: 2, state: 'stopped', zonepath: '/elsewhere', datasets: [], dataset_url: 'http://x' }),
      { log: w },
    );
    expect(w.removed().sort()).toEqual(['dataset_url', 'datasets', 'frobnicate', 'state', 'vcpus', 'zonepath']);
    expect(w.calls).toHaveLength(1);
    expect(vm.state).toBe('running');
    expect(vm.zonepath).toBe(`/zones/${vm.uuid}`);
    for (const k of ['frobnicate', 'vcpus', 'dataset_url', 'datasets']) expect(vm, k).not.toHaveProperty(k);
  });

  it('keeps every property the brand takes: docker fields, filesystems, fs_allowed, init_name, zfs data/root properties', async () => {
    const props = {
      brand: 'lx',
      kernel_version: '4.3.0',
      docker: true,
      filesystems: [{ source: '/zones/x/volumes/data', target: '/data', type: 'lofs', options: ['rw'] }],
      fs_allowed: 'ufs,pcfs',
      init_name: '/sbin/my-init',
      restart_init: true,
      zlog_max_size: 1048576,
      mdata_exec_timeout: 600,
      maintain_resolvers: true,
      zfs_data_compression: 'lz4',
      zfs_data_recsize: 131072,
      zfs_root_compression: 'lz4',
      zfs_root_recsize: 131072,
      zfs_filesystem_limit: 10,
      zfs_snapshot_limit: 10,
      internal_metadata: { 'docker:cmd': '["/bin/sh"]', 'docker:entrypoint': '[]' },
      archive_on_delete: true,
      package_name: 'sample-1G',
    };
    const vm = await fx.store.create(osPayload(props));
    expect(vm).toMatchObject({
      docker: true,
      filesystems: props.filesystems,
      fs_allowed: ['ufs', 'pcfs'],
      init_name: '/sbin/my-init',
      zlog_max_size: 1048576,
      maintain_resolvers: true,
      zfs_data_compression: 'lz4',
      zfs_data_recsize: 131072,
      zfs_root_compression: 'lz4',
      zfs_root_recsize: 131072,
      zfs_filesystem_limit: 10,
      zfs_snapshot_limit: 10,
      archive_on_delete: true,
      package_name: 'sample-1G',
      kernel_version: '4.3.0',
    });
    // mdata_exec_timeout configures the zone's mdata:execute service; vmadm get never shows it.
    expect(vm).not.toHaveProperty('mdata_exec_timeout');
    // A bhyve VM takes pci_devices (and add_pci_devices on create).
    const b = await fx.store.create(
      bhyvePayload({ pci_devices: [{ path: '/devices/pci@0,0/pci8086,6f08@3', pci_slot: '0:7:0' }], bootrom: 'uefi', com1: 'tty-a' }),
    );
    expect(b).toMatchObject({ pci_devices: [{ path: '/devices/pci@0,0/pci8086,6f08@3', pci_slot: '0:7:0' }], bootrom: 'uefi' });
  });

  it('docker: true sets what vmadm sets for docker VMs (namespace, restart_init, dockerinit, docker:id)', async () => {
    const lx = await fx.store.create(
      osPayload({ brand: 'lx', kernel_version: '4.3.0', docker: true, internal_metadata: { 'docker:cmd': '["sh"]' } }),
    );
    expect(lx).toMatchObject({
      docker: true,
      restart_init: false,
      init_name: '/native/usr/vm/sbin/dockerinit',
      internal_metadata_namespaces: ['docker'],
      internal_metadata: { 'docker:cmd': '["sh"]', 'docker:id': expect.stringMatching(/^[0-9a-f]{64}$/) },
    });
    expect((lx.internal_metadata!['docker:id'] as string).startsWith(lx.uuid.replace(/-/g, ''))).toBe(true);
    const jm = await fx.store.create(osPayload({ docker: true, restart_init: true, internal_metadata_namespaces: ['sdc'] }));
    expect(jm).toMatchObject({
      init_name: '/usr/vm/sbin/dockerinit',
      restart_init: false,
      internal_metadata_namespaces: ['sdc', 'docker'],
    });
    // A given docker:id and init_name are kept.
    const id = 'a'.repeat(64);
    const kept = await fx.store.create(osPayload({ docker: true, init_name: '/x', internal_metadata: { 'docker:id': id } }));
    expect(kept).toMatchObject({ init_name: '/x', internal_metadata: { 'docker:id': id } });
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
