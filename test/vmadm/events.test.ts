/**
 * The per-server event stream: ready snapshot + stream with nothing lost or duplicated,
 * commit order, vminfod-style changes, read-after-write, listener isolation.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VmEvent } from '../../src/vmadm/types.js';
import { makeFixture, osPayload, recordEvents, type Fixture } from './helpers.js';

let fx: Fixture;
beforeEach(async () => {
  fx = await makeFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

describe('subscribe', () => {
  it('ready snapshot plus events cover every VM exactly once, even mid-burst', async () => {
    const N = 40;
    const creates = Array.from({ length: N }, (_, i) => fx.store.create(osPayload({ alias: `vm${i}` })));
    // Subscribe while the creates are in flight.
    await Promise.race(creates);
    const rec = recordEvents(fx.store);
    const all = await Promise.all(creates);
    const fromReady = new Set(rec.ready.keys());
    const fromEvents = rec.events.filter((e) => e.type === 'create').map((e) => e.uuid);
    for (const u of fromEvents) expect(fromReady.has(u), u).toBe(false);
    expect(new Set(fromEvents).size).toBe(fromEvents.length);
    expect(new Set([...fromReady, ...fromEvents])).toEqual(new Set(all.map((v) => v.uuid)));
    expect(fromReady.size).toBeGreaterThan(0);
  });

  it('ready includes DNI VMs; events arrive in commit order with increasing seq', async () => {
    const dni = await fx.store.create(osPayload({ do_not_inventory: true }));
    const rec = recordEvents(fx.store);
    expect(rec.ready.has(dni.uuid)).toBe(true);
    const a = await fx.store.create(osPayload({ alias: 'a' }));
    await fx.store.update(a.uuid, { alias: 'b' });
    await fx.store.stop(a.uuid);
    await fx.store.delete(a.uuid);
    expect(rec.events.map((e) => e.type)).toEqual(['create', 'modify', 'modify', 'delete']);
    const seqs = rec.events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(new Set(seqs).size).toBe(seqs.length);
    for (const e of rec.events) {
      expect(e).toMatchObject({ uuid: a.uuid, zonename: a.uuid });
      expect(Number.isNaN(Date.parse(e.date))).toBe(false);
    }
    expect(rec.events[3]!.vm).toMatchObject({ uuid: a.uuid, state: 'stopped', alias: 'b' }); // last VM
  });

  it('modify carries vminfod-style changes', async () => {
    const vm = await fx.store.create(osPayload({ tags: { role: 'web' } }));
    const rec = recordEvents(fx.store);
    const mac = vm.nics![0]!.mac;
    await fx.store.update(vm.uuid, { alias: 'renamed', set_tags: { tier: '1' }, remove_tags: ['role'], update_nics: [{ mac, mtu: 9000 }] });
    const changes = rec.events[0]!.changes!;
    expect(changes).toContainEqual({ path: ['alias'], prettyPath: 'alias', action: 'changed', oldValue: 'web0', newValue: 'renamed' });
    expect(changes).toContainEqual({ path: ['tags', 'role'], prettyPath: 'tags.role', action: 'removed', oldValue: 'web' });
    expect(changes).toContainEqual({ path: ['tags', 'tier'], prettyPath: 'tags.tier', action: 'added', newValue: '1' });
    expect(changes).toContainEqual(
      expect.objectContaining({ path: ['nics', null, 'mtu'], prettyPath: 'nics.*.mtu', action: 'added', newValue: 9000, ident: mac }),
    );
    expect(changes.map((c) => c.path[0])).toContain('last_modified');
    expect(rec.events[0]!.changes!.every((c) => ['added', 'removed', 'changed'].includes(c.action))).toBe(true);
  });

  it('a write resolves after the index changed and its event was delivered', async () => {
    const vm = await fx.store.create(osPayload());
    const seen: string[] = [];
    fx.store.subscribe((ev) => {
      // During dispatch the index already shows the change.
      seen.push(`${ev.vm.alias}:${fx.store.get(vm.uuid)?.alias}`);
    });
    const out = await fx.store.update(vm.uuid, { alias: 'after' });
    expect(seen).toEqual(['after:after']);
    expect(out.alias).toBe('after');
    expect(fx.store.get(vm.uuid)!.alias).toBe('after');
    expect((await fx.store.load(vm.uuid)).alias).toBe('after');
  });

  it('a throwing listener breaks neither the write nor other listeners', async () => {
    fx.store.subscribe(() => {
      throw new Error('listener bug');
    });
    const rec = recordEvents(fx.store);
    const vm = await fx.store.create(osPayload());
    await fx.store.update(vm.uuid, { alias: 'still works' });
    expect(rec.events.map((e) => e.type)).toEqual(['create', 'modify']);
    expect(fx.store.get(vm.uuid)!.alias).toBe('still works');
  });

  it('unsubscribe stops delivery; the same function may subscribe twice', async () => {
    const got: VmEvent[] = [];
    const l = (e: VmEvent) => got.push(e);
    const s1 = fx.store.subscribe(l);
    const s2 = fx.store.subscribe(l);
    await fx.store.create(osPayload());
    expect(got).toHaveLength(2);
    s1.unsubscribe();
    s2.unsubscribe();
    await fx.store.create(osPayload());
    expect(got).toHaveLength(2);
  });

  it('event VMs are the frozen index objects', async () => {
    const rec = recordEvents(fx.store);
    const vm = await fx.store.create(osPayload());
    expect(rec.events[0]!.vm).toBe(fx.store.get(vm.uuid));
    expect(Object.isFrozen(rec.events[0]!.vm.nics![0])).toBe(true);
  });
});
