/**
 * Fleet composition against the embedded dev headnode, over the wire: a weighted mix of
 * hardware profiles gives exact counts that the control API shows per CN; a profile file's
 * hardware is what CNAPI gets in the CN's sysinfo; and the placement fields DAPI reads
 * (traits, reserved, a headnode-like CN) keep CNAPI's allocation off a CN, set at creation or
 * afterwards as `sdc-server update` sets them. Follows sdc-cnapi lib/endpoints/servers.js
 * (ServerUpdate, ServerGet), lib/endpoints/allocations.js and sdc-designation's
 * hard-filter-reserved, hard-filter-traits and hard-filter-headnode.
 */
import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { call, closeClient, cnapiClient, raw, rawError, waitFor, type Client } from '../headnode/helpers/sdc-clients.js';

const log = createQuietLogger('fleet-mix-test');
const OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';
const TIMINGS = { heartbeatIntervalMs: 500, statusThrottleMs: 200, startSpreadMs: 50, sysinfoBackoff: { minMs: 50, maxMs: 500 } };

type Obj = Record<string, any>;

/** A profile file as an operator writes it (YAML), with a headnode-like profile beside. */
const PROFILE_FILE = `# two profiles of our own
profiles:
  - name: gpu
    extends: large
    description: a GPU box
    cpuCoreCount: 64
    cpuTotalCores: 128
    memoryMiB: 2097152
    diskCount: 8
    diskSizeGB: 3840
    zpoolProfile: raidz
    zpoolSizeGiB: 25000
    bhyveCapable: false
    nics:
      - tags: [external]
      - tags: [storage, backup]
    traits: {gpu: true}
  - name: service-node
    description: a CN CNAPI counts a headnode
    headnode: true
`;

