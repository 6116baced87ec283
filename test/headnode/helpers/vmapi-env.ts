/**
 * The dev VMAPI and dev CNAPI in front of recording fake CNs (a small stateful VM engine) and
 * fake NAPI/IMGAPI peers, for black-box VMAPI tests driven by sdc-clients' VMAPI class.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../../src/common/log.js';
import { CnapiService } from '../../../src/headnode/cnapi/index.js';
import { HeadnodeStore } from '../../../src/headnode/store.js';
import { VmapiService } from '../../../src/headnode/vmapi/index.js';
import { FakeCnAgent, FakePeers } from './cnapi-fakes.js';
import { call, closeClient, cnapiClient, raw, vmapiClient, waitFor, type Client } from './sdc-clients.js';

export const IMAGE = '2b683a82-a066-11e3-97ab-2faa44701c5a';
export const IMAGE2 = 'fd2cc906-8938-11e3-beab-4359c665ac99';
export const EXTERNAL = 'a6a3a4b6-3f58-4a94-a7b9-98e2e0c4b1a2';
export const ADMIN = 'b1f5d63c-6c5b-4f8e-9a77-3bd36b0c1f0e';
export const TINY = 'c3d4e5f6-0718-4a2b-8c9d-0e1f2a3b4c5d';
export const OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';

export interface Env {
  dir: string;
  peers: FakePeers;
  agents: FakeCnAgent[];
  servers: string[];
  cnapi: CnapiService;
  vmapi: VmapiService;
  cn: Client;
  vm: Client;
  beater?: NodeJS.Timeout;
}

function sysinfo(uuid: string, agent: FakeCnAgent) {
  return {
    UUID: uuid,
    'System Type': 'Virtual',
    'SDC Version': '7.0',
    Hostname: `VC${uuid.slice(0, 8).toUpperCase()}`,
    Setup: 'true',
    'MiB of Memory': '8192',
    'CPU Total Cores': 8,
    'Zpool Size in GiB': 100,
    'Zpool Creation': 1546300800,
    'Boot Time': '1546300800',
    'Live Image': '20210826T002459Z',
    'Boot Parameters': {},
    'Network Interfaces': {
      dnet0: { 'MAC Address': '00:10:fe:00:00:01', ip4addr: '10.99.99.41', 'Link Status': 'up', 'NIC Names': ['admin'] },
      dnet1: { 'MAC Address': '00:10:fe:00:00:02', ip4addr: '', 'Link Status': 'up', 'NIC Names': ['external'] },
    },
    'Virtual Network Interfaces': {},
    'CN Agent IP': '127.0.0.1',
    'CN Agent Port': agent.port,
  };
}

/** A cn-agent status report of an empty 8 GiB server with a 100 GiB pool (sdc-cn-agent lib/.../status). */
function statusSample() {
  const GiB = 1024 ** 3;
  return {
    vms: {},
    meminfo: { availrmem_bytes: 7 * GiB, arcsize_bytes: 0, total_bytes: 8 * GiB },
    diskinfo: {
      kvm_zvol_used_bytes: 0, kvm_zvol_volsize_bytes: 0, kvm_quota_bytes: 0, kvm_quota_used_bytes: 0,
      zone_quota_bytes: 0, zone_quota_used_bytes: 0, cores_quota_bytes: 0, cores_quota_used_bytes: 0,
      installed_images_used_bytes: 0, pool_size_bytes: 100 * GiB, pool_alloc_bytes: GiB, system_used_bytes: GiB,
    },
  };
}

export async function startServices(env: Env): Promise<void> {
  const log = createQuietLogger();
  const store = new HeadnodeStore({ dataDir: env.dir, log });
  env.cnapi = new CnapiService({
    log,
    store,
    napiUrl: env.peers.url,
    imgapiUrl: env.peers.url,
    heartbeat: { periodMs: 200, lifetimeMs: 5000 },
  });
  await env.cnapi.start({ host: '127.0.0.1', port: 0 });
  env.vmapi = new VmapiService({ log, store, cnapiUrl: env.cnapi.url, napiUrl: env.peers.url, imgapiUrl: env.peers.url });
  await env.vmapi.start({ host: '127.0.0.1', port: 0 });
  env.cnapi.setPeers({ vmapi: env.vmapi.url });
  env.cn = cnapiClient(env.cnapi.url);
  env.vm = vmapiClient(env.vmapi.url);
}

