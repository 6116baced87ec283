/**
 * Conformance with npm vmadm@1.3's dummy backend (lib/index.dummy.js), the store of the
 * original mockcloud: the same sequences run through both, the files are compared field
 * by field, and files written by each are loaded by the other.
 *
 * Fields excluded from the file comparison, and why:
 * - create_timestamp, boot_timestamp, exit_timestamp, snapshots[].created_at: wall-clock
 *   times of two separate runs.
 * - last_modified, pid, zoneid, zonename, server_uuid, datacenter_name,
 *   platform_buildstamp, zone_state: derived on load. The dummy persists whatever it had
 *   loaded; we never store them (zone_state only while it differs from state). Their
 *   loaded values are compared instead.
 * - exit_status: derived by the dummy for stopped VMs; stored by us once a VM stopped.
 *   Compared in the loaded form.
 * - nics[].interface: vmadm names NICs net0, net1...; the dummy does not.
 * MACs are given in the payloads, so they are compared too (the dummy generates none).
 *
 * Named exceptions, where the dummy and a real SmartOS CN disagree and we follow the CN
 * (each one is asserted, not just skipped):
 * - REAL_CN_CREATE_DEFAULTS: what VM.js applyZoneDefaults/fixPayloadMemory fill in on
 *   create and the dummy does not (dns_domain, tmpfs, max_shm_memory, the IPC id limits).
 * - REAL_CN_LOAD_FIELDS: what vmload always shows and the dummy lacks (firewall_enabled,
 *   resolvers, snapshots, zonedid, hvm, and for every brand `v` 1, `routes` {} and
 *   `zfs_root_recsize` 131072).
 * - NOT_VMADM_PAYLOAD: payload keys vmadm removes (not properties it takes) that the dummy
 *   stores as given (datasets).
 * - SNAPSHOTS: vmload lists snapshots newest first, with `size`; the dummy appends.
 * - REAL_CN_END_STATES: a rollback or a reprovision leaves the VM running on a real CN
 *   (VM.js rollback_snapshot and reprovision start it); the dummy leaves a stopped VM stopped.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import type { Vm } from '../../src/vmadm/types.js';
import { identity, makeFixture, type Fixture } from './helpers.js';

const require = createRequire(import.meta.url);
type Cb = (err?: Error | null, res?: unknown) => void;
interface DummyVmadm {
  create(p: object, cb: Cb): void;
  update(p: object, cb: Cb): void;
  load(p: object, cb: Cb): void;
  start(p: object, cb: Cb): void;
  stop(p: object, cb: Cb): void;
  reboot(p: object, cb: Cb): void;
  delete(p: object, cb: Cb): void;
  create_snapshot(p: object, cb: Cb): void;
  delete_snapshot(p: object, cb: Cb): void;
  rollback_snapshot(p: object, cb: Cb): void;
  reprovision(p: object, cb: Cb): void;
  lookup(s: object, o: object, cb: Cb): void;
}
const DummyVmadm = require('vmadm/lib/index.dummy.js') as new (opts: object) => DummyVmadm;

const EXCLUDED = [
  'create_timestamp',
  'boot_timestamp',
  'exit_timestamp',
  'last_modified',
  'pid',
  'zoneid',
  'zonename',
  'server_uuid',
  'datacenter_name',
  'platform_buildstamp',
  'zone_state',
  'exit_status',
];

/** For the payload below (ram 1024, zone brand): VM.js applyZoneDefaults + fixPayloadMemory. */
const REAL_CN_CREATE_DEFAULTS: Record<string, unknown> = {
  dns_domain: 'local',
  tmpfs: 1024,
  max_shm_memory: 1024,
  max_msg_ids: 4096,
  max_sem_ids: 4096,
  max_shm_ids: 4096,
};
const REAL_CN_LOAD_FIELDS = ['firewall_enabled', 'resolvers', 'snapshots', 'zonedid', 'hvm', 'v', 'routes', 'zfs_root_recsize'];
const NOT_VMADM_PAYLOAD = ['datasets'];

/**
 * Assert the named exceptions on our file (or loaded VM) and the dummy's, and take them out
 * of both: what is left must be equal.
 */
