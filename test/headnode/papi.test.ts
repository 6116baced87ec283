/**
 * The dev PAPI, black box through sdc-clients' PAPI class (what VMAPI, CloudAPI and sdcadm
 * use) and plain HTTP: a fresh DC's packages (the headnode's sdc_* ones as PAPI's first boot
 * stores them, sdcadm's sample-* ones), create / get / update / delete with PAPI's checks and
 * bodies, ListPackages' filters as Moray runs them, and the state kept across a restart.
 * Follows sdc-papi lib/papi.js, lib/validations.js and test/api.test.js, and node-sdc-clients
 * test/papi.test.js.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { DEFAULT_ADMIN_UUID } from '../../src/common/triton-defaults.js';
import { newUuid } from '../../src/common/uuid.js';
import { PapiService } from '../../src/headnode/papi/index.js';
import { HeadnodeStore } from '../../src/headnode/store.js';
import { call, callError, closeClient, papiClient, raw, rawError, type Client } from './helpers/sdc-clients.js';

type Pkg = Record<string, any>;

const OWNER = '48bc0dd5-97f9-4fcc-bbd9-c48eadc772a0';

/** node-sdc-clients test/papi.test.js's package. */
const ENTRY = {
  name: 'mc-regular_128',
  version: '1.0.0',
  max_physical_memory: 128,
  quota: 5120,
  max_swap: 256,
  cpu_cap: 350,
  max_lwps: 2000,
  zfs_io_priority: 1,
  default: true,
  vcpus: 1,
  active: true,
  networks: ['aefd7d3c-a4fd-4812-9dd7-24733974d861', 'de749393-836c-42ce-9c7b-e81072ca3a23'],
  traits: { bool: true, arr: ['one', 'two', 'three'], str: 'a string' },
};

const strip = ({ created_at: _c, updated_at: _u, ...rest }: Pkg): Pkg => rest;