export async function stopServices(env: Env): Promise<void> {
  closeClient(env.cn);
  closeClient(env.vm);
  await env.vmapi?.stop();
  await env.cnapi?.stop();
}

/** Poll the job until it has ended (sdc-clients' own poller waits 5 s per round). */
export async function waitJob(env: Env, jobUuid: string): Promise<Record<string, any>> {
  return waitFor(async () => {
    const job = await call<Record<string, any>>(env.vm, 'getJob', jobUuid);
    return ['succeeded', 'failed', 'canceled'].includes(job.execution) ? job : undefined;
  }, 20_000);
}

export async function provision(env: Env, extra: Record<string, unknown> = {}) {
  const res = await call<{ vm_uuid: string; job_uuid: string }>(env.vm, 'createVm', {
    owner_uuid: OWNER,
    image_uuid: IMAGE,
    brand: 'joyent-minimal',
    ram: 256,
    networks: [{ uuid: EXTERNAL }],
    ...extra,
  });
  const job = await waitJob(env, res.job_uuid);
  return { ...res, job };
}

export async function action(env: Env, method: string, args: Record<string, unknown>) {
  const res = await call<{ vm_uuid: string; job_uuid: string }>(env.vm, method, args);
  return waitJob(env, res.job_uuid);
}

export const tasksOf = (env: Env, task: string) =>
  env.agents.flatMap((a) => a.tasks()).filter((r) => (r.body as { task: string }).task === task);

/** Two fake CNs registered with the dev CNAPI, their heartbeats going, and the dev VMAPI. */
export async function startVmapiEnv(): Promise<Env> {
  const env = { agents: [], servers: [] } as unknown as Env;
  env.dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-vmapi-'));
  env.peers = await new FakePeers().start();
  env.peers.images.set(IMAGE, {
    uuid: IMAGE, name: 'base-64-lts', version: '21.4.0', type: 'zone-dataset', os: 'smartos',
    state: 'active', disabled: false, files: [{ compression: 'gzip', sha1: 'x', size: 10 }],
  });
  env.peers.images.set(IMAGE2, { ...env.peers.images.get(IMAGE), uuid: IMAGE2, version: '22.4.0' });
  env.peers.addNetwork(EXTERNAL, 'external', 'external', '10.88.88');
  env.peers.addNetwork(ADMIN, 'admin', 'admin', '10.99.99');
  env.peers.addNetwork(TINY, 'tiny', 'external', '10.77.77', 10, 10);
  for (let i = 0; i < 2; i++) {
    const a = await new FakeCnAgent().start();
    a.stateful = true;
    env.agents.push(a);
  }
  await startServices(env);
  for (const a of env.agents) {
    const uuid = randomUUID();
    env.servers.push(uuid);
    await raw(env.cn, 'post', `/servers/${uuid}/sysinfo`, { sysinfo: sysinfo(uuid, a) });
    await call(env.cn, 'updateServer', uuid, { agents: [{ name: 'cn-agent', version: '2.15.0' }] });
    // cn-agent's first status report: DAPI places nothing on a server without these figures.
    await raw(env.cn, 'post', `/servers/${uuid}/events/status`, statusSample());
  }
  await waitFor(async () => {
    const list = await call<{ memory_total_bytes?: number }[]>(env.cn, 'listServers', { extras: 'memory' });
    return list.every((s) => s.memory_total_bytes) || undefined;
  }, 5000);
  env.beater = setInterval(() => {
    for (const s of env.servers) void raw(env.cn, 'post', `/servers/${s}/events/heartbeat`, {}).catch(() => {});
  }, 200);
  return env;
}

export async function stopVmapiEnv(env: Env): Promise<void> {
  clearInterval(env.beater);
  await stopServices(env);
  for (const a of env.agents) await a.stop();
  await env.peers?.stop();
  await rm(env.dir, { recursive: true, force: true });
}
