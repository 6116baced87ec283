/**
 * start / stop / reboot / kill / reprovision / delete, snapshots, info and sysrq: state
 * and zone_state transitions, boot and exit data, pid/zoneid, the intermediate states
 * consumers see as events, and vmadm's errors. End states follow SmartOS: smartos-live
 * src/vm/sbin/vmadm.js (start/stop exit 0 on EALREADYRUNNING/ENOTRUNNING) and
 * src/vm/node_modules/VM.js (stop, rollback_snapshot, reprovision), vmload (snapshots).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import { newUuid } from '../../src/common/uuid.js';
import type { Vm } from '../../src/vmadm/types.js';
import { bhyvePayload, expectReject, makeFixture, osPayload, recordEvents, type Fixture } from './helpers.js';

let fx: Fixture;
let vm: Vm;
beforeEach(async () => {
  fx = await makeFixture();
  vm = await fx.store.create(osPayload());
});
afterEach(async () => {
  await fx.cleanup();
});

const states = (evs: { vm: Vm }[]) => evs.map((e) => `${e.vm.state}/${e.vm.zone_state}`);

describe('start and stop', () => {
  it('stop: stopped, autoboot off, exit data, no boot data, pid or zoneid', async () => {
    const out = await fx.store.stop(vm.uuid);
    expect(out).toMatchObject({ state: 'stopped', zone_state: 'stopped', autoboot: false, exit_status: 0 });
    expect(Date.parse(out.exit_timestamp!)).toBeGreaterThanOrEqual(Date.parse(vm.boot_timestamp!));
    for (const k of ['boot_timestamp', 'pid', 'zoneid']) expect(out, k).not.toHaveProperty(k);
    const file = await fx.readFile(vm.uuid);
    expect(file).toMatchObject({ state: 'stopped', exit_status: 0 });
    expect(file).not.toHaveProperty('boot_timestamp');
  });

  it('start after stop: a fresh boot_timestamp, new pid and zoneid, autoboot on', async () => {
    const stopped = await fx.store.stop(vm.uuid, { force: true });
    const started = await fx.store.start(vm.uuid);
    expect(started).toMatchObject({ state: 'running', zone_state: 'running', autoboot: true });
    expect(Date.parse(started.boot_timestamp!)).toBeGreaterThanOrEqual(Date.parse(stopped.exit_timestamp!));
    expect(started.boot_timestamp).not.toBe(vm.boot_timestamp);
    expect(started.zoneid).not.toBe(vm.zoneid);
    expect(started.exit_timestamp).toBe(stopped.exit_timestamp); // the last exit stays known
    // pid and zoneid stay put while the VM keeps running
    const updated = await fx.store.update(vm.uuid, { alias: 'x' });
    expect(updated.pid).toBe(started.pid);
    expect(updated.zoneid).toBe(started.zoneid);
  });

  it('starting a running VM changes nothing and succeeds, as `vmadm start` exits 0', async () => {
    const rec = recordEvents(fx.store);
    const out = await fx.store.start(vm.uuid);
    expect(out).toMatchObject({ state: 'running', boot_timestamp: vm.boot_timestamp, last_modified: vm.last_modified });
    expect(rec.events).toEqual([]);
  });

  it('stopping a stopped VM succeeds: a plain stop still sets autoboot=false, -F changes nothing', async () => {
    await fx.store.kill(vm.uuid, { signal: 'SIGKILL' }); // halted, autoboot still true
    const rec = recordEvents(fx.store);
    const forced = await fx.store.stop(vm.uuid, { force: true });
    expect(forced).toMatchObject({ state: 'stopped', autoboot: true });
    expect(rec.events).toEqual([]);
    const plain = await fx.store.stop(vm.uuid);
    expect(plain).toMatchObject({ state: 'stopped', autoboot: false, exit_status: 137 });
    expect(rec.events.map((e) => e.changes!.map((c) => c.prettyPath).filter((p) => p !== 'last_modified'))).toEqual([['autoboot']]);
    await fx.store.stop(vm.uuid);
    expect(rec.events).toHaveLength(1);
  });

  it('refuses to start a VM that is neither stopped nor running', async () => {
    await fx.store.reprovision(vm.uuid, { image_uuid: newUuid() });
    const file = await fx.readFile(vm.uuid);
    await fsp.writeFile(fx.fileOf(vm.uuid), `${JSON.stringify({ ...file, state: 'failed' }, null, 2)}\n`);
    const store = await fx.reopen();
    await expect(store.start(vm.uuid)).rejects.toMatchObject({ message: 'Cannot start vm from state "failed", must be "stopped".' });
  });
});

describe('reboot', () => {
  it('goes shutting_down → stopped → running as three events, ending with a new boot', async () => {
    const rec = recordEvents(fx.store);
    const out = await fx.store.reboot(vm.uuid);
    expect(states(rec.events)).toEqual(['shutting_down/shutting_down', 'stopped/stopped', 'running/running']);
    expect(out.state).toBe('running');
    expect(out.autoboot).toBe(true);
    expect(out.boot_timestamp).not.toBe(vm.boot_timestamp);
    expect(rec.events[1]!.vm.pid).toBeUndefined();
    await fx.store.stop(vm.uuid);
    await expect(fx.store.reboot(vm.uuid)).rejects.toMatchObject({
      code: 'Conflict',
      message: 'Cannot reboot vm from state "stopped", must be "running"',
    });
  });

  it('a stopped docker container is started by a reboot (VM.js reboot)', async () => {
    const d = await fx.store.create(osPayload({ docker: true, autoboot: false }));
    const out = await fx.store.reboot(d.uuid);
    expect(out).toMatchObject({ state: 'running', autoboot: true });
  });
});

describe('kill', () => {
  it('SIGKILL halts the zone with exit status 137; autoboot unchanged', async () => {
    const out = await fx.store.kill(vm.uuid, { signal: 'SIGKILL' });
    expect(out).toMatchObject({ state: 'stopped', exit_status: 137, autoboot: true });
    await expect(fx.store.kill(vm.uuid)).rejects.toMatchObject({ message: `Cannot find running init PID for VM ${vm.uuid}` });
  });

  it('a non-terminating signal changes nothing; bad signals are refused', async () => {
    const rec = recordEvents(fx.store);
    const out = await fx.store.kill(vm.uuid, { signal: 'USR1' });
    expect(out.state).toBe('running');
    expect(rec.events).toEqual([]);
    await expect(fx.store.kill(vm.uuid, { signal: 'SIGNOPE' })).rejects.toMatchObject({ code: 'ValidationFailed' });
    expect((await fx.store.kill(vm.uuid, { signal: '15' })).exit_status).toBe(143);
  });
});

describe('reprovision', () => {
  it('a running VM: stopped first (VM.stop), then provisioning with the new image, running again with a new boot', async () => {
    const image = newUuid();
    const rec = recordEvents(fx.store);
    const out = await fx.store.reprovision(vm.uuid, { image_uuid: image });
    expect(states(rec.events)).toEqual([
      'shutting_down/shutting_down',
      'stopped/stopped',
      'provisioning/installed',
      'provisioning/installed',
      'provisioning/running',
      'running/running',
    ]);
    expect(rec.events[3]!.changes!.map((c) => c.prettyPath)).toContain('image_uuid');
    expect(out).toMatchObject({ state: 'running', image_uuid: image });
    expect(out.boot_timestamp).not.toBe(vm.boot_timestamp);
    expect(await fx.readFile(vm.uuid)).not.toHaveProperty('zone_state');
  });

  it('a stopped VM ends running too (VM.js reprovision installs with autoboot); bad image uuid refused', async () => {
    await fx.store.stop(vm.uuid);
    const image = newUuid();
    const rec = recordEvents(fx.store);
    const out = await fx.store.reprovision(vm.uuid, { image_uuid: image });
    expect(states(rec.events)).toEqual(['provisioning/installed', 'provisioning/installed', 'provisioning/running', 'running/running']);
    expect(out).toMatchObject({ state: 'running', autoboot: true, image_uuid: image });
    await expect(fx.store.reprovision(vm.uuid, { image_uuid: 'nope' })).rejects.toMatchObject({ code: 'ValidationFailed' });
  });

  it("refuses kvm and indestructible_zoneroot VMs with VM.js's messages", async () => {
    const k = await fx.store.create(bhyvePayload({ brand: 'kvm' }));
    await expect(fx.store.reprovision(k.uuid, { image_uuid: newUuid() })).rejects.toMatchObject({
      message: 'brand "kvm" does not yet support reprovision',
    });
    await fx.store.update(vm.uuid, { indestructible_zoneroot: true });
    await expect(fx.store.reprovision(vm.uuid, { image_uuid: newUuid() })).rejects.toMatchObject({
      message: 'indestructible_zoneroot is set, cannot reprovision',
    });
  });
});

describe('delete', () => {
  it('removes the file and the VM; a second delete is VmNotFound', async () => {
    const rec = recordEvents(fx.store);
    await fx.store.delete(vm.uuid);
    await expect(fsp.access(fx.fileOf(vm.uuid))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await fx.store.exists(vm.uuid, { include_dni: true })).toBe(false);
    expect(rec.events.map((e) => e.type)).toEqual(['delete']);
    expect(rec.events[0]!.vm.uuid).toBe(vm.uuid);
    await expect(fx.store.delete(vm.uuid)).rejects.toMatchObject({ restCode: 'VmNotFound' });
  });

  it('refuses while indestructible_zoneroot or indestructible_delegated is set', async () => {
    await fx.store.update(vm.uuid, { indestructible_zoneroot: true });
    await expect(fx.store.delete(vm.uuid)).rejects.toMatchObject({ message: 'indestructible_zoneroot is set, cannot delete' });
    await fx.store.update(vm.uuid, { indestructible_zoneroot: false, indestructible_delegated: true });
    await expect(fx.store.delete(vm.uuid)).rejects.toMatchObject({ message: 'indestructible_delegated is set, cannot delete' });
    await fx.store.update(vm.uuid, { indestructible_delegated: false });
    await fx.store.delete(vm.uuid);
    expect(fx.store.size).toBe(0);
  });

  it('a file removed by hand does not block the delete', async () => {
    await fsp.unlink(fx.fileOf(vm.uuid));
    await fx.store.delete(vm.uuid);
    expect(fx.store.get(vm.uuid)).toBeUndefined();
  });
});

describe('every operation on a missing VM gives VmNotFound', () => {
  it('with the vmadm message', async () => {
    const m = newUuid();
    const ops: Promise<unknown>[] = [
      fx.store.start(m),
      fx.store.stop(m),
      fx.store.reboot(m),
      fx.store.kill(m),
      fx.store.reprovision(m, { image_uuid: newUuid() }),
      fx.store.delete(m),
      fx.store.update(m, {}),
      fx.store.createSnapshot(m, 's'),
      fx.store.deleteSnapshot(m, 's'),
      fx.store.rollbackSnapshot(m, 's'),
      fx.store.info(m),
      fx.store.sysrq(m, 'nmi'),
    ];
    for (const p of ops) {
      await expect(p).rejects.toMatchObject({ code: 'VmNotFound', restCode: 'VmNotFound', message: `vmadm load ${m} failed: No such zone` });
    }
  });
});

describe('snapshots', () => {
  it('create, list newest first with size and whole-second created_at, refuse duplicates and bad names', async () => {
    const a = await fx.store.createSnapshot(vm.uuid, 'first');
    const b = await fx.store.createSnapshot(vm.uuid, 'second');
    expect(a.snapshots!.map((s) => s.name)).toEqual(['first']);
    // Both may fall in one second: same-second snapshots keep the order they were taken in.
    const names = b.snapshots!.map((s) => s.name);
    if (b.snapshots![0]!.created_at === b.snapshots![1]!.created_at) expect(names).toEqual(['first', 'second']);
    else expect(names).toEqual(['second', 'first']);
    for (const snap of b.snapshots!) {
      expect(snap.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
      expect(snap.size).toBe(0);
    }
    await expect(fx.store.createSnapshot(vm.uuid, 'first')).rejects.toMatchObject({ message: 'snapshot with name "first" already exists.' });
    await expect(fx.store.createSnapshot(vm.uuid, 'bad name!')).rejects.toMatchObject({ code: 'ValidationFailed' });
  });

  it('lists snapshots taken in later seconds first (vmload sorts by created_at, newest first)', async () => {
    let t = Date.parse('2024-05-01T10:00:00.250Z');
    // A clock we control: snapshots one second apart, two of them in the same second.
    const clocked = await makeFixture({ now: () => t });
    const v = await clocked.store.create(osPayload());
    for (const [name, dt] of [['s1', 0], ['s2', 1000], ['s3', 300], ['s4', 1000]] as const) {
      t += dt;
      await clocked.store.createSnapshot(v.uuid, name);
    }
    const snaps = clocked.store.get(v.uuid)!.snapshots!;
    expect(snaps.map((s) => [s.name, s.created_at])).toEqual([
      ['s4', '2024-05-01T10:00:02.000Z'],
      ['s2', '2024-05-01T10:00:01.000Z'],
      ['s3', '2024-05-01T10:00:01.000Z'],
      ['s1', '2024-05-01T10:00:00.000Z'],
    ]);
    // zfs rollback -r: everything taken after s2 goes, s3 (same second, later) too.
    const out = await clocked.store.rollbackSnapshot(v.uuid, 's2');
    expect(out.snapshots!.map((s) => s.name)).toEqual(['s2', 's1']);
    await clocked.cleanup();
  });

  it('delete, with the real error for a missing snapshot', async () => {
    await fx.store.createSnapshot(vm.uuid, 's1');
    const out = await fx.store.deleteSnapshot(vm.uuid, 's1');
    expect(out.snapshots).toEqual([]);
    const e = await expectReject(fx.store.deleteSnapshot(vm.uuid, 's1'));
    expect(e).toMatchObject({ code: 'SnapshotNotFound', statusCode: 404, message: `No snapshot named "s1" for ${vm.uuid}` });
  });

  it('rollback drops newer snapshots and always ends with the VM started (VM.js rollback_snapshot)', async () => {
    for (const n of ['a', 'b', 'c']) await fx.store.createSnapshot(vm.uuid, n);
    const rec = recordEvents(fx.store);
    const out = await fx.store.rollbackSnapshot(vm.uuid, 'b');
    expect(out.snapshots!.map((s) => s.name).sort()).toEqual(['a', 'b']);
    expect(states(rec.events)).toEqual(['stopped/stopped', 'stopped/stopped', 'running/running']);
    expect(out).toMatchObject({ state: 'running', autoboot: true });
    await expect(fx.store.rollbackSnapshot(vm.uuid, 'c')).rejects.toMatchObject({ message: `No snapshot named "c" for ${vm.uuid}` });
    await fx.store.stop(vm.uuid);
    const started = await fx.store.rollbackSnapshot(vm.uuid, 'a');
    expect(started).toMatchObject({ state: 'running', autoboot: true });
    expect(started.snapshots!.map((s) => s.name)).toEqual(['a']);
  });

  it('kvm VMs cannot be snapshotted', async () => {
    const k = await fx.store.create(bhyvePayload({ brand: 'kvm' }));
    await expect(fx.store.createSnapshot(k.uuid, 's')).rejects.toMatchObject({ message: 'snapshots for kvm VMs currently unsupported' });
  });
});

describe('info and sysrq', () => {
  it('OS VMs have no info types and no sysrq', async () => {
    await expect(fx.store.info(vm.uuid)).rejects.toMatchObject({ message: 'no info types supported for brand joyent-minimal' });
    await expect(fx.store.sysrq(vm.uuid, 'nmi')).rejects.toMatchObject({ message: expect.stringContaining('only supported for VMs') });
  });

  it('bhyve: vnc info and nmi; kvm: all types and screenshot; state and type checks', async () => {
    const h = await fx.store.create(bhyvePayload());
    const info = await fx.store.info(h.uuid);
    expect(Object.keys(info)).toEqual(['vnc']);
    expect(info.vnc).toMatchObject({ host: expect.any(String), port: expect.any(Number) });
    expect(await fx.store.info(h.uuid, ['vnc'])).toEqual(info);
    await expect(fx.store.info(h.uuid, ['spice'])).rejects.toMatchObject({ message: expect.stringContaining('unknown info type spice') });
    await fx.store.sysrq(h.uuid, 'nmi');
    await expect(fx.store.sysrq(h.uuid, 'screenshot')).rejects.toMatchObject({ message: expect.stringContaining('Invalid sysrq') });
    const k = await fx.store.create(bhyvePayload({ brand: 'kvm' }));
    const kinfo = await fx.store.info(k.uuid);
    expect(Object.keys(kinfo).sort()).toEqual(['block', 'blockstats', 'chardev', 'cpus', 'kvm', 'pci', 'spice', 'status', 'version', 'vnc']);
    expect(kinfo.cpus).toHaveLength(2);
    await fx.store.sysrq(k.uuid, 'screenshot');
    await fx.store.stop(h.uuid);
    await expect(fx.store.info(h.uuid)).rejects.toMatchObject({ message: expect.stringContaining('from state "stopped"') });
    await expect(fx.store.sysrq(h.uuid, 'nmi')).rejects.toMatchObject({ message: expect.stringContaining('from state "stopped"') });
  });
});
