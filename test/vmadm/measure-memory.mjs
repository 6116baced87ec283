/**
 * Bytes of heap per VM in a store's index (docs/vmadm.md "Memory"). Not a test: run it by
 * hand after a build:
 *
 *   node --expose-gc test/vmadm/measure-memory.mjs [count]
 *
 * It writes `count` VM files (default 10,000) of two typical shapes straight to a temp
 * dir (no fsync, it measures memory, not writes), then compares heapUsed before and after
 * opening the store, with forced GCs around it. The temp dir is removed at the end.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const { Vmadm } = await import(path.resolve(here, '../../dist/src/vmadm/index.js'));
const { createQuietLogger } = await import(path.resolve(here, '../../dist/src/common/log.js'));

if (typeof globalThis.gc !== 'function') {
  console.error('run with node --expose-gc');
  process.exit(2);
}
const count = Number(process.argv[2] ?? 10_000);

function osVm(uuid, i) {
  return {
    uuid,
    brand: 'joyent-minimal',
    alias: `vm-${i}`,
    autoboot: true,
    state: 'running',
    boot_timestamp: new Date().toISOString(),
    create_timestamp: new Date().toISOString(),
    owner_uuid: randomUUID(),
    image_uuid: 'fd2cc906-8938-11e3-beab-4359c665ac99',
    billing_id: randomUUID(),
    zpool: 'zones',
    zfs_filesystem: `zones/${uuid}`,
    zonepath: `/zones/${uuid}`,
    cpu_shares: 100,
    cpu_cap: 100,
    max_lwps: 2000,
    zfs_io_priority: 100,
    quota: 25,
    limit_priv: 'default',
    datasets: [],
    customer_metadata: { root_authorized_keys: `ssh-rsa ${'A'.repeat(370)} user@host` },
    internal_metadata: {},
    tags: { role: 'web', env: 'prod' },
    resolvers: ['8.8.8.8', '8.8.4.4'],
    max_physical_memory: 1024,
    max_locked_memory: 1024,
    max_swap: 1024,
    nics: [
      {
        interface: 'net0',
        mac: `90:b8:d0:${[0, 1, 2].map(() => Math.floor(Math.random() * 256).toString(16).padStart(2, '0')).join(':')}`,
        ip: `10.1.${(i >> 8) & 255}.${i & 255}`,
        ips: [`10.1.${(i >> 8) & 255}.${i & 255}/16`],
        netmask: '255.255.0.0',
        gateway: '10.1.0.1',
        gateways: ['10.1.0.1'],
        nic_tag: 'external',
        vlan_id: 0,
        network_uuid: 'a4457fc9-ecc0-4ee0-8f44-2d4a3e0b8d8b',
        mtu: 1500,
        primary: true,
      },
    ],
  };
}

function bhyveVm(uuid, i) {
  const vm = osVm(uuid, i);
  Object.assign(vm, { brand: 'bhyve', ram: 2048, vcpus: 2, max_physical_memory: 3328, quota: 1 });
  vm.nics.push({ ...vm.nics[0], interface: 'net1', mac: '02:00:00:00:00:01', primary: undefined, nic_tag: 'internal' });
  vm.disks = [0, 1].map((d) => ({
    path: `/dev/zvol/rdsk/zones/${uuid}/disk${d}`,
    boot: d === 0,
    model: 'virtio',
    media: 'disk',
    size: 10240,
    zfs_filesystem: `zones/${uuid}/disk${d}`,
    zpool: 'zones',
    compression: 'off',
    block_size: 8192,
    refreservation: 10240,
  }));
  return vm;
}

async function measure(label, make) {
  const root = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-vmadm-mem-'));
  const server = randomUUID();
  const dir = path.join(root, 'servers', server, 'vms');
  await fsp.mkdir(dir, { recursive: true });
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const uuid = randomUUID();
    const text = `${JSON.stringify(make(uuid, i), null, 2)}\n`;
    bytes += text.length;
    await fsp.writeFile(path.join(dir, `${uuid}.json`), text);
  }
  const vmadm = new Vmadm({ root, log: createQuietLogger() });
  globalThis.gc();
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  const store = await vmadm.openServer(server, { UUID: server, 'Datacenter Name': 'dc', 'Live Image': '20240101T000000Z' });
  globalThis.gc();
  globalThis.gc();
  const after = process.memoryUsage().heapUsed;
  const perVm = Math.round((after - before) / store.size);
  console.log(`${label}: ${store.size} VMs, file ${Math.round(bytes / count)} B/VM on disk, heap ${perVm} B/VM`);
  await vmadm.close();
  await fsp.rm(root, { recursive: true, force: true });
}

await measure('joyent-minimal, 1 NIC', osVm);
await measure('bhyve, 2 NICs, 2 disks', bhyveVm);