function exceptions(
  ours: Record<string, unknown>,
  theirs: Record<string, unknown>,
  label: string,
  defaults = REAL_CN_CREATE_DEFAULTS,
  createdHere = true,
): void {
  for (const [k, v] of Object.entries(defaults)) {
    expect(ours[k], `${label}: ${k} (real CN default)`).toEqual(v);
    expect(theirs[k], `${label}: ${k} (dummy)`).toBeUndefined();
  }
  expect(typeof ours.zonedid, `${label}: zonedid`).toBe('number');
  expect(typeof ours.firewall_enabled, `${label}: firewall_enabled`).toBe('boolean');
  expect(Array.isArray(ours.resolvers), `${label}: resolvers`).toBe(true);
  // smartos-live vmload: the zone's vm-version, its routes.json ({} without one), its root
  // dataset's recsize.
  expect(ours.v, `${label}: v`).toBe(1);
  expect(ours.routes, `${label}: routes`).toEqual({});
  expect(ours.zfs_root_recsize, `${label}: zfs_root_recsize`).toBe(131072);
  // SNAPSHOTS: the same names; ours newest first (ties in the order taken), each with a size.
  const ourSnaps = (ours.snapshots ?? []) as { name: string; created_at: string; size?: number }[];
  const theirSnaps = (theirs.snapshots ?? []) as { name: string }[];
  expect(ourSnaps.map((s) => s.name).sort(), `${label}: snapshot names`).toEqual(theirSnaps.map((s) => s.name).sort());
  for (let i = 1; i < ourSnaps.length; i++) expect(ourSnaps[i - 1]!.created_at >= ourSnaps[i]!.created_at, label).toBe(true);
  for (const snap of ourSnaps) expect(snap.size, `${label}: snapshot size`).toBe(0);
  // A VM we created never stored them; a file the dummy wrote keeps what it has.
  for (const k of createdHere ? NOT_VMADM_PAYLOAD : []) {
    expect(ours, `${label}: ${k}`).not.toHaveProperty(k);
    delete theirs[k];
  }
  for (const k of [...Object.keys(defaults), ...REAL_CN_LOAD_FIELDS]) {
    // The dummy keeps a value it was given (resolvers in the payload); a real CN shows the same.
    if (k in theirs && k !== 'snapshots') expect(ours[k], `${label}: ${k}`).toEqual(theirs[k]);
    delete ours[k];
    delete theirs[k];
  }
}

/** A file's content minus the fields that legitimately differ (see the header). */
function comparable(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (EXCLUDED.includes(k)) continue;
    if (k === 'nics') out.nics = (v as Record<string, unknown>[]).map(({ interface: _i, ...n }) => n);
    else out[k] = v;
  }
  return out;
}

let fx: Fixture;
let dummy: DummyVmadm;
let dummyServer: string;
let d: {
  create(p: object): Promise<unknown>;
  update(p: object): Promise<unknown>;
  load(p: object): Promise<Record<string, unknown>>;
  start(p: object): Promise<unknown>;
  stop(p: object): Promise<unknown>;
  reboot(p: object): Promise<unknown>;
  delete(p: object): Promise<unknown>;
  snap(p: object): Promise<unknown>;
  delSnap(p: object): Promise<unknown>;
  rollback(p: object): Promise<unknown>;
  reprovision(p: object): Promise<unknown>;
  lookup(): Promise<Record<string, unknown>[]>;
};

function dummyFile(uuid: string): string {
  return path.join(fx.root, 'servers', dummyServer, 'vms', `${uuid}.json`);
}

async function readJson(file: string): Promise<Record<string, unknown>> {
  return JSON.parse(await fsp.readFile(file, 'utf8')) as Record<string, unknown>;
}

beforeEach(async () => {
  fx = await makeFixture();
  dummyServer = newUuid();
  await fsp.mkdir(path.join(fx.root, 'servers', dummyServer, 'vms'), { recursive: true });
  dummy = new DummyVmadm({ log: createQuietLogger(), serverRoot: path.join(fx.root, 'servers'), sysinfo: identity(dummyServer) });
  const p = <A extends unknown[]>(f: (...a: [...A, Cb]) => void) => promisify(f.bind(dummy)) as unknown as (...a: A) => Promise<never>;
  d = {
    create: p(dummy.create),
    update: p(dummy.update),
    load: p(dummy.load),
    start: p(dummy.start),
    stop: p(dummy.stop),
    reboot: p(dummy.reboot),
    delete: p(dummy.delete),
    snap: p(dummy.create_snapshot),
    delSnap: p(dummy.delete_snapshot),
    rollback: p(dummy.rollback_snapshot),
    reprovision: p(dummy.reprovision),
    lookup: () => p(dummy.lookup)({}, {}),
  };
});
afterEach(async () => {
  await fx.cleanup();
});