describe('dev PAPI', () => {
  const log = createQuietLogger();
  let dir: string;
  let service: PapiService;
  let papi: Client;

  async function start(): Promise<void> {
    service = new PapiService({ log, store: new HeadnodeStore({ dataDir: dir, log }) });
    await service.start({ host: '127.0.0.1', port: 0 });
    papi = papiClient(service.url);
  }

  async function stop(): Promise<void> {
    closeClient(papi);
    await service.stop();
  }

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-papi-'));
    await start();
  });

  afterAll(async () => {
    await stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("holds a fresh DC's packages: the headnode's sdc_* as first boot stores them, and the sample-* ones", async () => {
    const sdc = await call<Pkg[]>(papi, 'list', { name: 'sdc_*' }, { escape: false });
    expect(sdc.map((p) => p.name).sort()).toEqual(
      ['sdc_64', 'sdc_128', 'sdc_256', 'sdc_512', 'sdc_768', 'sdc_1024', 'sdc_2048', 'sdc_db', 'sdc_imgapi', 'sdc_4096', 'sdc_8192', 'sdc_rabbitmq'].sort(),
    );
    const sdc128 = sdc.find((p) => p.name === 'sdc_128')!;
    // sdc-papi boot/setup.sh quotes cpu_cap; first boot stores it unvalidated.
    expect(strip(sdc128)).toEqual({
      uuid: '73a1ca34-1e30-48c7-8681-70314a9c67d3',
      name: 'sdc_128',
      version: '1.0.0',
      active: true,
      cpu_cap: '100',
      default: true,
      max_lwps: 1000,
      max_physical_memory: 128,
      max_swap: 256,
      quota: 25600,
      vcpus: 1,
      zfs_io_priority: 10,
      owner_uuids: [DEFAULT_ADMIN_UUID],
      v: 1,
    });
    expect(new Date(sdc128.created_at).toISOString()).toBe(sdc128.created_at);

    const samples = await call<Pkg[]>(papi, 'list', { name: 'sample-*' }, { escape: false });
    expect(samples).toHaveLength(13);
    const s256 = samples.find((p) => p.name === 'sample-256M')!;
    expect(strip(s256)).toMatchObject({ max_physical_memory: 256, max_swap: 1024, quota: 6144, cpu_cap: 25, fss: 16, zfs_io_priority: 16, billing_tag: 'sample-256M', vcpus: 1, active: true });
    expect(s256.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(samples.find((p) => p.name === 'sample-bhyve-three-disks')).toMatchObject({
      brand: 'bhyve',
      flexible_disk: true,
      disks: [{}, { size: 6144 }, { size: 'remaining' }],
    });
    const all = await raw<Pkg[]>(papi, 'get', '/packages');
    expect(all.body).toHaveLength(25);
    expect(all.headers['x-resource-count']).toBe('25');
  });

  it('creates, gets, updates and refuses to delete a package as node-sdc-clients papi.test.js expects', async () => {
    const pkg = await call<Pkg>(papi, 'add', structuredClone(ENTRY));
    expect(pkg).toMatchObject({ ...ENTRY, v: 1 });
    expect(typeof pkg.created_at).toBe('string');
    expect(await call<Pkg>(papi, 'get', pkg.uuid, {})).toEqual(pkg);

    const owned = await call<Pkg>(papi, 'add', { ...ENTRY, name: 'mc-test_1024', max_physical_memory: 1024, max_swap: 10240, quota: 10240, owner_uuids: [OWNER] });
    expect((await call<Pkg>(papi, 'get', owned.uuid, { owner_uuids: OWNER })).uuid).toBe(owned.uuid);
    const stranger = await callError(papi, 'get', owned.uuid, { owner_uuids: newUuid() });
    expect(stranger.statusCode).toBe(404);
    expect(stranger.body).toEqual({ code: 'ResourceNotFound', message: `Package ${owned.uuid} does not exist` });

    const changed = await call<Pkg>(papi, 'update', pkg.uuid, {
      active: false,
      default: false,
      traits: { bool: false },
      networks: ['de749393-836c-42ce-9c7b-e81072ca3a23'],
    });
    expect(changed).toMatchObject({ active: false, default: false, traits: { bool: false }, networks: ['de749393-836c-42ce-9c7b-e81072ca3a23'] });
    expect(Date.parse(changed.updated_at)).toBeGreaterThanOrEqual(Date.parse(pkg.updated_at));
    expect(changed.created_at).toBe(pkg.created_at);

    const immutable = await callError(papi, 'update', pkg.uuid, { ...changed, max_physical_memory: 256 });
    expect(immutable.statusCode).toBe(409);
    expect(immutable.body).toEqual({
      code: 'InvalidArgument',
      message: 'Attempt to update immutables',
      errors: [{ field: 'max_physical_memory', code: 'Invalid', message: 'is immutable' }],
    });
    const refused = await callError(papi, 'del', pkg.uuid, {});
    expect(refused.statusCode).toBe(405);
    expect(refused.body).toEqual({ code: 'BadMethod', message: 'Packages cannot be deleted' });
    expect((await call<Pkg>(papi, 'get', pkg.uuid, {})).max_physical_memory).toBe(128);

    // null removes an attribute; an empty array removes it too (Moray keeps no empty ones).
    const cleared = await call<Pkg>(papi, 'update', pkg.uuid, { traits: null, networks: [] });
    expect(cleared).not.toHaveProperty('traits');
    expect(cleared).not.toHaveProperty('networks');
  });

  it("answers bad input with PAPI's 409s and stores nothing of it", async () => {
    const count = async (): Promise<string> => String((await raw(papi, 'get', '/packages')).headers['x-resource-count']);
    const before = await count();
    const base = { active: false, cpu_cap: 100, max_lwps: 1000, max_physical_memory: 1024, max_swap: 2048, quota: 10240, version: '1.0.0', zfs_io_priority: 100 };

    const unknown = await rawError(papi, 'post', '/packages', { ...base, name: 'mc-foo', foobarbaz: true });
    expect(unknown.statusCode).toBe(409);
    expect(unknown.body).toEqual({
      code: 'InvalidArgument',
      message: 'Unrecognised attributes',
      errors: [{ field: 'foobarbaz', code: 'Invalid', message: 'is an unsupported attribute' }],
    });
    const badName = await rawError(papi, 'post', '/packages', { ...base, name: "@#$'!" });
    expect(badName.body?.errors).toEqual([
      { field: 'name', code: 'Invalid', message: "must match /^[a-zA-Z0-9]([a-zA-Z0-9_\\-.]+)?[a-zA-Z0-9]$/ and not contain repeated '-', '_' or '.' characters" },
    ]);
    const missing = await rawError(papi, 'post', '/packages', { vcpus: 1 });
    expect(missing.body).toMatchObject({ code: 'InvalidArgument', message: 'Package is invalid' });
    expect(missing.body?.errors?.map((e) => `${e.field}:${e.code}`)).toEqual([
      'active:Missing', 'cpu_cap:Missing', 'max_lwps:Missing', 'max_physical_memory:Missing', 'max_swap:Missing',
      'name:Missing', 'quota:Missing', 'version:Missing', 'zfs_io_priority:Missing',
    ]);
    const fields = await rawError(papi, 'post', '/packages', {
      ...base, name: 'mc-fail', brand: 'WcDonalds', os: 2, max_physical_memory: 32, max_swap: 256, quota: 512, zfs_io_priority: 100000,
      vcpus: 30, networks: ['aefd7d3c-a4fd-4812-9dd7-24733974d861', 'nope'], uuid: 'invalid-uuid-for-sure',
      alloc_server_spread: 'invalid', flexible_disk: 'ho-ho-ho!', disks: [{ foo: 'bar' }],
    });
    expect(fields.body?.errors).toEqual([
      { field: 'disks', code: 'Invalid', message: 'must only contain Objects with "size" property' },
      { field: 'flexible_disk', code: 'Invalid', message: 'must be boolean' },
      { field: 'networks', code: 'Invalid', message: 'must only contain UUIDs' },
      { field: 'os', code: 'Invalid', message: 'must be string' },
      { field: 'uuid', code: 'Invalid', message: 'must be UUID' },
      { field: 'alloc_server_spread', code: 'Invalid', message: 'must be one of: min-ram, random, min-owner' },
      { field: 'brand', code: 'Invalid', message: 'must be one of: bhyve, joyent, joyent-minimal, kvm, lx' },
      { field: 'max_physical_memory', code: 'Invalid', message: 'must be greater or equal to 64' },
      { field: 'quota', code: 'Invalid', message: 'must be greater or equal to 1024' },
      { field: 'quota', code: 'Invalid', message: 'must be a multiple of 1024' },
      { field: 'zfs_io_priority', code: 'Invalid', message: 'must be greater or equal to 0, and less than or equal to 16383' },
      { field: 'disks', code: 'Invalid', message: 'disks can be specified only for flexible_disk packages' },
    ]);
    const taken = await rawError(papi, 'post', '/packages', { ...base, name: 'mc-dup', uuid: '73a1ca34-1e30-48c7-8681-70314a9c67d3' });
    expect(taken.body).toEqual({ code: 'ConflictError', message: 'A package with the given UUID already exists' });
    expect(await count()).toBe(before);

    const ghost = newUuid();
    expect((await rawError(papi, 'put', `/packages/${ghost}`, {})).body).toEqual({ code: 'ResourceNotFound', message: `Package ${ghost} does not exist` });
    expect((await rawError(papi, 'del', `/packages/${ghost}`)).statusCode).toBe(404);
    expect((await rawError(papi, 'get', '/packages/not-a-uuid')).statusCode).toBe(404);

    // An invalid update leaves the package as it was; skip_validation stores it anyway.
    const pkg = await call<Pkg>(papi, 'add', { ...base, name: 'mc-update-me' });
    const invalid = await rawError(papi, 'put', `/packages/${pkg.uuid}`, { owner_uuids: ['not-a-uuid'] });
    expect(invalid.body).toEqual({
      code: 'InvalidArgument',
      message: 'Updated package is invalid',
      errors: [{ field: 'owner_uuids', code: 'Invalid', message: 'must only contain UUIDs' }],
    });
    expect(await call<Pkg>(papi, 'get', pkg.uuid, {})).not.toHaveProperty('owner_uuids');
    const forced = await raw<Pkg>(papi, 'put', `/packages/${pkg.uuid}`, { owner_uuids: ['not-a-uuid'], skip_validation: true });
    expect(forced.body.owner_uuids).toEqual(['not-a-uuid']);
    // DeletePackage with force.
    expect((await raw(papi, 'del', `/packages/${pkg.uuid}?force=true`)).statusCode).toBe(204);
    expect((await rawError(papi, 'get', `/packages/${pkg.uuid}`)).statusCode).toBe(404);
  });

  it('lists with the filters PAPI builds and the ones callers give, as Moray runs them', async () => {
    const names = (pkgs: Pkg[]): string[] => pkgs.map((p) => p.name).sort();
    const mk = (name: string, extra: Pkg = {}): Promise<Pkg> =>
      call<Pkg>(papi, 'add', { name, version: '1.0.0', active: true, cpu_cap: 100, max_lwps: 1000, max_physical_memory: 512, max_swap: 1024, quota: 10240, zfs_io_priority: 10, ...extra });
    await mk('mc-list-a', { group: 'ramones', owner_uuids: [OWNER] });
    await mk('mc-list-b', { group: 'ramones', max_physical_memory: 1024, max_swap: 2048 });
    await mk('mc-list-c');

    // Escaped (the client's default) a `*` is a literal; unescaped a wildcard.
    expect(await call(papi, 'list', { name: 'mc-list-*' }, {})).toEqual([]);
    expect(names(await call(papi, 'list', { name: 'mc-list-*' }, { escape: false }))).toEqual(['mc-list-a', 'mc-list-b', 'mc-list-c']);
    expect(names(await call(papi, 'list', { group: 'ramones' }, {}))).toEqual(['mc-list-a', 'mc-list-b']);
    // owner_uuids: that owner's packages and those without owners.
    const forOwner = names(await call(papi, 'list', { name: 'mc-list-*', owner_uuids: OWNER }, { escape: false }));
    expect(forOwner).toEqual(['mc-list-a', 'mc-list-b', 'mc-list-c']);
    expect(names(await call(papi, 'list', { name: 'mc-list-*', owner_uuids: newUuid() }, { escape: false }))).toEqual(['mc-list-b', 'mc-list-c']);
    expect(names((await raw<Pkg[]>(papi, 'get', '/packages?name=["mc-list-a","mc-list-c"]')).body)).toEqual(['mc-list-a', 'mc-list-c']);
    expect((await rawError(papi, 'get', '/packages?name=[]')).statusCode).toBe(404);

    // A filter of the caller's own: numbers compared as numbers, the ext rules Moray knows.
    expect(names(await call(papi, 'list', '(&(name=mc-list-*)(max_physical_memory>=1000))', {}))).toEqual(['mc-list-b']);
    expect(names(await call(papi, 'list', '(name:caseIgnoreSubstringsMatch:=MC-LIST-*)', {}))).toEqual(['mc-list-a', 'mc-list-b', 'mc-list-c']);
    expect(names(await call(papi, 'list', '(name:caseIgnoreMatch:=MC-LIST-C)', {}))).toEqual(['mc-list-c']);
    const invalid = await callError(papi, 'list', '(&(max_physical_memory>=64)zfs_io_priority=1)', {});
    expect(invalid.statusCode).toBe(409);
    expect(invalid.body).toEqual({ code: 'InvalidArgument', message: 'Provided search filter is not valid' });
    // sdc-papi test/api.test.js "Search with LDIF injection attempt": Moray refuses a
    // substring of an array index.
    const injection = await rawError(papi, 'get', `/packages?name=api_test_*&networks=${encodeURIComponent('*)(owner_uuids={\\2a}')}`);
    expect(injection.statusCode).toBe(500);
    expect(injection.body).toEqual({
      code: 'InternalError',
      message: 'sdc_packages does not have indexes that support (networks=*{\\)}{\\(}owner_uuids{\\=}{\\*})',
    });

    // Order and paging; x-resource-count counts every match.
    const page = await raw<Pkg[]>(papi, 'get', '/packages?name=mc-list-*&sort=max_physical_memory&order=desc&limit=2');
    expect(page.body.map((p) => p.name)).toEqual(['mc-list-b', 'mc-list-a']);
    expect(page.headers['x-resource-count']).toBe('3');
    const rest = await raw<Pkg[]>(papi, 'get', '/packages?name=mc-list-*&sort=max_physical_memory&order=desc&limit=2&offset=2');
    expect(rest.body.map((p) => p.name)).toEqual(['mc-list-c']);
  });

  it('keeps its packages across a restart', async () => {
    const pkg = await call<Pkg>(papi, 'add', { ...ENTRY, name: 'mc-survivor' });
    await stop();
    await start();
    expect(strip(await call<Pkg>(papi, 'get', pkg.uuid, {}))).toEqual(strip(pkg));
    const again = await call<Pkg>(papi, 'add', { ...ENTRY, name: 'mc-after-restart' });
    const listed = await call<Pkg[]>(papi, 'list', { name: 'mc-*' }, { escape: false });
    // Moray's _id order: the newest last.
    expect(listed.at(-1)?.uuid).toBe(again.uuid);
  });
});
