/**
 * load / exists / get / list / lookup: fields, include_dni, nested filters, regexes,
 * numeric comparisons, uuids vs objects, and who may change the returned objects.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuid } from '../../src/common/uuid.js';
import type { Vm } from '../../src/vmadm/types.js';
import { bhyvePayload, expectReject, makeFixture, osPayload, type Fixture } from './helpers.js';

let fx: Fixture;
let web: Vm;
let db: Vm;
let hidden: Vm;
let hvm: Vm;

beforeAll(async () => {
  fx = await makeFixture();
  web = await fx.store.create(osPayload({ alias: 'web0', tags: { role: 'web', 'a.b': 'dotted' }, ram: 512 }));
  db = await fx.store.create(
    osPayload({
      alias: 'db0',
      ram: 4096,
      autoboot: false,
      tags: { role: 'db' },
      customer_metadata: { 'user-script': 'echo hi' },
      nics: [
        { mac: '0:1:2:3:4:5', ip: '10.0.0.2', netmask: '255.255.255.0', nic_tag: 'admin' },
        { ip: '203.0.113.9', netmask: '255.255.255.0', nic_tag: 'external', primary: true },
      ],
    }),
  );
  hidden = await fx.store.create(osPayload({ alias: 'hidden', do_not_inventory: true }));
  hvm = await fx.store.create(bhyvePayload({ alias: 'hvm0' }));
});
afterAll(async () => {
  await fx.cleanup();
});

const uuidsOf = (vms: Vm[]) => vms.map((v) => v.uuid).sort();

describe('load', () => {
  it('returns the VM, and VmNotFound with restCode for a missing one', async () => {
    expect((await fx.store.load(web.uuid)).alias).toBe('web0');
    const missing = newUuid();
    const e = await expectReject(fx.store.load(missing));
    expect(e).toMatchObject({
      code: 'VmNotFound',
      restCode: 'VmNotFound',
      statusCode: 404,
      message: `vmadm load ${missing} failed: No such zone`,
    });
  });

  it('limits to fields', async () => {
    const vm = await fx.store.load(web.uuid, { fields: ['uuid', 'state', 'nope'] });
    expect(vm).toEqual({ uuid: web.uuid, state: 'running' });
  });

  it('hides do_not_inventory VMs unless include_dni', async () => {
    await expect(fx.store.load(hidden.uuid)).rejects.toMatchObject({ restCode: 'VmNotFound' });
    expect((await fx.store.load(hidden.uuid, { include_dni: true })).alias).toBe('hidden');
    expect(await fx.store.exists(hidden.uuid)).toBe(false);
    expect(await fx.store.exists(hidden.uuid, { include_dni: true })).toBe(true);
    expect(await fx.store.exists(newUuid(), { include_dni: true })).toBe(false);
    expect(fx.store.get(hidden.uuid)).toBeUndefined();
    expect(fx.store.get(hidden.uuid, { include_dni: true })?.alias).toBe('hidden');
  });

  it('load returns a copy the caller may change; get/list share frozen objects', async () => {
    const copy = await fx.store.load(web.uuid);
    copy.alias = 'changed';
    (copy.nics![0] as Record<string, unknown>).ip = '1.2.3.4';
    expect((await fx.store.load(web.uuid)).alias).toBe('web0');
    expect(fx.store.get(web.uuid)!.nics![0]!.ip).toBe('10.99.99.40');
    const shared = fx.store.get(web.uuid)!;
    expect(Object.isFrozen(shared)).toBe(true);
    expect(() => {
      (shared as Record<string, unknown>).alias = 'x';
    }).toThrow(TypeError);
  });

  it('list and size count DNI VMs only when asked', () => {
    expect(fx.store.size).toBe(4);
    expect(fx.store.list().length).toBe(3);
    expect(fx.store.list({ include_dni: true }).length).toBe(4);
    expect(fx.store.list({ fields: ['uuid'] }).every((v) => Object.keys(v).length === 1)).toBe(true);
  });
});

describe('lookup', () => {
  it('with no search returns every visible VM', async () => {
    expect(uuidsOf(await fx.store.lookup())).toEqual([web.uuid, db.uuid, hvm.uuid].sort());
    expect(uuidsOf(await fx.store.lookup({}, { include_dni: true }))).toEqual([web.uuid, db.uuid, hvm.uuid, hidden.uuid].sort());
  });

  it('matches plain fields as strings, several filters all apply', async () => {
    expect(await fx.store.lookupUuids({ alias: 'db0' })).toEqual([db.uuid]);
    expect(await fx.store.lookupUuids({ state: 'stopped', brand: 'joyent-minimal' })).toEqual([db.uuid]);
    expect(await fx.store.lookupUuids({ max_physical_memory: 4096 })).toEqual([db.uuid]);
    expect(await fx.store.lookupUuids({ max_physical_memory: '4096' })).toEqual([db.uuid]);
    expect(await fx.store.lookupUuids({ autoboot: false })).toEqual([db.uuid]);
    expect(await fx.store.lookupUuids({ alias: 'db0', state: 'running' })).toEqual([]);
  });

  it('matches nested fields: map keys and any array element', async () => {
    expect(await fx.store.lookupUuids({ 'tags.role': 'web' })).toEqual([web.uuid]);
    expect(await fx.store.lookupUuids({ 'tags.a.b': 'dotted' })).toEqual([web.uuid]);
    expect(await fx.store.lookupUuids({ 'customer_metadata.user-script': 'echo hi' })).toEqual([db.uuid]);
    expect(await fx.store.lookupUuids({ 'nics.*.ip': '203.0.113.9' })).toEqual([db.uuid]);
    expect(await fx.store.lookupUuids({ 'nics.0.ip': '203.0.113.9' })).toEqual([]);
    expect(await fx.store.lookupUuids({ 'nics.1.ip': '203.0.113.9' })).toEqual([db.uuid]);
    expect(await fx.store.lookupUuids({ 'nics.*.mac': '00:01:02:03:04:05' })).toEqual([db.uuid]);
    expect(await fx.store.lookupUuids({ 'nics.*.mac': '0:1:2:3:4:5' })).toEqual([db.uuid]);
    expect(await fx.store.lookupUuids({ 'disks.*.size': 20480 })).toEqual([hvm.uuid]);
    expect(await fx.store.lookupUuids({ 'tags.nope': 'x' })).toEqual([]);
  });

  it('supports ~regex (case-insensitive) and numeric comparisons', async () => {
    expect((await fx.store.lookupUuids({ alias: '~^(WEB|db)' })).sort()).toEqual([web.uuid, db.uuid].sort());
    expect(await fx.store.lookupUuids({ 'nics.*.ip': '~^203\\.' })).toEqual([db.uuid]);
    expect(await fx.store.lookupUuids({ max_physical_memory: '>=4096' })).toEqual([db.uuid]);
    expect((await fx.store.lookupUuids({ max_physical_memory: '<4096' })).sort()).toEqual([web.uuid, hvm.uuid].sort());
    expect(await fx.store.lookupUuids({ max_physical_memory: '>5000' })).toEqual([]);
    const e = await expectReject(fx.store.lookup({ alias: '~(' }));
    expect(e).toMatchObject({ code: 'ValidationFailed' });
    expect(e.message).toContain('alias');
  });

  it('returns objects limited to fields, and uuids', async () => {
    const res = await fx.store.lookup({ 'tags.role': 'db' }, { fields: ['uuid', 'alias'] });
    expect(res).toEqual([{ uuid: db.uuid, alias: 'db0' }]);
    expect(await fx.store.lookupUuids({ alias: 'hidden' })).toEqual([]);
    expect(await fx.store.lookupUuids({ alias: 'hidden' }, { include_dni: true })).toEqual([hidden.uuid]);
  });

  it('refuses object values', async () => {
    await expect(fx.store.lookup({ tags: { role: 'db' } })).rejects.toMatchObject({ code: 'ValidationFailed' });
  });
});


