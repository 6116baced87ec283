/**
 * The index and the disk: opening a data dir (bad files, temp files, files written by the
 * original dummy), reopening, hand edits through rescan() and the opt-in watch, and the
 * fleet-level Vmadm (open/close servers).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { newUuid } from '../../src/common/uuid.js';
import { createQuietLogger } from '../../src/common/log.js';
import { Vmadm } from '../../src/vmadm/index.js';
import { expectReject, identity, makeFixture, osPayload, recordEvents, type Fixture } from './helpers.js';

let fx: Fixture;
beforeEach(async () => {
  fx = await makeFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

async function writeRaw(uuid: string, obj: unknown): Promise<void> {
  await fsp.writeFile(fx.fileOf(uuid), typeof obj === 'string' ? obj : `${JSON.stringify(obj, null, 2)}\n`);
}

describe('opening a data dir', () => {
  it('skips unreadable files and ignores other files, touching none of them; removes our crash leftovers', async () => {
    const good = newUuid();
    await writeRaw(good, { uuid: good, brand: 'joyent', state: 'stopped', nics: [] });
    const names: Record<string, string> = {
      [`${newUuid()}.json`]: '{"uuid": "trunc',
      [`${newUuid()}.json`]: '',
      [`${newUuid()}.json`]: '[1,2]',
      [`${newUuid()}.json`]: JSON.stringify({ uuid: newUuid(), brand: 'joyent' }), // uuid mismatch
      [`${good}.json.4242`]: '{"dummy temp": true}',
      'README.txt': 'hello',
    };
    for (const [n, t] of Object.entries(names)) await fsp.writeFile(path.join(fx.vmsDir, n), t);
    const leftover = path.join(fx.vmsDir, `.${good}.json.123.abcdef.tmp`);
    await fsp.writeFile(leftover, '{"half": ');
    const store = await fx.reopen();
    await expect(fsp.access(leftover)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(store.size).toBe(1);
    expect(store.get(good)?.state).toBe('stopped');
    for (const [n, t] of Object.entries(names)) expect(await fsp.readFile(path.join(fx.vmsDir, n), 'utf8')).toBe(t);
  });

  it('loads a file written by the original dummy, dropping its stale derived fields', async () => {
    const uuid = newUuid();
    const stale = {
      uuid,
      brand: 'joyent-minimal',
      state: 'stopped',
      autoboot: false,
      nics: [],
      last_modified: '2020-01-01T00:00:00.000Z',
      pid: 4242,
      zoneid: 4242,
      boot_timestamp: '2020-01-01T00:00:00.000Z',
      exit_status: 0,
      exit_timestamp: '2020-01-02T00:00:00.000Z',
      server_uuid: newUuid(),
      datacenter_name: 'elsewhere',
      platform_buildstamp: 'old',
      zonename: uuid,
      zone_state: 'stopped',
    };
    await writeRaw(uuid, stale);
    const when = new Date('2024-05-06T07:08:09.123Z');
    await fsp.utimes(fx.fileOf(uuid), when, when);
    const store = await fx.reopen();
    const vm = store.get(uuid)!;
    expect(vm).toMatchObject({
      last_modified: when.toISOString(),
      server_uuid: fx.serverUuid,
      datacenter_name: 'coal',
      zone_state: 'stopped',
      exit_timestamp: '2020-01-02T00:00:00.000Z',
    });
    for (const k of ['pid', 'zoneid', 'boot_timestamp']) expect(vm, k).not.toHaveProperty(k);
    await store.update(uuid, { alias: 'now ours' });
    const file = await fx.readFile(uuid);
    for (const k of ['last_modified', 'pid', 'zoneid', 'server_uuid', 'datacenter_name', 'platform_buildstamp', 'zonename', 'zone_state', 'boot_timestamp']) {
      expect(file, k).not.toHaveProperty(k);
    }
  });

  it('reopening gives the same loaded VMs (zoneids are reassigned at open)', async () => {
    const a = await fx.store.create(osPayload());
    const b = await fx.store.create(osPayload({ autoboot: false }));
    await fx.store.update(a.uuid, { set_tags: { x: 1 } });
    const before = [fx.store.get(a.uuid)!, fx.store.get(b.uuid)!];
    const store = await fx.reopen();
    const strip = ({ zoneid: _z, ...rest }: Record<string, unknown>) => rest;
    expect(strip(store.get(a.uuid)!)).toEqual(strip(before[0]!));
    expect(store.get(b.uuid)).toEqual(before[1]);
    expect(typeof store.get(a.uuid)!.zoneid).toBe('number');
  });

  it('reads come from the index: a file deleted by hand is still loaded until rescan', async () => {
    const vm = await fx.store.create(osPayload());
    await fsp.unlink(fx.fileOf(vm.uuid));
    expect((await fx.store.load(vm.uuid)).uuid).toBe(vm.uuid);
    expect(await fx.store.lookupUuids({ uuid: vm.uuid })).toEqual([vm.uuid]);
    await fx.store.rescan();
    expect(await fx.store.exists(vm.uuid)).toBe(false);
  });
});

describe('hand edits via rescan()', () => {
  it('added, changed and removed files become create, modify and delete events', async () => {
    const kept = await fx.store.create(osPayload({ alias: 'kept' }));
    const edited = await fx.store.create(osPayload({ alias: 'edited' }));
    const removed = await fx.store.create(osPayload({ alias: 'removed' }));
    const rec = recordEvents(fx.store);

    const added = newUuid();
    await writeRaw(added, { uuid: added, brand: 'joyent', state: 'running', alias: 'by hand', nics: [] });
    const file = await fx.readFile(edited.uuid);
    await writeRaw(edited.uuid, { ...file, alias: 'edited by hand', cpu_cap: 800 });
    await fsp.unlink(fx.fileOf(removed.uuid));
    // A touch without a content change is not a change.
    const now = new Date();
    await fsp.utimes(fx.fileOf(kept.uuid), now, now);

    await fx.store.rescan();
    const byType = (t: string) => rec.events.filter((e) => e.type === t).map((e) => e.uuid);
    expect(byType('create')).toEqual([added]);
    expect(byType('modify')).toEqual([edited.uuid]);
    expect(byType('delete')).toEqual([removed.uuid]);
    const mod = rec.events.find((e) => e.type === 'modify')!;
    expect(mod.changes).toContainEqual({ path: ['alias'], prettyPath: 'alias', action: 'changed', oldValue: 'edited', newValue: 'edited by hand' });
    expect(Date.parse(mod.vm.last_modified!)).toBeGreaterThan(Date.parse(edited.last_modified!));
    expect(fx.store.get(added)).toMatchObject({ alias: 'by hand', zone_state: 'running', server_uuid: fx.serverUuid });

    // Nothing changed since: a second rescan is silent.
    const n = rec.events.length;
    await fx.store.rescan();
    expect(rec.events.length).toBe(n);
  });

  it('a hand edit that breaks the file leaves the VM as it was', async () => {
    const vm = await fx.store.create(osPayload());
    await writeRaw(vm.uuid, '{ not json');
    const rec = recordEvents(fx.store);
    await fx.store.rescan();
    expect(rec.events).toEqual([]);
    expect(fx.store.get(vm.uuid)!.alias).toBe('web0');
  });

  it('the opt-in watch notices hand edits without a rescan', async () => {
    const w = await makeFixture({ watch: true });
    try {
      const vm = await w.store.create(osPayload());
      const got: string[] = [];
      w.store.subscribe((e) => got.push(`${e.type}:${e.vm.alias}`));
      const file = await w.readFile(vm.uuid);
      await fsp.writeFile(w.fileOf(vm.uuid), `${JSON.stringify({ ...file, alias: 'watched' }, null, 2)}\n`);
      for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(got).toEqual(['modify:watched']);
    } finally {
      await w.cleanup();
    }
  });
});

describe('Vmadm (fleet)', () => {
  it('opens each server once, closes servers, and refuses bad identities', async () => {
    const log = createQuietLogger();
    const vmadm = new Vmadm({ root: fx.root, log });
    const s = newUuid();
    const [a, b] = await Promise.all([vmadm.openServer(s, identity(s)), vmadm.openServer(s, identity(s))]);
    expect(a).toBe(b);
    expect(vmadm.server(s)).toBe(a);
    expect(a.serverUuid).toBe(s);
    const vm = await a.create(osPayload());
    expect(await fsp.stat(path.join(fx.root, 'servers', s, 'vms', `${vm.uuid}.json`))).toBeTruthy();
    await vmadm.closeServer(s);
    expect(vmadm.server(s)).toBeUndefined();
    await expect(a.update(vm.uuid, { alias: 'x' })).rejects.toMatchObject({ code: 'ServiceUnavailable' });
    const again = await vmadm.openServer(s, identity(s));
    expect(again.get(vm.uuid)?.uuid).toBe(vm.uuid);
    await expect(vmadm.openServer('../etc', identity(s))).rejects.toMatchObject({ code: 'ValidationFailed' });
    await expect(vmadm.openServer(newUuid(), identity(s))).rejects.toMatchObject({ code: 'ValidationFailed' });
    const e = await expectReject(vmadm.openServer(s, { UUID: s } as never));
    expect(e.message).toContain('Datacenter Name');
    await vmadm.close();
    expect(vmadm.server(s)).toBeUndefined();
  });

  it('close() waits for writes in flight', async () => {
    const vms = Array.from({ length: 10 }, () => fx.store.create(osPayload()));
    await fx.vmadm.close();
    const created = await Promise.all(vms);
    for (const v of created) expect((await fx.readFile(v.uuid)).uuid).toBe(v.uuid);
  });
});
