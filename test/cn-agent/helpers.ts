/**
 * Test fixture for cn-agent: a temp data dir, the real file-backed vmadm, the shared
 * CnAgentServer, and mock CNs made the way the daemon makes them (server dir with the
 * original template's sysinfo and the built-in agents, MockCnImpl) but with recording hooks
 * instead of the CNAPI reporter. Requests are sent the way CNAPI sends them: POST /tasks with
 * x-server-uuid and x-request-id headers and a {task, params} JSON body.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CnAgentServer, type CnAgentServerOptions } from '../../src/agents/cn-agent/index.js';
import { JsonHttpClient } from '../../src/common/http-client.js';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { beginServerCreation, finishServerCreation } from '../../src/mockcn/server-dir.js';
import { loadServer } from '../../src/mockcn/load-server.js';
import type { MockCnHooks, MockCnImpl } from '../../src/mockcn/mock-cn.js';
import { getProfile } from '../../src/mockcn/profiles.js';
import { buildSysinfo, randomMockMac } from '../../src/mockcn/sysinfo-template.js';
import type { AgentRecord, MockCn, PowerChange } from '../../src/mockcn/types.js';
import { Scheduler } from '../../src/runtime/scheduler.js';
import type { Sysinfo } from '../../src/common/sysinfo.js';
import { Vmadm } from '../../src/vmadm/index.js';

export interface TestCn {
  uuid: string;
  cn: MockCnImpl;
  hooks: Hooks;
  /** http://ip:port of its cn-agent. */
  url: string;
}

/** Hooks that record what a CN told the shared services (instead of the CNAPI reporter). */
export class Hooks implements MockCnHooks {
  statusDirtyCount = 0;
  sysinfoChangedCount = 0;
  agentPosts: AgentRecord[][] = [];
  failAgents: Error | undefined;
  powerChanges: { power: string; graceful: boolean }[] = [];
  constructor(private readonly server?: CnAgentServer) {}
  statusDirty(): void {
    this.statusDirtyCount++;
  }
  sysinfoChanged(): void {
    this.sysinfoChangedCount++;
  }
  async postAgents(_cn: MockCn, agents: readonly AgentRecord[]): Promise<void> {
    if (this.failAgents) throw this.failAgents;
    this.agentPosts.push([...agents]);
  }
  /** As the daemon's fleet does: the CN's cn-agent socket follows its power; registered again once up. */
  async powerChanged(cn: MockCn, change: PowerChange): Promise<void> {
    this.powerChanges.push({ power: cn.power, graceful: change.graceful });
    await this.server?.setPower(cn.uuid, cn.power);
    if (cn.power === 'up') cn.registered = true;
  }
}

export interface HarnessOptions extends Partial<Omit<CnAgentServerOptions, 'log' | 'env'>> {
  imgapiUrl?: string;
  kbmapiUrl?: string;
  allowExecute?: boolean;
  bootSeconds?: number;
}

export class Harness {
  readonly server: CnAgentServer;
  readonly vmadm: Vmadm;
  readonly http = new JsonHttpClient({ userAgent: 'cn-agent-test' });
  readonly scheduler = new Scheduler();
  private readonly cns: TestCn[] = [];

  private constructor(
    readonly dataDir: string,
    opts: HarnessOptions,
  ) {
    const log = createQuietLogger('cn-agent-test');
    this.vmadm = new Vmadm({ root: dataDir, log });
    const { imgapiUrl, kbmapiUrl, allowExecute, bootSeconds, ...serverOpts } = opts;
    this.server = new CnAgentServer({
      bindIp: '127.0.0.1',
      taskLogFile: path.join(dataDir, 'logs', 'cn-agent-tasks.log'),
      ...serverOpts,
      log,
      env: {
        log,
        http: this.http,
        imgapiUrl,
        kbmapiUrl,
        dataDir,
        tmpDir: path.join(dataDir, 'tmp'),
        scheduler: this.scheduler,
        allowExecute,
        bootSeconds,
      },
    });
  }

  static async create(opts: HarnessOptions = {}): Promise<Harness> {
    const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-cn-agent-'));
    await fsp.mkdir(path.join(dataDir, 'tmp'));
    const h = new Harness(dataDir, opts);
    h.server.start();
    h.scheduler.start();
    return h;
  }