/** A create payload like cn-agent's machine_create builds it (the fields it fills in included). */
function payload(uuid: string, brand = 'joyent-minimal'): Record<string, unknown> {
  return {
    uuid,
    brand,
    alias: 'conf0',
    owner_uuid: '930896af-bf8c-48d4-885c-6573a94b1853',
    image_uuid: 'fd2cc906-8938-11e3-beab-4359c665ac99',
    billing_id: '0ea54d9d-8d4d-4959-a87e-bf47c0f61a47',
    ram: 1024,
    quota: 25,
    cpu_cap: 100,
    autoboot: true,
    zpool: 'zones',
    zfs_filesystem: `zones/${uuid}`,
    zonepath: `/zones/${uuid}`,
    zfs_io_priority: 100,
    limit_priv: 'default',
    datasets: [],
    customer_metadata: { 'root_authorized_keys': 'ssh-rsa AAAA' },
    internal_metadata: { 'sdc:operator-script': '' },
    tags: { role: 'web' },
    resolvers: ['8.8.8.8'],
    nics: [
      {
        mac: '90:b8:d0:aa:bb:01',
        ip: '10.99.99.40',
        netmask: '255.255.255.0',
        gateway: '10.99.99.7',
        nic_tag: 'admin',
        vlan_id: 0,
        network_uuid: 'a4457fc9-ecc0-4ee0-8f44-2d4a3e0b8d8b',
        mtu: 1500,
        primary: true,
      },
    ],
  };
}

/** One step through both backends. */
interface Step {
  name: string;
  ours(uuid: string): Promise<unknown>;
  theirs(uuid: string): Promise<unknown>;
}

const steps: Step[] = [
  {
    name: 'update simple keys, tags, nics',
    ours: (uuid) =>
      fx.store.update(uuid, {
        alias: 'conf1',
        billing_id: '11111111-2222-3333-4444-555555555555',
        resolvers: ['8.8.4.4', '1.1.1.1'],
        set_tags: { tier: 'front' },
        add_nics: [
          { mac: '90:b8:d0:aa:bb:02', ip: '192.168.7.7', netmask: '255.255.255.0', nic_tag: 'internal', allow_ip_spoofing: false },
        ],
      }),
    theirs: (uuid) =>
      d.update({
        uuid,
        alias: 'conf1',
        billing_id: '11111111-2222-3333-4444-555555555555',
        resolvers: ['8.8.4.4', '1.1.1.1'],
        set_tags: { tier: 'front' },
        add_nics: [
          { mac: '90:b8:d0:aa:bb:02', ip: '192.168.7.7', netmask: '255.255.255.0', nic_tag: 'internal', allow_ip_spoofing: false },
        ],
      }),
  },
  {
    name: 'update_nics',
    ours: (uuid) => fx.store.update(uuid, { update_nics: [{ mac: '90:b8:d0:aa:bb:02', mtu: 9000, allow_ip_spoofing: true }] }),
    theirs: (uuid) => d.update({ uuid, update_nics: [{ mac: '90:b8:d0:aa:bb:02', mtu: 9000, allow_ip_spoofing: true }] }),
  },
  { name: 'stop', ours: (uuid) => fx.store.stop(uuid), theirs: (uuid) => d.stop({ uuid }) },
  { name: 'start', ours: (uuid) => fx.store.start(uuid), theirs: (uuid) => d.start({ uuid }) },
  // `vmadm start` of a running VM exits 0 (smartos-live vmadm.js): no error, same VM.
  { name: 'start a running VM', ours: (uuid) => fx.store.start(uuid), theirs: (uuid) => d.start({ uuid }) },
  { name: 'snapshot', ours: (uuid) => fx.store.createSnapshot(uuid, 'snap1'), theirs: (uuid) => d.snap({ uuid, snapshot_name: 'snap1' }) },
  { name: 'snapshot 2', ours: (uuid) => fx.store.createSnapshot(uuid, 'snap2'), theirs: (uuid) => d.snap({ uuid, snapshot_name: 'snap2' }) },
  { name: 'delete snapshot', ours: (uuid) => fx.store.deleteSnapshot(uuid, 'snap2'), theirs: (uuid) => d.delSnap({ uuid, snapshot_name: 'snap2' }) },
  { name: 'reboot', ours: (uuid) => fx.store.reboot(uuid), theirs: (uuid) => d.reboot({ uuid }) },
  {
    name: 'remove the primary NIC',
    ours: (uuid) => fx.store.update(uuid, { remove_nics: ['90:b8:d0:aa:bb:01'] }),
    theirs: (uuid) => d.update({ uuid, remove_nics: ['90:b8:d0:aa:bb:01'] }),
  },
  { name: 'stop again', ours: (uuid) => fx.store.stop(uuid), theirs: (uuid) => d.stop({ uuid }) },
  // `vmadm stop` of a stopped VM exits 0 too.
  { name: 'stop a stopped VM', ours: (uuid) => fx.store.stop(uuid), theirs: (uuid) => d.stop({ uuid }) },
];