async function control(daemon: Daemon, method: string, urlPath: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${daemon.controlAddress.url}${urlPath}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function create(daemon: Daemon, body: Obj): Promise<Obj[]> {
  const res = await control(daemon, 'POST', '/servers', body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.errors).toEqual([]);
  return res.body.created as Obj[];
}

/** A VM CNAPI's DAPI is asked to place (sdc-cnapi allocations.js request shape). */
function allocation(): Obj {
  return {
    vm: { brand: 'joyent', owner_uuid: OWNER, ram: 128, vm_uuid: randomUUID() },
    image: {},
    package: { cpu_cap: 100 },
    nic_tag_requirements: [['external'], ['admin']],
    nic_tags: ['external', 'admin'],
  };
}

describe('fleet composition: mixes, profile files and placement controls', () => {
  let dataDir: string;
  let daemon: Daemon;
  let cnapi: Client;

  async function start(): Promise<Daemon> {
    const config = await resolveConfig({ flags: { dataDir, cmonPort: 0 }, env: {}, mdata: noMdata });
    const d = new Daemon({ config, log, plugins: [], embeddedHeadnode: {} });
    await d.start();
    return d;
  }

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-fleet-mix-'));
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: TIMINGS }));
    await fsp.mkdir(path.join(dataDir, 'profiles'));
    await fsp.writeFile(path.join(dataDir, 'profiles', 'ours.yaml'), PROFILE_FILE);
    daemon = await start();
    cnapi = cnapiClient(daemon.config.urls.cnapi!);
  });

  afterAll(async () => {
    closeClient(cnapi);
    await daemon?.stop();
    await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it('creates a mix in exact counts, shows each CN\'s profile, and keeps it across a restart', async () => {
    const created = await create(daemon, { count: 20, mix: 'small:70,large:25,storage:5' });
    expect(created).toHaveLength(20);
    const tally = (list: Obj[]): Obj => list.reduce((t: Obj, s) => ({ ...t, [s.profile]: (t[s.profile] ?? 0) + 1 }), {});
    expect(tally(created)).toEqual({ small: 14, large: 5, storage: 1 });
    const listed = (await control(daemon, 'GET', '/servers')).body as Obj[];
    const ours = listed.filter((s) => created.some((c) => c.uuid === s.uuid));
    expect(tally(ours)).toEqual({ small: 14, large: 5, storage: 1 });
    // CNAPI sees each CN's hardware from its profile.
    const small = ours.find((s) => s.profile === 'small')!;
    const inCnapi = await waitFor(() => call<Obj>(cnapi, 'getServer', small.uuid).catch(() => undefined), 20_000, 50);
    expect(inCnapi.sysinfo['CPU Core Count']).toBe(4);
    expect(inCnapi.sysinfo['MiB of Memory']).toBe('32625');
    // The storage profile's traits went to CNAPI with the CN.
    const storage = ours.find((s) => s.profile === 'storage')!;
    await waitFor(async () => (await call<Obj>(cnapi, 'getServer', storage.uuid)).traits?.storage === true, 20_000, 50);

    const status = (await control(daemon, 'GET', '/status')).body as Obj;
    expect(status.profiles).toMatchObject({ small: 14, large: 5, storage: 1, virtual: 1 });

    // A mix naming a profile the daemon lacks, or with profile beside it, is refused whole.
    const before = daemon.fleet.size;
    const unknown = await control(daemon, 'POST', '/servers', { count: 2, mix: 'small:1,huge:1' });
    expect(unknown.status).toBe(409);
    expect(unknown.body.message).toMatch(/unknown hardware profile "huge"/);
    const both = await control(daemon, 'POST', '/servers', { count: 2, mix: 'small:1', profile: 'small' });
    expect(both.status).toBe(409);
    expect(daemon.fleet.size).toBe(before);

    await daemon.stop();
    daemon = await start();
    const again = (await control(daemon, 'GET', '/servers')).body as Obj[];
    expect(tally(again.filter((s) => created.some((c) => c.uuid === s.uuid)))).toEqual({ small: 14, large: 5, storage: 1 });
    closeClient(cnapi);
    cnapi = cnapiClient(daemon.config.urls.cnapi!);
  });

  it("gives CNAPI a profile file's hardware, NICs and traits", async () => {
    const [gpu] = await create(daemon, { count: 1, profile: 'gpu' });
    expect(gpu!.profile).toBe('gpu');
    // Its Product is large's (from `extends`): the CN's profile.json says which profile it is.
    const listed = (await control(daemon, 'GET', `/servers/${gpu!.uuid}`)).body as Obj;
    expect(listed.profile).toBe('gpu');
    expect(listed.sysinfo.Product).toBe('Joyent-Virtual-CN-0003');
    const server = await waitFor(
      async () => {
        const s = await call<Obj>(cnapi, 'getServer', gpu!.uuid).catch(() => undefined);
        // Traits from the creation, memory from the CN's first status report.
        return s?.traits?.gpu === true && typeof s.memory_total_bytes === 'number' ? s : undefined;
      },
      20_000,
      50,
    );
    const si = server.sysinfo as Obj;
    expect(si['CPU Core Count']).toBe(64);
    expect(si['CPU Total Cores']).toBe(128);
    expect(si['CPU Socket Count']).toBe(2); // from `extends: large`
    expect(si['MiB of Memory']).toBe('2097152');
    expect(si['Bhyve Capable']).toBe(false);
    expect(Object.keys(si.Disks)).toHaveLength(8);
    expect(Object.values(si.Disks as Obj).every((d: Obj) => d['Size in GB'] === 3840)).toBe(true);
    expect(si['Zpool Profile']).toBe('raidz');
    expect(si['Zpool Size in GiB']).toBe(25000);
    expect(si['Network Interfaces'].dnet1['NIC Names']).toEqual(['external']);
    expect(si['Network Interfaces'].dnet2['NIC Names']).toEqual(['storage', 'backup']);
    expect(server.memory_total_bytes).toBe(2097152 * 1024 * 1024);
    // GET /profiles offers it beside the built-ins.
    const profiles = (await control(daemon, 'GET', '/profiles')).body as Obj[];
    expect(profiles.map((p) => p.name)).toEqual(expect.arrayContaining(['virtual', 'small', 'large', 'storage', 'gpu', 'service-node']));
  });

  it("keeps DAPI's allocation off reserved, trait-bearing and headnode-like CNs, and follows set-servers", async () => {
    const [a] = await create(daemon, { count: 1, placement: { reserved: true } });
    const [b] = await create(daemon, { count: 1, placement: { traits: { ssd: true } } });
    const [c] = await create(daemon, { count: 1 });
    const [d] = await create(daemon, { count: 1, profile: 'service-node' });
    const ids = [a!.uuid, b!.uuid, c!.uuid, d!.uuid];
    // A headnode-like CN is a headnode to CNAPI, yet one more CN of the fleet to mockcloud.
    const listed = (await control(daemon, 'GET', '/servers')).body as Obj[];
    expect(listed.find((s) => s.uuid === d!.uuid)).toMatchObject({ headnode: false, profile: 'service-node' });
    await waitFor(
      async () => {
        const list = await call<Obj[]>(cnapi, 'listServers', { uuids: ids.join(','), extras: 'last_heartbeat' });
        const byUuid = new Map(list.map((s) => [s.uuid, s]));
        const ready = ids.every((u) => byUuid.get(u)?.status === 'running' && typeof byUuid.get(u)?.last_heartbeat === 'string');
        return ready && byUuid.get(a!.uuid)!.reserved === true && byUuid.get(d!.uuid)!.headnode === true;
      },
      30_000,
      100,
    );
    const placeAmong = async (): Promise<string> => (await raw<Obj>(cnapi, 'post', '/allocate', { ...allocation(), servers: ids })).body.server.uuid;
    for (let i = 0; i < 3; i++) expect(await placeAmong()).toBe(c!.uuid);

    // Afterwards, as an operator would: C reserved, A open again.
    const setC = await control(daemon, 'POST', `/servers/${c!.uuid}/placement`, { reserved: true });
    expect(setC.status, JSON.stringify(setC.body)).toBe(200);
    expect((await control(daemon, 'POST', `/servers/${a!.uuid}/placement`, { reserved: false })).status).toBe(200);
    expect((await call<Obj>(cnapi, 'getServer', c!.uuid)).reserved).toBe(true);
    for (let i = 0; i < 3; i++) expect(await placeAmong()).toBe(a!.uuid);

    // All closed: DAPI finds no server (CNAPI's 409 from allocations.js).
    expect((await control(daemon, 'POST', `/servers/${a!.uuid}/placement`, { reserved: true })).status).toBe(200);
    const none = await rawError(cnapi, 'post', '/allocate', { ...allocation(), servers: ids });
    expect(none.statusCode).toBe(409);

    // A bad placement is refused before CNAPI is asked; an unknown CN is a 404.
    const bad = await control(daemon, 'POST', `/servers/${a!.uuid}/placement`, { overprovisionRatios: { gpu: 2 } });
    expect(bad.status).toBe(409);
    expect(bad.body.message).toMatch(/unknown key gpu/);
    expect((await control(daemon, 'POST', `/servers/${randomUUID()}/placement`, { reserved: true })).status).toBe(404);
  });
});
