/**
 * A dev-headnode CNAPI with servers registered the way cn-agent registers them (sysinfo,
 * agents, heartbeats, a status report), for black-box tests of CNAPI's routes: the CNAPI
 * service alone, a recording fake cn-agent and fake NAPI/IMGAPI peers, on loopback port 0.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../../src/common/log.js';
import { CnapiService } from '../../../src/headnode/cnapi/index.js';
import { HeadnodeStore } from '../../../src/headnode/store.js';
import { FakeCnAgent, FakePeers } from './cnapi-fakes.js';
import { call, closeClient, cnapiClient, raw, waitFor, type Client } from './sdc-clients.js';

export const PLATFORM = '20210826T002459Z';
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export interface ServerSpec {
  uuid?: string;
  headnode?: boolean;
  /** NIC tags of dnet1 (dnet0 is admin). */
  tags?: string[];
  memoryMiB?: number;
  platform?: string;
  /** Extra sysinfo keys. */
  sysinfo?: Record<string, unknown>;
}

export class CnapiEnv {
  dir = '';
  cnapi!: CnapiService;
  client!: Client;
  agent!: FakeCnAgent;
  peers!: FakePeers;
  private readonly beating = new Set<string>();
  private beater: NodeJS.Timeout | undefined;

  async start(): Promise<this> {
    this.dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-cnapi-env-'));
    this.agent = await new FakeCnAgent().start();
    this.peers = await new FakePeers().start();
    this.cnapi = new CnapiService({
      log: createQuietLogger(),
      store: new HeadnodeStore({ dataDir: this.dir, log: createQuietLogger() }),
      napiUrl: this.peers.url,
      imgapiUrl: this.peers.url,
      heartbeat: { periodMs: 100, lifetimeMs: 2000 },
      platform: PLATFORM,
    });
    await this.cnapi.start({ host: '127.0.0.1', port: 0 });
    this.client = cnapiClient(this.cnapi.url);
    this.beater = setInterval(() => {
      for (const uuid of this.beating) void raw(this.client, 'post', `/servers/${uuid}/events/heartbeat`, {}).catch(() => {});
    }, 100);
    return this;
  }

  async stop(): Promise<void> {
    clearInterval(this.beater);
    closeClient(this.client);
    await this.cnapi?.stop();
    await this.agent?.stop();
    await this.peers?.stop();
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }

  get url(): string {
    return this.cnapi.url;
  }

  /** A SmartOS-like sysinfo as mock CNs send it. */
  sysinfo(uuid: string, spec: ServerSpec = {}): Record<string, unknown> {
    return {
      UUID: uuid,
      'System Type': 'Virtual',
      'SDC Version': '7.0',
      Hostname: spec.headnode ? 'headnode' : `VC${uuid.slice(0, 8).toUpperCase()}`,
      Setup: 'true',
      'MiB of Memory': String(spec.memoryMiB ?? 65536),
      'CPU Total Cores': 16,
      'Zpool Size in GiB': 1000,
      'Zpool Creation': 1546300800,
      'Boot Time': '1546300800',
      'Live Image': spec.platform ?? PLATFORM,
      'Boot Parameters': spec.headnode ? { console: 'ttyb', headnode: 'true' } : { console: 'ttyb' },
      'Datacenter Name': 'coal',
      'SDC Agents': [],
      'Network Interfaces': {
        dnet0: { 'MAC Address': '00:10:fe:00:00:01', ip4addr: '10.99.99.41', 'Link Status': 'up', 'NIC Names': ['admin'] },
        dnet1: { 'MAC Address': '00:10:fe:00:00:02', ip4addr: '', 'Link Status': 'up', 'NIC Names': spec.tags ?? ['external'] },
      },
      'Virtual Network Interfaces': {},
      'Link Aggregations': {},
      'CN Agent IP': '127.0.0.1',
      'CN Agent Port': this.agent.port,
      ...spec.sysinfo,
    };
  }

  /** cn-agent's status report of an empty server with `memoryMiB` of RAM and a 1000 GiB pool. */
  static status(memoryMiB = 65536, vms: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      vms,
      meminfo: { availrmem_bytes: (memoryMiB - 1024) * MiB, arcsize_bytes: 0, total_bytes: memoryMiB * MiB },
      diskinfo: {
        kvm_zvol_used_bytes: 0, kvm_zvol_volsize_bytes: 0, kvm_quota_bytes: 0, kvm_quota_used_bytes: 0,
        zone_quota_bytes: 0, zone_quota_used_bytes: 0, cores_quota_bytes: 0, cores_quota_used_bytes: 0,
        installed_images_used_bytes: 0, pool_size_bytes: 1000 * GiB, pool_alloc_bytes: GiB, system_used_bytes: GiB,
      },
    };
  }

  /** Register a server as cn-agent does, and keep it heartbeating; resolves once CNAPI has its status. */
  async register(spec: ServerSpec = {}): Promise<string> {
    const uuid = spec.uuid ?? randomUUID();
    await raw(this.client, 'post', `/servers/${uuid}/sysinfo`, { sysinfo: this.sysinfo(uuid, spec) });
    await call(this.client, 'updateServer', uuid, { agents: [{ name: 'cn-agent', version: '2.15.0' }] });
    await raw(this.client, 'post', `/servers/${uuid}/events/heartbeat`, {});
    this.beating.add(uuid);
    await raw(this.client, 'post', `/servers/${uuid}/events/status`, CnapiEnv.status(spec.memoryMiB));
    await waitFor(async () => (await call<{ memory_total_bytes?: number }>(this.client, 'getServer', uuid)).memory_total_bytes);
    return uuid;
  }

  stopBeating(uuid: string): void {
    this.beating.delete(uuid);
  }
}