describe('conformance with the vmadm dummy backend', () => {
  it('the same sequence gives the same files, field by field', async () => {
    const uuid = newUuid();
    await fx.store.create(payload(uuid));
    await d.create(payload(uuid));
    const check = async (label: string) => {
      const ours = comparable(await fx.readFile(uuid));
      const theirs = comparable(await readJson(dummyFile(uuid)));
      exceptions(ours, theirs, label);
      expect(ours, label).toEqual(theirs);
      // The derived fields agree on load.
      const ourVm = fx.store.get(uuid)!;
      const theirVm = await d.load({ uuid });
      for (const k of ['state', 'zone_state', 'zonename', 'datacenter_name', 'platform_buildstamp', 'autoboot']) {
        expect(ourVm[k], `${label}: ${k}`).toEqual(theirVm[k]);
      }
      expect(ourVm.server_uuid).toBe(fx.serverUuid);
      expect(theirVm.server_uuid).toBe(dummyServer);
      if (ourVm.state === 'stopped') {
        expect(ourVm.exit_status, label).toBe(theirVm.exit_status);
        // A stopped zone has no process; the dummy keeps the pid it persisted (its defect).
        expect(ourVm.pid, label).toBeUndefined();
      } else {
        expect(typeof ourVm.pid, label).toBe('number');
        expect(typeof theirVm.pid, label).toBe('number');
      }
    };
    await check('create');
    for (const step of steps) {
      await step.ours(uuid);
      await step.theirs(uuid);
      await check(step.name);
    }
    await fx.store.delete(uuid);
    await d.delete({ uuid });
    await expect(fsp.access(fx.fileOf(uuid))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(fsp.access(dummyFile(uuid))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('the same bhyve create gives the same memory and VM fields apart from vmadm disk/memory rules', async () => {
    const uuid = newUuid();
    const p = { ...payload(uuid, 'bhyve'), vcpus: 2, disks: [{ image_uuid: newUuid(), image_size: 10240, boot: true, path: `/dev/zvol/rdsk/zones/${uuid}/disk0`, zfs_filesystem: `zones/${uuid}/disk0`, zpool: 'zones', model: 'virtio', media: 'disk', compression: 'off', block_size: 8192, refreservation: 10240, size: 10240 }] };
    await fx.store.create(p);
    await d.create(jsonCopy(p));
    const ours = comparable(await fx.readFile(uuid));
    const theirs = comparable(await readJson(dummyFile(uuid)));
    // vmadm adds the bhyve memory overhead the dummy left out; HVM VMs get no tmpfs or
    // dns_domain, and max_shm_memory follows the overhead too.
    exceptions(ours, theirs, 'bhyve', { max_shm_memory: 1024 + 1280, max_msg_ids: 4096, max_sem_ids: 4096, max_shm_ids: 4096 });
    expect(ours.max_physical_memory).toBe(1024 + 1280);
    expect(theirs.max_physical_memory).toBe(1024);
    for (const k of ['max_physical_memory', 'max_locked_memory', 'max_swap']) {
      delete ours[k];
      delete theirs[k];
    }
    expect(ours).toEqual(theirs);
  });

  it('REAL_CN_END_STATES: a rollback or reprovision of a stopped VM ends running here, stopped in the dummy', async () => {
    const uuid = newUuid();
    await fx.store.create(payload(uuid));
    await d.create(payload(uuid));
    await fx.store.createSnapshot(uuid, 's1');
    await d.snap({ uuid, snapshot_name: 's1' });
    const both = async (label: string, ours: () => Promise<unknown>, theirs: () => Promise<unknown>) => {
      await fx.store.stop(uuid);
      await d.stop({ uuid });
      await ours();
      await theirs();
      const o = comparable(await fx.readFile(uuid));
      const t = comparable(await readJson(dummyFile(uuid)));
      // smartos-live VM.js rollback_snapshot starts the VM after the rollback; reprovision
      // installs the new image with autoboot and starts it. The dummy restores the old state.
      expect({ state: o.state, autoboot: o.autoboot }, label).toEqual({ state: 'running', autoboot: true });
      expect({ state: t.state, autoboot: t.autoboot }, label).toEqual({ state: 'stopped', autoboot: false });
      exceptions(o, t, label);
      for (const k of ['state', 'autoboot']) {
        delete o[k];
        delete t[k];
      }
      expect(o, label).toEqual(t);
    };
    await both('rollback', () => fx.store.rollbackSnapshot(uuid, 's1'), () => d.rollback({ uuid, snapshot_name: 's1' }));
    const image = newUuid();
    await both('reprovision', () => fx.store.reprovision(uuid, { image_uuid: image }), () => d.reprovision({ uuid, image_uuid: image }));
  });

  it('a VM written by us loads in the dummy with the same fields', async () => {
    const uuid = newUuid();
    await fx.store.create(payload(uuid));
    await fx.store.update(uuid, { alias: 'ours' });
    await fx.store.stop(uuid);
    await fx.store.start(uuid);
    // Let the dummy read our server dir.
    const reader = new DummyVmadm({ log: createQuietLogger(), serverRoot: path.join(fx.root, 'servers'), sysinfo: identity(fx.serverUuid) });
    const loaded = (await promisify(reader.load.bind(reader))({ uuid } as never)) as unknown as Record<string, unknown>;
    const ours = fx.store.get(uuid)!;
    // hvm is derived on load by vmadm (from the brand), never stored: the dummy cannot show it.
    const { pid: _p1, zoneid: _z1, hvm, ...a } = ours as Vm;
    const { pid: _p2, zoneid: _z2, ...b } = loaded;
    expect(hvm).toBe(false);
    expect(b).not.toHaveProperty('hvm');
    expect(b).toEqual(JSON.parse(JSON.stringify(a)));
    expect(typeof loaded.pid).toBe('number');
    const all = (await promisify(reader.lookup.bind(reader))({} as never, {} as never)) as unknown as Vm[];
    expect(all.map((v) => v.uuid)).toEqual([uuid]);
  });

  it('a VM written by the dummy loads here with the same fields (its stale derived fields aside)', async () => {
    const uuid = newUuid();
    await d.create(payload(uuid));
    await d.update({ uuid, alias: 'theirs', set_tags: { x: '1' } });
    await d.stop({ uuid });
    // Hand the dummy's file to our store (same layout, another server dir).
    await fsp.copyFile(dummyFile(uuid), fx.fileOf(uuid));
    const st = await fsp.stat(dummyFile(uuid));
    await fsp.utimes(fx.fileOf(uuid), st.atime, st.mtime);
    const store = await fx.reopen();
    const ours = store.get(uuid)!;
    const theirs = await d.load({ uuid });
    // The dummy keeps the boot_timestamp and pid it persisted while running; a stopped VM
    // has neither.
    expect(theirs.boot_timestamp).toBeDefined();
    expect(theirs.pid).toBeDefined();
    for (const k of ['boot_timestamp', 'pid', 'zoneid']) expect(ours, k).not.toHaveProperty(k);
    const { boot_timestamp: _b, pid: _p, zoneid: _z, server_uuid: s1, ...t } = theirs;
    const { server_uuid: s2, ...o } = JSON.parse(JSON.stringify(ours)) as Record<string, unknown>;
    expect(s1).toBe(dummyServer);
    expect(s2).toBe(fx.serverUuid);
    // REAL_CN_LOAD_FIELDS: what vmload always shows, filled in for the dummy's file.
    expect(o).toMatchObject({ firewall_enabled: false, snapshots: [], hvm: false, zonedid: expect.any(Number) });
    exceptions(o, t, 'dummy file loaded here', {}, false);
    expect(o).toEqual(t);
    // ...and it can be changed and started here.
    const started = await store.start(uuid);
    expect(started).toMatchObject({ state: 'running', alias: 'theirs', tags: { role: 'web', x: '1' } });
  });
});

function jsonCopy<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}