  /** A new mock CN on disk, loaded and attached (registered unless told otherwise). */
  async addCn(opts: { registered?: boolean; ip?: string; port?: number; sysinfo?: Partial<Sysinfo> } = {}): Promise<TestCn> {
    const uuid = newUuid();
    const sysinfo = {
      ...buildSysinfo({
        uuid,
        profile: getProfile(undefined),
        datacenterName: 'coal',
        platform: '20250101T000000Z',
        adminMac: randomMockMac(),
        adminIp: '10.99.99.40',
        extraMac: randomMockMac(),
      }),
      ...opts.sysinfo,
    } as Sysinfo;
    await beginServerCreation(this.dataDir, { uuid, startedAt: new Date().toISOString(), napiMacs: [] });
    await finishServerCreation(this.dataDir, sysinfo);
    const hooks = new Hooks(this.server);
    const cn = await loadServer(this.dataDir, uuid, (u, id) => this.vmadm.openServer(u, id), hooks);
    const address = await this.server.attach(cn, {
      ...(opts.ip !== undefined ? { ip: opts.ip } : {}),
      ...(opts.port !== undefined ? { port: opts.port } : {}),
    });
    cn.registered = opts.registered ?? true;
    const t: TestCn = { uuid, cn, hooks, url: `http://${address.ip}:${address.port}` };
    this.cns.push(t);
    return t;
  }

  async close(): Promise<void> {
    this.scheduler.stop();
    await this.server.stop();
    await this.vmadm.close();
    this.http.close();
    await fsp.rm(this.dataDir, { recursive: true, force: true });
  }
}

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  text: string;
  body: T;
}

async function reply<T>(res: Response): Promise<Reply<T>> {
  const text = await res.text();
  let body: unknown = undefined;
  if (text.length > 0) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status: res.status, headers: res.headers, text, body: body as T };
}

/** POST /tasks as CNAPI does it. */
export async function postTask<T = any>(
  t: Pick<TestCn, 'url' | 'uuid'>,
  task: string | undefined,
  params: unknown,
  opts: { serverUuid?: string | null; requestId?: string; query?: string } = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (opts.serverUuid !== null) headers['x-server-uuid'] = opts.serverUuid ?? t.uuid;
  headers['x-request-id'] = opts.requestId ?? newUuid();
  const body: Record<string, unknown> = {};
  if (task !== undefined) body.task = task;
  if (params !== undefined) body.params = params;
  const res = await fetch(`${t.url}/tasks${opts.query ?? ''}`, { method: 'POST', headers, body: JSON.stringify(body) });
  return reply<T>(res);
}

export async function request<T = any>(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<Reply<T>> {
  const res = await fetch(url, init as RequestInit);
  return reply<T>(res);
}

export async function history(t: Pick<TestCn, 'url'>): Promise<any[]> {
  const r = await request<any[]>(`${t.url}/history`);
  return r.body;
}

/** A joyent-minimal create payload as VMAPI's provision workflow sends it through CNAPI. */
export function provisionParams(serverUuid: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    uuid: newUuid(),
    server_uuid: serverUuid,
    brand: 'joyent-minimal',
    alias: 'test-vm',
    owner_uuid: '930896af-bf8c-48d4-885c-6573a94b1853',
    billing_id: '0ea54d9d-8d4d-4959-a87e-bf47c0f61a47',
    image_uuid: 'fd2cc906-8938-11e3-beab-4359c665ac99',
    ram: 256,
    max_physical_memory: 256,
    max_swap: 512,
    max_lwps: 4000,
    quota: 10,
    cpu_cap: 100,
    cpu_shares: 100,
    zfs_io_priority: 50,
    firewall_enabled: true,
    customer_metadata: {},
    internal_metadata: {},
    tags: { role: 'test' },
    resolvers: ['8.8.8.8'],
    dataset_url: 'http://10.99.99.21/images/fd2cc906-8938-11e3-beab-4359c665ac99/file',
    dataset_url_compression: 'bzip2',
    nics: [
      {
        belongs_to_type: 'zone',
        belongs_to_uuid: 'will-be-the-vm',
        mac: '90:b8:d0:2f:0a:11',
        owner_uuid: '930896af-bf8c-48d4-885c-6573a94b1853',
        primary: true,
        state: 'provisioning',
        ip: '10.88.88.6',
        netmask: '255.255.255.0',
        gateway: '10.88.88.1',
        gateways: ['10.88.88.1'],
        ips: ['10.88.88.6/24'],
        vlan_id: 0,
        nic_tag: 'external',
        mtu: 1500,
        network_uuid: 'c4a1b4c6-5f7e-4a9a-9b39-6a4b0a4c0d11',
        resolvers: ['8.8.8.8'],
        created_timestamp: '2025-01-01T00:00:00.000Z',
        modified_timestamp: '2025-01-01T00:00:00.000Z',
      },
    ],
    ...overrides,
  };
}

/** Every file under `dir` (relative paths), to prove bad input wrote nothing. */
export async function listTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(d: string, rel: string): Promise<void> {
    let entries;
    try {
      entries = await fsp.readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(path.join(d, e.name), r);
      else out.push(r);
    }
  }
  await walk(dir, '');
  return out.sort();
}
