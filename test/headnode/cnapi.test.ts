/**
 * The dev headnode's CNAPI, driven by sdc-clients' CNAPI class (real Triton client code),
 * against a recording fake cn-agent and fake NAPI/IMGAPI peers.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { CnapiService } from '../../src/headnode/cnapi/index.js';
import { HeadnodeStore } from '../../src/headnode/store.js';
import { FakeCnAgent, FakePeers } from './helpers/cnapi-fakes.js';
import {
  call,
  callError,
  closeClient,
  cnapiClient,
  raw,
  rawError,
  waitFor,
  type Client,
} from './helpers/sdc-clients.js';

const IMAGE_UUID = '2b683a82-a066-11e3-97ab-2faa44701c5a';

function sysinfo(uuid: string, agent: FakeCnAgent, extra: Record<string, unknown> = {}) {
  return {
    UUID: uuid,
    'System Type': 'Virtual',
    'SDC Version': '7.0',
    Hostname: `VC${uuid.slice(0, 8).toUpperCase()}`,
    Setup: 'true',
    'MiB of Memory': '262111',
    'CPU Total Cores': 32,
    'Zpool Size in GiB': 3770,
    'Zpool Creation': 1546300800,
    'Boot Time': '1546300800',
    'Live Image': '20210826T002459Z',
    'Boot Parameters': { console: 'ttyb' },
    'Datacenter Name': 'coal',
    'Admin IP': '10.99.99.41',
    'SDC Agents': [],
    'Network Interfaces': {
      dnet0: { 'MAC Address': '00:10:fe:00:00:01', ip4addr: '10.99.99.41', 'Link Status': 'up', 'NIC Names': ['admin'] },
      dnet1: { 'MAC Address': '00:10:fe:00:00:02', ip4addr: '', 'Link Status': 'up', 'NIC Names': ['external'] },
    },
    'Virtual Network Interfaces': {},
    'Link Aggregations': {},
    'CN Agent IP': '127.0.0.1',
    'CN Agent Port': agent.port,
    ...extra,
  };
}

interface Env {
  dir: string;
  cnapi: CnapiService;
  client: Client;
  agent: FakeCnAgent;
  peers: FakePeers;
  /** Servers that keep heartbeating (every 100 ms) as a live cn-agent would. */
  beating: Set<string>;
  beater?: NodeJS.Timeout;
}

