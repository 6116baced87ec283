/**
 * vmadm update: every documented key, the memory rules, NIC, disk, filesystem and PCI
 * device edits, docker, keys a brand cannot update (removed with a warning, as SmartOS
 * VM.js normalizePayload does; image_uuid among them) and bad values (refused, the VM
 * untouched). Facts: smartos-live src/vm/node_modules/VM.js, proptable.js.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newUuid } from '../../src/common/uuid.js';
import type { Vm } from '../../src/vmadm/types.js';
import { bhyvePayload, expectReject, makeFixture, osPayload, recordEvents, warningLog, type Fixture } from './helpers.js';

let fx: Fixture;
let vm: Vm;
beforeEach(async () => {
  fx = await makeFixture();
  vm = await fx.store.create(
    osPayload({
      customer_metadata: { a: '1', b: '2' },
      internal_metadata: { 'sdc:x': 'y' },
      tags: { role: 'web', env: 'prod' },
      routes: { '10.1.0.0/16': '10.99.99.1' },
    }),
  );
});
afterEach(async () => {
  await fx.cleanup();
});

describe('update: simple properties', () => {
  it('replaces alias, autoboot, billing_id, resolvers, cpu_cap, cpu_shares, quota, indestructible_* and more', async () => {
    const out = await fx.store.update(vm.uuid, {
      alias: 'renamed',
      autoboot: false,
      billing_id: '11111111-1111-1111-1111-111111111111',
      resolvers: ['8.8.8.8', '8.8.4.4'],
      cpu_cap: 350,
      cpu_shares: 512,
      quota: 50,
      indestructible_zoneroot: true,
      indestructible_delegated: true,
      max_lwps: 4000,
      zfs_io_priority: 30,
      firewall_enabled: true,
      hostname: 'web-renamed',
      owner_uuid: '22222222-2222-2222-2222-222222222222',
      do_not_inventory: false,
      package_name: 'sample-1G',
      limit_priv: ['default', 'dtrace_user'],
    });
    expect(out).toMatchObject({
      alias: 'renamed',
      autoboot: false,
      state: 'running', // autoboot does not change the state
      billing_id: '11111111-1111-1111-1111-111111111111',
      resolvers: ['8.8.8.8', '8.8.4.4'],
      cpu_cap: 350,
      cpu_shares: 512,
      quota: 50,
      indestructible_zoneroot: true,
      indestructible_delegated: true,
      max_lwps: 4000,
      zfs_io_priority: 30,
      firewall_enabled: true,
      hostname: 'web-renamed',
      owner_uuid: '22222222-2222-2222-2222-222222222222',
      package_name: 'sample-1G',
      limit_priv: 'default,dtrace_user',
    });
    expect(await fx.readFile(vm.uuid)).toMatchObject({ alias: 'renamed', cpu_cap: 350, quota: 50 });
    expect(await fx.store.load(vm.uuid)).toEqual(out);
  });

  it('null unsets a property; quota unsets to 0 like vmadm', async () => {
    await fx.store.update(vm.uuid, { cpu_cap: 100 });
    const out = await fx.store.update(vm.uuid, { cpu_cap: null, quota: null });
    expect(out).not.toHaveProperty('cpu_cap');
    expect(out.quota).toBe(0);
    expect(await fx.readFile(vm.uuid)).not.toHaveProperty('cpu_cap');
  });

  it('ram resizes memory keeping the locked/swap deltas', async () => {
    await fx.store.update(vm.uuid, { max_swap: 1024 }); // swap = phys + 512
    const out = await fx.store.update(vm.uuid, { ram: 2048 });
    expect(out).toMatchObject({ max_physical_memory: 2048, max_locked_memory: 2048, max_swap: 2560 });
    expect(out.ram).toBeUndefined();
    const shrunk = await fx.store.update(vm.uuid, { max_physical_memory: 1024, max_swap: 512 });
    expect(shrunk).toMatchObject({ max_physical_memory: 1024, max_locked_memory: 1024, max_swap: 1024 }); // swap >= phys
    const locked = await fx.store.update(vm.uuid, { max_locked_memory: 9999 });
    expect(locked.max_locked_memory).toBe(1024); // clamped to phys
  });

  it('bhyve: ram keeps the HVM overhead, vcpus updates', async () => {
    const h = await fx.store.create(bhyvePayload());
    const out = await fx.store.update(h.uuid, { ram: 2048, vcpus: 4 });
    expect(out).toMatchObject({ ram: 2048, max_physical_memory: 2048 + 1280, vcpus: 4 });
  });
});

describe('update: metadata, tags, routes', () => {
  it('set_ and remove_ customer_metadata and internal_metadata', async () => {
    const out = await fx.store.update(vm.uuid, {
      set_customer_metadata: { b: '20', c: '3' },
      remove_customer_metadata: ['a'],
      set_internal_metadata: { 'sdc:z': 'w' },
      remove_internal_metadata: ['sdc:x'],
    });
    expect(out.customer_metadata).toEqual({ b: '20', c: '3' });
    expect(out.internal_metadata).toEqual({ 'sdc:z': 'w' });
  });

  it('set_tags merges and remove_tags removes (the dummy removed nothing)', async () => {
    const out = await fx.store.update(vm.uuid, { set_tags: { tier: 2 }, remove_tags: ['env'] });
    expect(out.tags).toEqual({ role: 'web', tier: 2 });
  });

  it('set_routes alone is kept, remove_routes removes only the listed ones', async () => {
    const a = await fx.store.update(vm.uuid, { set_routes: { '10.2.0.0/16': '10.99.99.2' } });
    expect(a.routes).toEqual({ '10.1.0.0/16': '10.99.99.1', '10.2.0.0/16': '10.99.99.2' });
    const b = await fx.store.update(vm.uuid, { remove_routes: ['10.1.0.0/16'] });
    expect(b.routes).toEqual({ '10.2.0.0/16': '10.99.99.2' });
    const e = await expectReject(fx.store.update(vm.uuid, { set_routes: { 'not an ip': '10.0.0.1' } }));
    expect(e.message).toContain('set_routes');
  });
});

describe('update: NICs', () => {
  it('add_nics appends with generated MAC and the next interface; primary moves when asked', async () => {
    const a = await fx.store.update(vm.uuid, { add_nics: [{ ip: '192.168.5.5', netmask: '255.255.255.0', nic_tag: 'internal' }] });
    expect(a.nics).toHaveLength(2);
    expect(a.nics![1]).toMatchObject({ interface: 'net1', ips: ['192.168.5.5/24'] });
    expect(a.nics![1]!.mac).toMatch(/^[0-9a-f:]{17}$/);
    expect(a.nics!.filter((n) => n.primary)).toHaveLength(1);
    const b = await fx.store.update(vm.uuid, { add_nics: [{ ip: '198.51.100.3', netmask: '255.255.255.0', nic_tag: 'external', primary: true }] });
    expect(b.nics!.filter((n) => n.primary).map((n) => n.ip)).toEqual(['198.51.100.3']);
  });

  it('update_nics changes properties by MAC; false flags are removed; ip updates ips', async () => {
    const mac = vm.nics![0]!.mac;
    const a = await fx.store.update(vm.uuid, { update_nics: [{ mac, allow_ip_spoofing: true, ip: '10.99.99.41' }] });
    expect(a.nics![0]).toMatchObject({ allow_ip_spoofing: true, ip: '10.99.99.41', ips: ['10.99.99.41/24'] });
    const b = await fx.store.update(vm.uuid, { update_nics: [{ mac, allow_ip_spoofing: false }] });
    expect(b.nics![0]).not.toHaveProperty('allow_ip_spoofing');
    const e = await expectReject(fx.store.update(vm.uuid, { update_nics: [{ mac: '02:00:00:00:00:99', mtu: 9000 }] }));
    expect(e.message).toContain('update_nics.0.mac');
  });

  it('remove_nics removes by MAC and picks a new primary (public before private)', async () => {
    const a = await fx.store.update(vm.uuid, {
      add_nics: [
        { ip: '10.5.5.5', netmask: '255.255.255.0', nic_tag: 'internal' },
        { ip: '198.51.100.7', netmask: '255.255.255.0', nic_tag: 'external' },
      ],
    });
    const primary = a.nics!.find((n) => n.primary)!;
    const b = await fx.store.update(vm.uuid, { remove_nics: [primary.mac] });
    expect(b.nics).toHaveLength(2);
    expect(b.nics!.filter((n) => n.primary).map((n) => n.ip)).toEqual(['198.51.100.7']);
    // VM.js update skips a MAC the VM does not have, with a warning (net-agent may have
    // removed the NIC already, NAPI having deleted it first).
    const c = await fx.store.update(vm.uuid, { remove_nics: ['02:00:00:00:00:99'] });
    expect(c.nics).toEqual(b.nics);
  });
});

describe('update: bhyve disks', () => {
  it('add, resize (grow) and remove disks; shrinking needs dangerous_allow_shrink', async () => {
    const h = await fx.store.create(bhyvePayload());
    const added = await fx.store.update(h.uuid, { add_disks: [{ size: 5120 }] });
    expect(added.disks).toHaveLength(3);
    const path2 = `/dev/zvol/rdsk/zones/${h.uuid}/disk2`;
    expect(added.disks![2]).toMatchObject({ path: path2, size: 5120 });
    const grown = await fx.store.update(h.uuid, { update_disks: [{ path: path2, size: 8192 }] });
    expect(grown.disks![2]!.size).toBe(8192);
    const e = await expectReject(fx.store.update(h.uuid, { update_disks: [{ path: path2, size: 1024 }] }));
    expect(e.message).toContain('update_disks.0.size');
    const shrunk = await fx.store.update(h.uuid, { update_disks: [{ path: path2, size: 1024, dangerous_allow_shrink: true }] });
    expect(shrunk.disks![2]!.size).toBe(1024);
    expect(shrunk.disks![2]).not.toHaveProperty('dangerous_allow_shrink');
    const removed = await fx.store.update(h.uuid, { remove_disks: [path2] });
    expect(removed.disks!.map((d) => d.path)).not.toContain(path2);
    const again = await fx.store.update(h.uuid, { add_disks: [{ size: 1024 }] });
    expect(again.disks![2]!.path).toBe(path2);
  });

  it('disk keys are removed, with a warning, from an OS VM update', async () => {
    const w = warningLog();
    const out = await fx.store.update(vm.uuid, { add_disks: [{ size: 1 }], alias: 'still' }, { log: w });
    expect(w.removed()).toEqual(['add_disks']);
    expect(out.alias).toBe('still');
    expect(out).not.toHaveProperty('disks');
  });
});

describe('update: keys vmadm does not take, and bad values', () => {
  it('removes unknown, read-only and wrong-brand keys (image_uuid too) with one warning, applying the rest', async () => {
    const w = warningLog();
    const before = fx.store.get(vm.uuid)!;
    const out = await fx.store.update(
      vm.uuid,
      {
        frobnicate: true,
        state: 'stopped',
        tags: { a: 1 },
        nics: [],
        brand: 'lx',
        zonepath: '/x',
        last_modified: 'now',
        vcpus: 4,
        image_uuid: newUuid(),
        hvm: true,
        uuid: vm.uuid,
        server_uuid: newUuid(),
        jobid: 'j1',
        alias: 'applied',
      },
      { log: w },
    );
    expect(w.calls).toHaveLength(1);
    expect(w.removed().sort()).toEqual(
      ['brand', 'frobnicate', 'hvm', 'image_uuid', 'jobid', 'last_modified', 'nics', 'server_uuid', 'state', 'tags', 'uuid', 'vcpus', 'zonepath'].sort(),
    );
    expect(out.alias).toBe('applied');
    for (const k of ['state', 'tags', 'nics', 'brand', 'zonepath', 'image_uuid', 'server_uuid'] as const) {
      expect(out[k], k).toEqual(before[k]);
    }
    expect(out).not.toHaveProperty('vcpus');
    expect(out).not.toHaveProperty('frobnicate');
  });

  it('refuses bad values of keys it takes, naming the key, and nothing changes', async () => {
    const rec = recordEvents(fx.store);
    const before = await fx.readFile(vm.uuid);
    for (const [payload, key] of [
      [{ ram: 'big' }, 'ram'],
      [{ autoboot: 'yes' }, 'autoboot'],
      [{ set_tags: 'x' }, 'set_tags'],
      [{ alias: 'ok', owner_uuid: {} }, 'owner_uuid'],
      [{ add_filesystems: [{ source: '/x' }] }, 'add_filesystems.0.target'],
    ] as [Record<string, unknown>, string][]) {
      const e = await expectReject(fx.store.update(vm.uuid, payload));
      expect(e.code, key).toBe('ValidationFailed');
      expect(e.message, key).toContain(key);
      expect((e.errors as { field: string }[])[0]!.field, key).toBe(key);
    }
    expect(await fx.readFile(vm.uuid)).toEqual(before);
    expect(rec.events).toEqual([]);
  });

  it("drops node-vmadm's own options without a warning", async () => {
    const w = warningLog();
    const logger: Record<string, unknown> = {};
    logger.self = logger; // a logger JSON cannot copy, as node-vmadm's callers pass it
    const out = await fx.store.update(vm.uuid, { req_id: 'r1', include_dni: true, log: logger, alias: 'env-ok' }, { log: w });
    expect(out.alias).toBe('env-ok');
    expect(w.calls).toEqual([]);
  });

  it('a missing VM gives VmNotFound', async () => {
    const missing = newUuid();
    const e = await expectReject(fx.store.update(missing, { alias: 'x' }));
    expect(e).toMatchObject({ restCode: 'VmNotFound', message: `vmadm load ${missing} failed: No such zone` });
  });

  it('an update that changes nothing writes nothing and emits nothing', async () => {
    const rec = recordEvents(fx.store);
    const before = fx.store.get(vm.uuid)!;
    const out = await fx.store.update(vm.uuid, { alias: vm.alias, set_tags: { role: 'web' } });
    expect(out.last_modified).toBe(before.last_modified);
    expect(rec.events).toEqual([]);
  });

  it('last_modified moves forward on every write', async () => {
    let prev = vm.last_modified!;
    for (let i = 0; i < 5; i++) {
      const out = await fx.store.update(vm.uuid, { alias: `n${i}` });
      expect(Date.parse(out.last_modified!)).toBeGreaterThan(Date.parse(prev));
      prev = out.last_modified!;
    }
  });
});

describe('update: what vmadm keeps for the brand', () => {
  it('memory changes carry tmpfs (same ratio) and fill max_shm_memory and the IPC limits a VM lacks', async () => {
    // VM.js fixPayloadMemory: created with 512 MiB, tmpfs 512; halve tmpfs, then double the memory.
    expect(vm).toMatchObject({ max_physical_memory: 512, tmpfs: 512, max_shm_memory: 512 });
    await fx.store.update(vm.uuid, { tmpfs: 256 });
    const grown = await fx.store.update(vm.uuid, { ram: 1024 });
    expect(grown).toMatchObject({ max_physical_memory: 1024, tmpfs: 512, max_shm_memory: 512 });
    const clamped = await fx.store.update(vm.uuid, { tmpfs: 4096 });
    expect(clamped.tmpfs).toBe(1024);
    const both = await fx.store.update(vm.uuid, { max_physical_memory: 2048, tmpfs: 100, max_shm_memory: 64 });
    expect(both).toMatchObject({ tmpfs: 100, max_shm_memory: 64 });
  });

  it('docker: true on update adds docker:id through set_internal_metadata and keeps an existing one', async () => {
    const out = await fx.store.update(vm.uuid, { docker: true });
    expect(out).toMatchObject({
      docker: true,
      restart_init: false,
      init_name: '/usr/vm/sbin/dockerinit',
      internal_metadata_namespaces: ['docker'],
      internal_metadata: { 'sdc:x': 'y', 'docker:id': expect.stringMatching(/^[0-9a-f]{64}$/) },
    });
    const again = await fx.store.update(vm.uuid, { docker: true, init_name: '/other' });
    expect(again.internal_metadata!['docker:id']).toBe(out.internal_metadata!['docker:id']);
    expect(again.init_name).toBe('/other');
  });

  it('add_, update_ and remove_filesystems by target; fs_allowed, zlog_max_size, zfs data properties', async () => {
    const added = await fx.store.update(vm.uuid, {
      add_filesystems: [
        { source: '/a', target: '/mnt/a', type: 'lofs', options: ['ro'] },
        { source: '/b', target: '/mnt/b', type: 'lofs' },
      ],
      fs_allowed: ['ufs'],
      zlog_max_size: 4096,
      zfs_data_compression: 'lz4',
    });
    expect(added).toMatchObject({
      filesystems: [
        { source: '/a', target: '/mnt/a', type: 'lofs', options: ['ro'] },
        { source: '/b', target: '/mnt/b', type: 'lofs' },
      ],
      fs_allowed: ['ufs'],
      zlog_max_size: 4096,
      zfs_data_compression: 'lz4',
    });
    const changed = await fx.store.update(vm.uuid, {
      update_filesystems: [{ target: '/mnt/a', options: ['rw'] }],
      remove_filesystems: ['/mnt/b'],
    });
    expect(changed.filesystems).toEqual([{ source: '/a', target: '/mnt/a', type: 'lofs', options: ['rw'] }]);
  });

  it('bhyve: add_, update_ and remove_pci_devices by path', async () => {
    const h = await fx.store.create(bhyvePayload());
    const dev = '/devices/pci@0,0/pci8086,6f08@3';
    const added = await fx.store.update(h.uuid, { add_pci_devices: [{ path: dev, pci_slot: '0:7:0' }] });
    expect(added.pci_devices).toEqual([{ path: dev, pci_slot: '0:7:0' }]);
    const moved = await fx.store.update(h.uuid, { update_pci_devices: [{ path: dev, pci_slot: '0:8:0' }] });
    expect(moved.pci_devices).toEqual([{ path: dev, pci_slot: '0:8:0' }]);
    const gone = await fx.store.update(h.uuid, { remove_pci_devices: [dev] });
    expect(gone.pci_devices).toEqual([]);
  });
});
