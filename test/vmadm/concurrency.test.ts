/**
 * Concurrent writes: many updates to one VM are all applied (none lost, no EEXIST on temp
 * files like the dummy), each is one event in order, and several VMs proceed side by side.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import { makeFixture, osPayload, recordEvents, type Fixture } from './helpers.js';

let fx: Fixture;
beforeEach(async () => {
  fx = await makeFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

describe('concurrent updates', () => {
  it('100 concurrent updates to one VM are all applied, on disk and in the index', async () => {
    const vm = await fx.store.create(osPayload());
    const rec = recordEvents(fx.store);
    const N = 100;
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        fx.store.update(vm.uuid, { set_tags: { [`t${i}`]: i }, set_customer_metadata: { [`m${i}`]: String(i) } }),
      ),
    );
    const want = Object.fromEntries(Array.from({ length: N }, (_, i) => [`t${i}`, i]));
    const final = fx.store.get(vm.uuid)!;
    expect(final.tags).toEqual(want);
    expect(Object.keys(final.customer_metadata!)).toHaveLength(N);
    const file = await fx.readFile(vm.uuid);
    expect(file.tags).toEqual(want);
    // One write and one event per update, in the order they were applied.
    expect(rec.events).toHaveLength(N);
    const sizes = rec.events.map((e) => Object.keys(e.vm.tags!).length);
    expect(sizes).toEqual(Array.from({ length: N }, (_, i) => i + 1));
    const lms = results.map((r) => Date.parse(r.last_modified!));
    expect(new Set(lms).size).toBe(N); // strictly increasing, so all distinct
    // no temp files left behind
    expect((await fsp.readdir(fx.vmsDir)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('mixed concurrent operations on one VM serialise cleanly', async () => {
    const vm = await fx.store.create(osPayload());
    const ops = await Promise.allSettled([
      fx.store.update(vm.uuid, { alias: 'a' }),
      fx.store.stop(vm.uuid),
      fx.store.update(vm.uuid, { set_tags: { x: 1 } }),
      fx.store.start(vm.uuid),
      fx.store.createSnapshot(vm.uuid, 'snap'),
      fx.store.reboot(vm.uuid),
      fx.store.update(vm.uuid, { cpu_cap: 100 }),
    ]);
    expect(ops.map((o) => o.status)).toEqual(Array(7).fill('fulfilled'));
    expect(fx.store.get(vm.uuid)).toMatchObject({ alias: 'a', state: 'running', tags: { x: 1 }, cpu_cap: 100 });
    expect(fx.store.get(vm.uuid)!.snapshots!.map((s) => s.name)).toEqual(['snap']);
  });

  it('many VMs updated concurrently each get all their changes', async () => {
    const vms = await Promise.all(Array.from({ length: 20 }, () => fx.store.create(osPayload())));
    await Promise.all(
      vms.flatMap((v) => Array.from({ length: 10 }, (_, i) => fx.store.update(v.uuid, { set_tags: { [`k${i}`]: v.uuid } }))),
    );
    for (const v of vms) {
      expect(Object.keys(fx.store.get(v.uuid)!.tags!)).toHaveLength(10);
      expect(Object.keys((await fx.readFile(v.uuid)).tags as object)).toHaveLength(10);
    }
  });

  it('a failing update does not block the next one on the same VM', async () => {
    const vm = await fx.store.create(osPayload());
    const [bad, good] = await Promise.allSettled([
      fx.store.update(vm.uuid, { ram: 'nonsense' }),
      fx.store.update(vm.uuid, { alias: 'fine' }),
    ]);
    expect(bad.status).toBe('rejected');
    expect(good.status).toBe('fulfilled');
    expect(fx.store.get(vm.uuid)!.alias).toBe('fine');
  });
});
