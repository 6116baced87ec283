/**
 * The dev VMAPI's reads, black box over HTTP with VMs put as vm-agent puts them: ListVms as
 * sdc-vmapi lib/endpoints/vms.js and lib/apis/moray.js run it (the raw LDAP `query` with
 * `(ram` read as max_physical_memory, JSON predicates, tag and internal_metadata
 * parameters, `marker` paging, the count header), its strict validation
 * (lib/common/validation.js validateListVmsParams, lib/validation/sort.js,
 * lib/common/marker.js), role tags (lib/endpoints/role-tags.js), ListStatuses
 * (lib/endpoints/statuses.js) and the VM changefeed (lib/apis/moray.js putVm).
 * Follows sdc-vmapi test/vms.list.test.js, vms.marker.test.js, vms.list-sort.test.js,
 * vms.full.test.js (role tags, statuses) and vms.changefeed.test.js.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { HeadnodeStore } from '../../src/headnode/store.js';
import { VmapiService } from '../../src/headnode/vmapi/index.js';
import { FakePeers } from './helpers/cnapi-fakes.js';
import { FeedClient } from './helpers/feed-client.js';
import { http } from './helpers/napi-env.js';

type Obj = Record<string, any>;

describe('dev VMAPI ListVms, role tags, statuses and changefeed', () => {
  let dir: string;
  let peers: FakePeers;
  let vmapi: VmapiService;
  let url: string;
  const owner = randomUUID();
  const server = randomUUID();
  const uuids: string[] = [];

  const get = (p: string) => http(`${url}${p}`);
  const vmObj = (i: number): Obj => ({
    uuid: uuids[i],
    brand: i % 2 ? 'joyent' : 'lx',
    state: i === 5 ? 'destroyed' : i % 3 ? 'running' : 'stopped',
    zone_state: 'running',
    owner_uuid: owner,
    server_uuid: server,
    alias: `list-${i}`,
    max_physical_memory: 128 * (i + 1),
    quota: 10,
    create_timestamp: new Date(Date.UTC(2024, 0, 1 + i)).toISOString(),
    tags: { role: i < 3 ? 'db' : 'web', tier: i },
    internal_metadata: { 'docker:id': `id-${i}` },
  });

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-vmapi-list-'));
    peers = await new FakePeers().start();
    const log = createQuietLogger();
    vmapi = new VmapiService({ log, store: new HeadnodeStore({ dataDir: dir, log }), cnapiUrl: peers.url, napiUrl: peers.url, imgapiUrl: peers.url });
    await vmapi.start({ host: '127.0.0.1', port: 0 });
    url = vmapi.url;
    for (let i = 0; i < 6; i++) uuids.push(randomUUID());
    const vms = Object.fromEntries(uuids.map((u, i) => [u, vmObj(i)]));
    expect((await http(`${url}/vms?server_uuid=${server}`, { method: 'PUT', body: { vms } })).status).toBe(200);
  });

  afterAll(async () => {
    await vmapi?.stop();
    await peers?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs a raw LDAP query (ram is max_physical_memory) together with the parameters and a predicate', async () => {
    const q = encodeURIComponent('(&(ram>=384)(tags=*-role=db-*))');
    const r = await get(`/vms?owner_uuid=${owner}&query=${q}`);
    expect(r.status).toBe(200);
    expect(r.body.map((v: Obj) => v.alias)).toEqual(['list-2']);
    expect(r.headers.get('x-joyent-resource-count')).toBe('1');

    const pred = encodeURIComponent(JSON.stringify({ or: [{ eq: ['tag.tier', 4] }, { eq: ['internal_metadata.docker:id', 'id-1'] }] }));
    const both = await get(`/vms?owner_uuid=${owner}&predicate=${pred}`);
    expect(both.body.map((v: Obj) => v.alias).sort()).toEqual(['list-1', 'list-4']);
    const tagParam = await get(`/vms?owner_uuid=${owner}&tag.role=web&state=active`);
    expect(tagParam.body.map((v: Obj) => v.alias).sort()).toEqual(['list-3', 'list-4']);

    const broken = await get(`/vms?query=${encodeURIComponent('(ram>=')}`);
    expect(broken.status).toBe(500);
    expect(broken.body).toEqual({ message: '(max_physical_memory>= is an invalid filter' });
  });

  it('pages with a marker (the last uuid seen; uuids descending), and counts before paging', async () => {
    const seen: string[] = [];
    let marker: Obj | undefined;
    for (let round = 0; round < 5; round++) {
      const m = marker ? `&marker=${encodeURIComponent(JSON.stringify(marker))}` : '';
      const page = await get(`/vms?owner_uuid=${owner}&limit=2${m}`);
      expect(page.headers.get('x-joyent-resource-count')).toBe('6');
      if (page.body.length === 0) break;
      seen.push(...page.body.map((v: Obj) => v.uuid));
      marker = { uuid: page.body[page.body.length - 1].uuid };
    }
    expect(seen).toEqual([...uuids].sort().reverse());
    const bad = await get(`/vms?marker=${encodeURIComponent(JSON.stringify({ alias: 'x' }))}`);
    expect(bad.body.errors.map((e: Obj) => e.message)).toEqual([
      'Invalid marker: {"alias":"x"}. A marker needs to have a uuid property from which a strict total order can be established',
      'Invalid marker: {"alias":"x"}. All marker keys except uuid must be present in the sort parameter. Sort fields: undefined.',
    ]);
  });

  it("refuses what VMAPI refuses, with VMAPI's messages", async () => {
    const cases: [string, Obj[]][] = [
      ['colour=red', [{ field: 'colour', code: 'Invalid', message: 'Invalid parameter' }]],
      ['fields=uuid,nope', [{ field: 'fields', code: 'Invalid', message: 'Invalid values: uuid,nope' }]],
      ['sort=ram.up', [{ field: 'sort', code: 'Invalid', message: 'Invalid sort param: ram.up' }]],
      ['limit=0', [{ field: 'limit', code: 'Invalid', message: 'Not a valid number: number must be >= 1 and <= 1000' }]],
      ['state=asleep', [{ field: 'state', code: 'Invalid', message: 'Must be one of: active, destroyed, running, stopped' }]],
      ['uuids=a,b', [{ field: 'uuids', code: 'Invalid', message: 'Invalid values: a,b' }]],
    ];
    for (const [q, errors] of cases) {
      const r = await get(`/vms?${q}`);
      expect(r.status).toBe(409);
      expect(r.body).toEqual({ code: 'ValidationFailed', message: 'Invalid Parameters', errors });
    }
    const both = await get(`/vms?offset=1&marker=${encodeURIComponent(JSON.stringify({ uuid: uuids[0] }))}`);
    expect(both.body.errors).toEqual([
      { fields: ['offset', 'marker'], code: 'ConflictingParameters', message: 'offset and marker cannot be used at the same time' },
    ]);
  });

  it('keeps role tags per VM and renders them with fields=role_tags', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const put = await http(`${url}/vms/${uuids[0]}/role_tags`, { method: 'PUT', body: { role_tags: [a] } });
    expect(put.body).toEqual([a]);
    expect((await http(`${url}/vms/${uuids[0]}/role_tags`, { method: 'POST', body: { role_tags: [b, a] } })).body).toEqual([a, b]);
    const listed = await get(`/vms?uuid=${uuids[0]}&fields=uuid,role_tags`);
    expect(listed.body).toEqual([{ uuid: uuids[0], role_tags: [a, b] }]);
    const bad = await http(`${url}/vms/${uuids[0]}/role_tags`, { method: 'PUT', body: { role_tags: ['x'] } });
    expect(bad.body).toEqual({
      code: 'ValidationFailed',
      message: 'Invalid Role Tags',
      errors: [{ field: 'role_tags', code: 'Invalid', message: 'x is not a UUID' }],
    });
    expect((await http(`${url}/vms/${uuids[0]}/role_tags/${randomUUID()}`, { method: 'DELETE' })).body).toEqual({
      code: 'ResourceNotFound', message: 'Role Tag not found',
    });
  });

  it('answers ListStatuses with each known VM state', async () => {
    const r = await get(`/statuses?uuids=${uuids[0]},${uuids[1]},${randomUUID()}`);
    expect(r.body).toEqual({ [uuids[0]!]: 'stopped', [uuids[1]!]: 'running' });
    expect((await get('/statuses')).body).toEqual({ code: 'MissingParameter', message: 'uuids is required' });
  });

  it("publishes each VM put on VMAPI's changefeed with the fields that changed", async () => {
    const feed = new FeedClient(url, '~2');
    await feed.open();
    try {
      feed.send({ instance: randomUUID(), service: 'test', resources: [{ resource: 'vm', subResources: ['state', 'alias'] }] });
      const boot = await feed.next();
      expect(boot.bootstrapRoutes).toEqual([expect.objectContaining({ resource: 'vm', bootstrapRoute: '/vms' })]);
      await http(`${url}/vms/${uuids[1]}`, { method: 'PUT', body: { ...vmObj(1), state: 'stopped' } });
      const item = await feed.next();
      expect(item.changeKind).toEqual({ resource: 'vm', subResources: ['state'] });
      expect(item.changedResourceId).toBe(uuids[1]);
      expect(item.resourceObject.state).toBe('stopped');
    } finally {
      feed.close();
    }
  });
});
