/**
 * A small fleet of real mock CNs for agent tests: real MockCnImpl objects with real file-backed
 * VM stores (src/vmadm) under a temp data dir, and an AgentPluginContext made of the daemon's
 * real shared pieces (Scheduler, JsonHttpClient). No daemon, no cn-agent sockets.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { JsonHttpClient } from '../../../src/common/http-client.js';
import { createQuietLogger, type Logger } from '../../../src/common/log.js';
import { newUuid } from '../../../src/common/uuid.js';
import type { AgentPluginContext, FleetView, ServiceUrls } from '../../../src/runtime/agent-plugin.js';
import { Scheduler } from '../../../src/runtime/scheduler.js';
import { serverPaths } from '../../../src/mockcn/layout.js';
import { builtinAgentRecords } from '../../../src/mockcn/agents-dir.js';
import { MockCnImpl } from '../../../src/mockcn/mock-cn.js';
import { getProfile } from '../../../src/mockcn/profiles.js';
import { buildSysinfo, randomMockMac } from '../../../src/mockcn/sysinfo-template.js';
import { Vmadm } from '../../../src/vmadm/index.js';

export interface AddCnOptions {
  /** Its "CN Agent IP" (default 127.0.0.1). */
  agentIp?: string;
  adminIp?: string;
  adminMac?: string;
  /** Give it the ten built-in agents with their instance uuids, as a daemon's CN has. */
  agents?: boolean;
}

export class TestFleet implements FleetView {
  readonly cns = new Map<string, MockCnImpl>();
  readonly vmadm: Vmadm;
  readonly log: Logger;

  private constructor(readonly dataDir: string) {
    this.log = createQuietLogger('agents-test');
    this.vmadm = new Vmadm({ root: dataDir, log: this.log });
  }

  static async create(): Promise<TestFleet> {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-agents-'));
    return new TestFleet(dir);
  }

  get size(): number {
    return this.cns.size;
  }

  get(uuid: string): MockCnImpl | undefined {
    return this.cns.get(uuid);
  }

  list(): MockCnImpl[] {
    return [...this.cns.values()];
  }

  async addCn(opts: AddCnOptions = {}): Promise<MockCnImpl> {
    const uuid = newUuid();
    const sysinfo = buildSysinfo({
      uuid,
      profile: getProfile('virtual'),
      datacenterName: 'testdc',
      platform: '20210826T002459Z',
      adminMac: opts.adminMac ?? randomMockMac(),
      adminIp: opts.adminIp ?? '10.99.99.40',
      extraMac: randomMockMac(),
    });
    const paths = serverPaths(this.dataDir, uuid);
    await fsp.mkdir(paths.vms, { recursive: true });
    const vms = await this.vmadm.openServer(uuid, sysinfo);
    const cn = new MockCnImpl({ uuid, paths, vms, sysinfo, ...(opts.agents ? { agents: builtinAgentRecords(uuid) } : {}) });
    cn.agentAddress = { ip: opts.agentIp ?? '127.0.0.1', port: 0 };
    this.cns.set(uuid, cn);
    return cn;
  }

  async close(): Promise<void> {
    await this.vmadm.close();
    await fsp.rm(this.dataDir, { recursive: true, force: true });
  }
}

export interface TestContext {
  ctx: AgentPluginContext;
  scheduler: Scheduler;
  http: JsonHttpClient;
  errors: Record<string, number>;
  close(): void;
}

export function makeContext(fleet: TestFleet, urls: ServiceUrls): TestContext {
  const scheduler = new Scheduler();
  scheduler.start();
  const http = new JsonHttpClient({ timeoutMs: 5000 });
  const errors: Record<string, number> = {};
  const ctx: AgentPluginContext = {
    log: fleet.log,
    scheduler,
    http,
    urls,
    fleet,
    bindIp: '127.0.0.1',
    dataDir: fleet.dataDir,
    countError: (kind) => {
      errors[kind] = (errors[kind] ?? 0) + 1;
    },
  };
  return {
    ctx,
    scheduler,
    http,
    errors,
    close: () => {
      scheduler.stop();
      http.close();
    },
  };
}

/** Poll `check` until it returns a truthy value (bounded); fails with `what` on timeout. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 10_000, everyMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A joyent-brand VM payload for VmStore.create. */
export function vmPayload(overrides: Record<string, unknown> = {}): Record<string, unknown> & { brand: string } {
  return {
    uuid: newUuid(),
    brand: 'joyent-minimal',
    alias: 'test',
    owner_uuid: '930896af-bf8c-48d4-885c-6573a94b1853',
    image_uuid: newUuid(),
    max_physical_memory: 512,
    quota: 10,
    cpu_cap: 100,
    autoboot: true,
    nics: [],
    ...overrides,
  };
}