async function startCnapi(
  dir: string,
  peers: FakePeers,
  heartbeat?: { periodMs?: number; lifetimeMs?: number },
): Promise<CnapiService> {
  const cnapi = new CnapiService({
    log: createQuietLogger(),
    store: new HeadnodeStore({ dataDir: dir, log: createQuietLogger() }),
    napiUrl: peers.url,
    imgapiUrl: peers.url,
    heartbeat,
  });
  await cnapi.start({ host: '127.0.0.1', port: 0 });
  return cnapi;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** A cn-agent status report (sdc-cnapi lib/models/server.js updateFromStatusUpdate's input) of a 262111 MiB server. */
function statusSample(vms: Record<string, unknown> = {}) {
  return {
    vms,
    meminfo: { availrmem_bytes: 200_000 * MiB, arcsize_bytes: 42, total_bytes: 262111 * MiB },
    diskinfo: {
      kvm_zvol_used_bytes: 0, kvm_zvol_volsize_bytes: 0, kvm_quota_bytes: 0, kvm_quota_used_bytes: 0,
      zone_quota_bytes: 0, zone_quota_used_bytes: 0, cores_quota_bytes: 0, cores_quota_used_bytes: 0,
      installed_images_used_bytes: 0, pool_size_bytes: 3770 * GiB, pool_alloc_bytes: 5, system_used_bytes: 7,
    },
    boot_time: new Date().toISOString(),
    timestamp: new Date().toISOString(),
  };
}

/** Register a server as cn-agent does (sysinfo, agents, first beat, first status report). */
async function register(env: Env, uuid = randomUUID(), agents = [{ name: 'cn-agent', version: '2.15.0' }]) {
  await raw(env.client, 'post', `/servers/${uuid}/sysinfo`, { sysinfo: sysinfo(uuid, env.agent) });
  await call(env.client, 'updateServer', uuid, { agents });
  await raw(env.client, 'post', `/servers/${uuid}/events/heartbeat`, {});
  env.beating?.add(uuid);
  await raw(env.client, 'post', `/servers/${uuid}/events/status`, statusSample());
  await waitFor(async () => (await call<{ memory_total_bytes?: number }>(env.client, 'getServer', uuid)).memory_total_bytes);
  return uuid;
}

describe('dev headnode CNAPI', () => {
  const env = {} as Env;

  beforeAll(async () => {
    env.dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-cnapi-'));
    env.agent = await new FakeCnAgent().start();
    env.peers = await new FakePeers().start();
    env.peers.images.set(IMAGE_UUID, {
      uuid: IMAGE_UUID,
      name: 'base-64-lts',
      type: 'zone-dataset',
      files: [{ compression: 'gzip', sha1: 'x', size: 10 }],
    });
    env.cnapi = await startCnapi(env.dir, env.peers, { periodMs: 100, lifetimeMs: 2000 });
    env.client = cnapiClient(env.cnapi.url);
    env.beating = new Set();
    env.beater = setInterval(() => {
      for (const uuid of env.beating) void raw(env.client, 'post', `/servers/${uuid}/events/heartbeat`, {}).catch(() => {});
    }, 100);
  });

  afterAll(async () => {
    clearInterval(env.beater);
    closeClient(env.client);
    await env.cnapi?.stop();
    await env.agent?.stop();
    await env.peers?.stop();
    await rm(env.dir, { recursive: true, force: true });
  });

  afterEach(() => {
    env.peers.nicTagFailure = undefined;
  });

  describe('registration, heartbeat and status', () => {
    it('registers a server from its sysinfo with the fields CNAPI derives, and lists it running', async () => {
      const uuid = await register(env);
      const servers = await call<Record<string, unknown>[]>(env.client, 'listServers', {});
      const s = servers.find((x) => x.uuid === uuid);
      expect(s).toMatchObject({
        uuid,
        hostname: `VC${uuid.slice(0, 8).toUpperCase()}`,
        status: 'running',
        setup: true,
        headnode: false,
        ram: 262111,
        system_type: 'Virtual',
        current_platform: '20210826T002459Z',
        created: new Date(1546300800 * 1000).toISOString(),
        last_boot: new Date(1546300800 * 1000).toISOString(),
        reservation_ratio: 0.15,
        reserved: false,
        reservoir: false,
        datacenter: 'coal',
        traits: {},
      });
      // Without extras, ListServers leaves out sysinfo, vms and agents.
      expect(s).not.toHaveProperty('sysinfo');
      expect(s).not.toHaveProperty('agents');

      const full = await call<Record<string, unknown>>(env.client, 'getServer', uuid);
      expect((full.sysinfo as { UUID: string }).UUID).toBe(uuid);
      expect(full.agents).toEqual([{ name: 'cn-agent', version: '2.15.0' }]);
      expect(typeof full.last_heartbeat).toBe('string');
      // DAPI's capacity (sdc-designation calculate-server-unreserved) and its fixed ratios.
      expect(full.unreserved_ram).toBe(Math.floor(262111 * 0.85));
      expect(full.unreserved_cpu).toBe(3200);
      expect(full.overprovision_ratios).toEqual({ cpu: 4, ram: 1, disk: 1 });
      expect(full.score).toBe(0);
      expect(full.memory_provisionable_bytes).toBe(Math.floor(262111 * 1024 * 1024 * 0.85));
    });

    it('creates a NAPI NIC tag for every NIC Names tag, ignoring Duplicate', async () => {
      await register(env);
      await register(env); // the second registration gets Duplicate from NAPI for both tags
      expect([...env.peers.nicTags].sort()).toEqual(['admin', 'external']);
    });

    it('fails a registration when NAPI fails with anything but Duplicate', async () => {
      const peers = await new FakePeers().start();
      peers.nicTagFailure = 500;
      const dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-cnapi-napi-'));
      const cnapi = await startCnapi(dir, peers);
      const client = cnapiClient(cnapi.url);
      try {
        const uuid = randomUUID();
        const err = await rawError(client, 'post', `/servers/${uuid}/sysinfo`, { sysinfo: sysinfo(uuid, env.agent) });
        expect(err.statusCode).toBe(500);
        expect((await callError(client, 'getServer', uuid)).statusCode).toBe(404);
      } finally {
        closeClient(client);
        await cnapi.stop();
        await peers.stop();
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('turns a server unknown when its beats stop and running again when they resume', async () => {
      const uuid = await register(env);
      const status = async () => (await call<{ status: string }>(env.client, 'getServer', uuid)).status;
      expect(await status()).toBe('running');
      env.beating.delete(uuid);
      await waitFor(async () => (await status()) === 'unknown', 5000);
      await raw(env.client, 'post', `/servers/${uuid}/events/heartbeat`, {});
      await waitFor(async () => (await status()) === 'running', 5000);
    });

    it('stores the status sample: vms, memory_* and disk_* fields', async () => {
      const uuid = await register(env);
      const vmUuid = randomUUID();
      const vms = {
        [vmUuid]: {
          brand: 'joyent-minimal',
          cpu_cap: 100,
          last_modified: '2024-01-01T00:00:00.000Z',
          max_physical_memory: 1024,
          owner_uuid: randomUUID(),
          quota: 25,
          state: 'running',
          uuid: vmUuid,
          zone_state: 'running',
        },
      };
      const res = await raw(env.client, 'post', `/servers/${uuid}/events/status`, {
        ...statusSample(vms),
        zpoolStatus: { zones: { bytes_available: 1, bytes_used: 2 } },
      });
      expect(res.statusCode).toBe(204);
      const s = await waitFor(async () => {
        const got = await call<Record<string, unknown>>(env.client, 'getServer', uuid);
        return Object.keys(got.vms as object).length === 1 ? got : undefined;
      });
      expect(s.vms).toEqual(vms);
      expect(s).toMatchObject({
        memory_available_bytes: 200_000 * MiB,
        memory_arc_bytes: 42,
        memory_total_bytes: 262111 * MiB,
        disk_pool_size_bytes: 3770 * GiB,
        disk_pool_alloc_bytes: 5,
        disk_system_used_bytes: 7,
      });
      // The VM's RAM now counts against the server.
      expect(s.unreserved_ram).toBe(Math.floor(262111 * 0.85) - 1024);
    });

    it('answers 404 to a status report from an unknown server', async () => {
      const err = await rawError(env.client, 'post', `/servers/${randomUUID()}/events/status`, { vms: {} });
      expect(err.statusCode).toBe(404);
      expect(err.body?.code).toBe('ResourceNotFound');
    });
  });

  describe('strict parameters', () => {
    it('refuses a heartbeat body with any field', async () => {
      const uuid = await register(env);
      const err = await rawError(env.client, 'post', `/servers/${uuid}/events/heartbeat`, { foo: 1 });
      expect(err.statusCode).toBe(409);
      expect(err.body).toEqual({ code: 'InvalidArgument', message: 'foo is not an explicitly defined parameter' });
    });

    it('refuses a sysinfo registration with extra fields or for another server', async () => {
      const uuid = randomUUID();
      const extra = await rawError(env.client, 'post', `/servers/${uuid}/sysinfo`, {
        sysinfo: sysinfo(uuid, env.agent),
        hostname: 'x',
      });
      expect(extra.statusCode).toBe(409);
      expect(extra.body?.message).toBe('hostname is not an explicitly defined parameter');

      const other = await rawError(env.client, 'post', `/servers/${uuid}/sysinfo`, {
        sysinfo: sysinfo(randomUUID(), env.agent),
      });
      expect(other.statusCode).toBe(409);
      expect((await callError(env.client, 'getServer', uuid)).statusCode).toBe(404);

      const notObject = await rawError(env.client, 'post', `/servers/${uuid}/sysinfo`, { sysinfo: 'x' });
      // CNAPI sends InvalidParameters with status 500 (sdc-cnapi lib/validation/endpoints.js).
      expect(notObject.statusCode).toBe(500);
      expect(notObject.body?.code).toBe('InvalidParameters');
      expect(notObject.body?.errors?.[0]?.field).toBe('sysinfo');
    });

    it('validates ServerList parameters and limit', async () => {
      const unknown = await callError(env.client, 'listServers', { bogus: 'x' });
      expect(unknown.statusCode).toBe(409);
      expect(unknown.body?.message).toBe('bogus is not an explicitly defined parameter');
      const limit = await rawError(env.client, 'get', '/servers?limit=0');
      expect(limit.statusCode).toBe(400);
      expect(limit.body?.errors?.[0]?.field).toBe('limit');
    });

    it('validates ServerUpdate fields by type and refuses unknown ones', async () => {
      const uuid = await register(env);
      expect((await callError(env.client, 'updateServer', uuid, { reserved: 'yes' })).statusCode).toBe(500);
      expect((await callError(env.client, 'updateServer', uuid, { color: 'blue' })).statusCode).toBe(409);
      await call(env.client, 'updateServer', uuid, { reserved: true, comments: 'rack 4', traits: { ssd: true } });
      const s = await call<Record<string, unknown>>(env.client, 'getServer', uuid);
      expect(s).toMatchObject({ reserved: true, comments: 'rack 4', traits: { ssd: true } });
    });
  });

  describe('ServerList', () => {
    it('pages with limit/offset and filters by uuids, hostname, reserved and extras', async () => {
      const a = await register(env);
      const b = await register(env);
      await call(env.client, 'updateServer', b, { reserved: true });
      const all = await call<{ uuid: string }[]>(env.client, 'listServers', {});
      const sorted = all.map((s) => s.uuid);
      expect([...sorted].sort()).toEqual(sorted);
      const page = await call<{ uuid: string }[]>(env.client, 'listServers', { limit: 2, offset: 1 });
      expect(page.map((s) => s.uuid)).toEqual(sorted.slice(1, 3));

      const two = await call<{ uuid: string }[]>(env.client, 'listServers', { uuids: `${a},${b}` });
      expect(two.map((s) => s.uuid).sort()).toEqual([a, b].sort());
      const byHost = await call<{ uuid: string }[]>(env.client, 'listServers', {
        hostname: `VC${a.slice(0, 8).toUpperCase()}`,
      });
      expect(byHost.map((s) => s.uuid)).toEqual([a]);
      const reserved = await call<{ uuid: string }[]>(env.client, 'listServers', { reserved: 'true', uuids: `${a},${b}` });
      expect(reserved.map((s) => s.uuid)).toEqual([b]);

      const withSysinfo = await call<Record<string, unknown>[]>(env.client, 'listServers', { uuids: a, extras: 'sysinfo' });
      expect(withSysinfo[0]).toHaveProperty('sysinfo');
      expect(withSysinfo[0]).toHaveProperty('last_heartbeat');
      expect(withSysinfo[0]).not.toHaveProperty('vms');
      const capacity = await call<Record<string, unknown>[]>(env.client, 'listServers', { uuids: a, extras: 'capacity' });
      expect(capacity[0]).toHaveProperty('unreserved_ram');
      expect(capacity[0]).not.toHaveProperty('sysinfo');
      const fields = await call<Record<string, unknown>[]>(env.client, 'listServers', { uuids: a, fields: 'uuid,status' });
      expect(fields).toEqual([{ uuid: a, status: 'running' }]);
    });

    it('deletes a server record', async () => {
      const uuid = await register(env);
      await raw(env.client, 'del', `/servers/${uuid}`);
      expect((await callError(env.client, 'getServer', uuid)).statusCode).toBe(404);
    });
  });

  describe('tasks', () => {
    it('posts VmStart to cn-agent as CNAPI does and completes the task record', async () => {
      const server = await register(env);
      const vm = randomUUID();
      const before = env.agent.tasks().length;
      const task = await call<{ id: string }>(env.client, 'startVm', server, vm, { jobid: 'j1' });
      expect(typeof task.id).toBe('string');
      const done = await call<Record<string, any>>(env.client, 'waitTask', task.id, {});
      expect(done).toMatchObject({ id: task.id, task: 'machine_boot', server_uuid: server, status: 'complete' });
      expect(done.history).toHaveLength(1);
      expect(done.history[0]).toMatchObject({ name: 'finish', event: { vm: { uuid: vm, state: 'running' } } });
      expect(typeof done.history[0].timestamp).toBe('string');

      const posted = env.agent.tasks().slice(before).find((r) => (r.body as { task: string }).task === 'machine_boot')!;
      expect(posted.headers['x-server-uuid']).toBe(server);
      expect(typeof posted.headers['x-request-id']).toBe('string');
      // Path, query and body merged into params.
      expect(posted.body).toEqual({ task: 'machine_boot', params: { server_uuid: server, uuid: vm } });
    });

    it('records a failed task with the cn-agent error and the real history shape', async () => {
      const server = await register(env);
      env.agent.answers.set('nop', { status: 500, body: { error: 'boom' } });
      try {
        const { body } = await raw<{ id: string }>(env.client, 'post', `/servers/${server}/nop`, { sleep: '0' });
        const done = await call<Record<string, any>>(env.client, 'waitTask', body.id, {});
        expect(done.status).toBe('failure');
        expect(done.history.map((h: { name: string }) => h.name)).toEqual(['error', 'finish']);
        expect(done.history[0].event).toEqual({ error: { message: 'boom' } });
        expect(done.history[1].event).toEqual({});
        const posted = env.agent.tasks().filter((r) => (r.body as { task: string }).task === 'nop').pop()!;
        expect((posted.body as { params: { sleep: number } }).params.sleep).toBe(0);
      } finally {
        env.agent.answers.delete('nop');
      }
    });

    it('shows a task active until cn-agent answers; wait?timeout returns the active record', async () => {
      const server = await register(env);
      env.agent.answers.set('nop', { status: 200, body: {}, delayMs: 1500 });
      try {
        const { body } = await raw<{ id: string }>(env.client, 'post', `/servers/${server}/nop`, {});
        const active = await call<{ status: string }>(env.client, 'getTask', body.id);
        expect(active.status).toBe('active');
        const stillActive = await call<{ status: string }>(env.client, 'waitTask', body.id, { timeout: 1 });
        expect(stillActive.status).toBe('active');
        const done = await call<{ status: string }>(env.client, 'waitTask', body.id, {});
        expect(done.status).toBe('complete');
        // A wait that starts after completion returns at once.
        expect((await call<{ status: string }>(env.client, 'waitTask', body.id, {})).status).toBe('complete');
      } finally {
        env.agent.answers.delete('nop');
      }
    });

    it('answers 404 for an unknown task', async () => {
      const err = await callError(env.client, 'getTask', randomUUID());
      expect(err.statusCode).toBe(404);
      expect(err.body).toEqual({ code: 'ResourceNotFound', message: 'no such task found' });
    });

    it('refuses tasks on a server that is not running (409 ServerNotRunning) and unknown servers (404)', async () => {
      const server = await register(env);
      env.beating.delete(server);
      await waitFor(async () => (await call<{ status: string }>(env.client, 'getServer', server)).status === 'unknown', 5000);
      const before = env.agent.tasks().length;
      const err = await callError(env.client, 'startVm', server, randomUUID());
      expect(err.statusCode).toBe(409);
      expect(err.body).toEqual({ code: 'ServerNotRunning', message: 'Operation attempted on server which is not running' });
      const nop = await rawError(env.client, 'post', `/servers/${server}/nop`, {});
      expect(nop.statusCode).toBe(409);
      expect(env.agent.tasks().length).toBe(before);

      expect((await callError(env.client, 'startVm', randomUUID(), randomUUID())).statusCode).toBe(404);
      const bad = await callError(env.client, 'startVm', 'not-a-uuid', randomUUID());
      expect(bad.statusCode).toBe(409);
      expect(bad.body?.message).toBe('Invalid server_uuid');
    });

    it('loads a VM synchronously and maps VmNotFound to 404', async () => {
      const server = await register(env);
      const vm = randomUUID();
      env.agent.answers.set('machine_load', { status: 200, body: { uuid: vm, state: 'stopped', brand: 'joyent' } });
      const loaded = await call<Record<string, unknown>>(env.client, 'getVm', server, vm);
      expect(loaded).toEqual({ uuid: vm, state: 'stopped', brand: 'joyent' });
      env.agent.answers.set('machine_load', {
        status: 500,
        body: { error: `VM.load error: vmadm load ${vm} failed: No such zone`, details: { restCode: 'VmNotFound' } },
      });
      const err = await callError(env.client, 'getVm', server, vm);
      expect(err.statusCode).toBe(404);
      expect(err.body).toEqual({ code: 'ResourceNotFound', message: `VM ${vm} not found` });
      env.agent.answers.delete('machine_load');
    });

    it('sends every VM task to the right cn-agent task with merged params', async () => {
      const server = await register(env);
      const vm = randomUUID();
      const cases: [string, 'post' | 'put' | 'del', string, unknown][] = [
        ['machine_shutdown', 'post', `/servers/${server}/vms/${vm}/stop`, { force: true }],
        ['machine_reboot', 'post', `/servers/${server}/vms/${vm}/reboot`, {}],
        ['machine_kill', 'post', `/servers/${server}/vms/${vm}/kill`, { signal: 'SIGKILL' }],
        ['machine_update', 'post', `/servers/${server}/vms/${vm}/update`, { set_customer_metadata: { a: 'b' } }],
        ['machine_reprovision', 'post', `/servers/${server}/vms/${vm}/reprovision`, { image_uuid: IMAGE_UUID }],
        ['machine_create_snapshot', 'put', `/servers/${server}/vms/${vm}/snapshots`, { snapshot_name: 's1' }],
        ['machine_rollback_snapshot', 'put', `/servers/${server}/vms/${vm}/snapshots/s1/rollback`, {}],
        ['machine_delete_snapshot', 'del', `/servers/${server}/vms/${vm}/snapshots/s1`, undefined],
        ['machine_destroy', 'del', `/servers/${server}/vms/${vm}?jobid=j9`, undefined],
        ['image_ensure_present', 'post', `/servers/${server}/ensure-image`, { image_uuid: IMAGE_UUID }],
        ['agent_install', 'post', `/servers/${server}/install-agent`, { image_uuid: IMAGE_UUID }],
        ['agents_uninstall', 'post', `/servers/${server}/uninstall-agents`, { agents: ['cmon-agent'] }],
        ['server_update_nics', 'post', `/servers/${server}/nics/update`, { nics: [] }],
      ];
      for (const [task, method, p, body] of cases) {
        const res = await raw<{ id: string }>(env.client, method, p, body);
        const done = await call<{ status: string; task: string }>(env.client, 'waitTask', res.body.id, {});
        expect(done, task).toMatchObject({ task, status: 'complete' });
        const posted = env.agent.tasks().filter((r) => (r.body as { task: string }).task === task).pop()!;
        const params = (posted.body as { params: Record<string, unknown> }).params;
        expect(params.server_uuid, task).toBe(server);
        if (body && typeof body === 'object') expect(params, task).toMatchObject(body as object);
      }
      const destroy = env.agent.tasks().filter((r) => (r.body as { task: string }).task === 'machine_destroy').pop()!;
      expect((destroy.body as { params: unknown }).params).toEqual({ server_uuid: server, uuid: vm, jobid: 'j9' });
      const rollback = env.agent.tasks().filter((r) => (r.body as { task: string }).task === 'machine_rollback_snapshot').pop()!;
      expect((rollback.body as { params: unknown }).params).toMatchObject({ snapshot_name: 's1', uuid: vm });
    });

    it('VmCreate adds dataset_url and its compression from the image', async () => {
      const server = await register(env);
      const vm = randomUUID();
      const res = await call<{ id: string }>(env.client, 'createVm', server, {
        uuid: vm,
        brand: 'joyent-minimal',
        image_uuid: IMAGE_UUID,
        ram: 256,
      });
      await call(env.client, 'waitTask', res.id, {});
      const posted = env.agent.tasks().filter((r) => (r.body as { task: string }).task === 'machine_create').pop()!;
      const params = (posted.body as { params: Record<string, unknown> }).params;
      expect(params).toMatchObject({
        uuid: vm,
        server_uuid: server,
        image_uuid: IMAGE_UUID,
        dataset_url: `${env.peers.url}/images/${IMAGE_UUID}/file`,
        dataset_url_compression: 'gzip',
      });
      const noImage = await callError(env.client, 'createVm', server, { uuid: vm, brand: 'joyent' });
      expect(noImage.statusCode).toBe(409);
    });

    it('applies the cn-agent version gates', async () => {
      const old = await register(env, randomUUID(), [{ name: 'cn-agent', version: '2.7.0' }]);
      const un = await callError(env.client, 'uninstallAgents', old, { agents: ['vm-agent'] });
      expect(un.statusCode).toBe(412);
      expect(un.body?.code).toBe('PreconditionFailed');
      const reboot = await rawError(env.client, 'post', `/servers/${old}/reboot`, { nojob: true });
      expect(reboot.statusCode).toBe(503);
      const refresh = await rawError(env.client, 'post', `/servers/${old}/sysinfo-refresh`, {});
      expect(refresh.statusCode).toBe(500);
    });

    it('runs server_reboot with nojob and server_sysinfo for sysinfo-refresh', async () => {
      const server = await register(env);
      const rebooted = await raw(env.client, 'post', `/servers/${server}/reboot`, { nojob: true });
      expect(rebooted.statusCode).toBe(204);
      expect(env.agent.tasks().some((r) => (r.body as { task: string }).task === 'server_reboot')).toBe(true);

      env.agent.answers.set('server_sysinfo', {
        status: 200,
        body: { sysinfo: sysinfo(server, env.agent, { Hostname: 'RENAMED', 'Live Image': '20250101T000000Z' }) },
      });
      try {
        const refreshed = await raw(env.client, 'post', `/servers/${server}/sysinfo-refresh`, {});
        expect(refreshed.statusCode).toBe(200);
        const s = await call<Record<string, unknown>>(env.client, 'getServer', server);
        // hostname is not updatable once set, current_platform is.
        expect(s.current_platform).toBe('20250101T000000Z');
        expect(s.hostname).toBe(`VC${server.slice(0, 8).toUpperCase()}`);
      } finally {
        env.agent.answers.delete('server_sysinfo');
      }
    });

    it('runs the server-update-nics flow for PUT /servers/:uuid/nics and registers the new NIC tags', async () => {
      const server = await register(env);
      const si = sysinfo(server, env.agent);
      const updated = structuredClone(si);
      updated['Network Interfaces'].dnet1['NIC Names'] = ['external', 'storage'];
      // The real task finishes with {}: the workflow's sysinfo refresh brings the new tags.
      env.agent.answers.set('server_update_nics', { status: 200, body: {} });
      env.agent.answers.set('server_sysinfo', { status: 200, body: { sysinfo: updated } });
      try {
        const res = await raw<{ job_uuid: string }>(env.client, 'put', `/servers/${server}/nics`, {
          action: 'update',
          nics: [{ mac: '00:10:fe:00:00:02', nic_tags_provided: ['external', 'storage'] }],
        });
        expect(res.statusCode).toBe(202);
        expect(typeof res.body.job_uuid).toBe('string');
        const s = await waitFor(async () => {
          const got = await call<Record<string, any>>(env.client, 'getServer', server);
          return got.sysinfo['Network Interfaces'].dnet1['NIC Names'].includes('storage') ? got : undefined;
        });
        expect(s.sysinfo['Network Interfaces'].dnet1['NIC Names']).toEqual(['external', 'storage']);
        const posted = env.agent.tasks().filter((r) => (r.body as { task: string }).task === 'server_update_nics').pop()!;
        expect((posted.body as any).params.nics[0]).toMatchObject({
          mac: '00:10:fe:00:00:02',
          nic_tags_provided: ['external', 'storage'],
        });
        // The new tag was created in NAPI by the sysinfo update.
        expect(env.peers.nicTags.has('storage')).toBe(true);
      } finally {
        env.agent.answers.delete('server_update_nics');
        env.agent.answers.delete('server_sysinfo');
      }
      const bad = await rawError(env.client, 'put', `/servers/${server}/nics`, { action: 'paint', nics: [] });
      expect(bad.statusCode).toBe(500);
      expect(bad.body?.errors?.[0]?.field).toBe('action');
    });

    it('relays task-history, pause and resume to the CN with x-server-uuid', async () => {
      const server = await register(env);
      env.agent.history = [{ task: 'nop', status: 'finished' }];
      const hist = await raw<unknown[]>(env.client, 'get', `/servers/${server}/task-history`);
      expect(hist.body).toEqual([{ task: 'nop', status: 'finished' }]);
      const paused = await raw(env.client, 'post', `/servers/${server}/cn-agent/pause`, {});
      expect(paused.statusCode).toBe(204);
      expect(env.agent.paused).toBe(true);
      const last = env.agent.requests[env.agent.requests.length - 1]!;
      expect(last.headers['x-server-uuid']).toBe(server);
      // A paused cn-agent's 503 makes the task a failure with its message.
      const { body } = await raw<{ id: string }>(env.client, 'post', `/servers/${server}/nop`, {});
      const failed = await call<Record<string, any>>(env.client, 'waitTask', body.id, {});
      expect(failed.status).toBe('failure');
      expect(failed.history[0].event.error.message).toBe('CN Agent is not accepting tasks for maintenance');
      await raw(env.client, 'post', `/servers/${server}/cn-agent/resume`, {});
      expect(env.agent.paused).toBe(false);
    });

    it('fails a task whose cn-agent cannot be reached', async () => {
      const uuid = randomUUID();
      const dead = new FakeCnAgent();
      await dead.start();
      const deadPort = dead.port;
      await dead.stop();
      await raw(env.client, 'post', `/servers/${uuid}/sysinfo`, {
        sysinfo: { ...sysinfo(uuid, env.agent), 'CN Agent Port': deadPort },
      });
      await raw(env.client, 'post', `/servers/${uuid}/events/heartbeat`, {});
      const { body } = await raw<{ id: string }>(env.client, 'post', `/servers/${uuid}/nop`, {});
      const done = await call<Record<string, any>>(env.client, 'waitTask', body.id, {});
      expect(done.status).toBe('failure');
      expect(done.history[0].event.error.message).toMatch(/ECONNREFUSED/);
    });
  });

  describe('allocation', () => {
    // sdc-cnapi lib/endpoints/allocations.js with sdc-designation's checks and plug-ins.
    it('picks a running server with the nic tags and enough free RAM', async () => {
      const uuid = await register(env);
      const vm = { brand: 'joyent', owner_uuid: randomUUID(), ram: 1024, vm_uuid: randomUUID() };
      const res = await raw<{ server: { uuid: string; status: string }; steps: { step: string }[] }>(env.client, 'post', '/allocate', {
        vm,
        image: {},
        package: {},
        nic_tags: ['external'],
        servers: [uuid],
      });
      expect(res.body.server.uuid).toBe(uuid);
      expect(res.body.steps[0]!.step).toBe('Received by DAPI');
      const none = await rawError(env.client, 'post', '/allocate', {
        vm: { ...vm, vm_uuid: randomUUID() },
        image: {},
        nic_tags: ['no-such-tag'],
        servers: [uuid],
      });
      expect(none.statusCode).toBe(409);
      expect(none.body).toEqual({
        code: 'NoAllocatableServersError',
        message: 'No compute resources available: no servers supporting required NIC Tags',
      });
      const tooBig = await rawError(env.client, 'post', '/allocate', {
        vm: { ...vm, ram: 10_000_000, vm_uuid: randomUUID() },
        image: {},
        package: {},
        nic_tags: ['admin'],
        servers: [uuid],
      });
      expect(tooBig.statusCode).toBe(409);
      expect(tooBig.body?.message).toBe('No compute resources available: no servers with enough unreserved RAM');
    });
  });

  describe('persistence', () => {
    it('keeps servers and tasks across a restart; running servers must beat again', async () => {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-cnapi-restart-'));
      let cnapi = await startCnapi(dir, env.peers, { periodMs: 100, lifetimeMs: 400 });
      let client = cnapiClient(cnapi.url);
      const local = { ...env, client, beating: new Set<string>() } as Env;
      const uuid = await register(local);
      const { body } = await raw<{ id: string }>(client, 'post', `/servers/${uuid}/nop`, {});
      await call(client, 'waitTask', body.id, {});
      closeClient(client);
      await cnapi.stop();

      cnapi = await startCnapi(dir, env.peers, { periodMs: 100, lifetimeMs: 400 });
      client = cnapiClient(cnapi.url);
      try {
        const s = await call<Record<string, unknown>>(client, 'getServer', uuid);
        expect((s.sysinfo as { UUID: string }).UUID).toBe(uuid);
        expect((await call<{ status: string }>(client, 'getTask', body.id)).status).toBe('complete');
        // Seeded with a 1970 beat at start: unknown unless it beats.
        await waitFor(async () => (await call<{ status: string }>(client, 'getServer', uuid)).status === 'unknown', 5000);
      } finally {
        closeClient(client);
        await cnapi.stop();
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
});

describe('dev headnode CNAPI heartbeat timing (CNAPI defaults)', () => {
  it('turns a CN that stops heartbeating unknown within 11-16 s', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-cnapi-hb-'));
    const peers = await new FakePeers().start();
    const agent = await new FakeCnAgent().start();
    const cnapi = await startCnapi(dir, peers);
    const client = cnapiClient(cnapi.url);
    try {
      const uuid = randomUUID();
      await raw(client, 'post', `/servers/${uuid}/sysinfo`, { sysinfo: sysinfo(uuid, agent) });
      await raw(client, 'post', `/servers/${uuid}/events/heartbeat`, {});
      const lastBeat = Date.now();
      const status = async () => (await call<{ status: string }>(client, 'getServer', uuid)).status;
      expect(await status()).toBe('running');
      await waitFor(async () => (await status()) === 'unknown', 20_000, 100);
      const elapsed = Date.now() - lastBeat;
      expect(elapsed).toBeGreaterThanOrEqual(11_000);
      expect(elapsed).toBeLessThanOrEqual(16_500);
    } finally {
      closeClient(client);
      await cnapi.stop();
      await agent.stop();
      await peers.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
