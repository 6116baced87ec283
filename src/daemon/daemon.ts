/**
 * The daemon: one process hosting every mock CN. It owns the shared pieces (scheduler, HTTP
 * client, cn-agent server, vmadm, CNAPI reporter, agent plug-ins, fleet, control API,
 * daemon.json) and their order of start and stop. `stop()` releases every timer and socket,
 * so a SIGTERM ends the process cleanly.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import { CnapiReporter } from '../agents/cn-agent/cnapi-reporter/index.js';
import { ERROR_CATALOGUE, MockcloudError, toMockcloudError, type ErrorCode } from '../common/errors.js';
import { JsonHttpClient } from '../common/http-client.js';
import { createLogger, type Logger } from '../common/log.js';
import { PROFILES } from '../mockcn/profiles.js';
import { readSysinfoFile, adminNicOf, RUNTIME_SYSINFO_KEYS } from '../mockcn/sysinfo-file.js';
import type { MockCnImpl } from '../mockcn/mock-cn.js';
import type { AgentPluginContext, CnAgentPlugin, CnAgentPluginFactory } from './agent-plugin.js';
import type { DaemonConfig } from './config.js';
import { ControlApi, type ControlHandlers, type ControlResponse } from './control-api.js';
import { DaemonJsonWriter, daemonJsonPath, isProcessAlive, readDaemonJson, type DaemonJson } from './daemon-json.js';
import { createCnAgentHost, createVmadmHost, type ServiceContext } from './default-services.js';
import { DEFAULT_PLUGINS } from './default-plugins.js';
import { Fleet } from './fleet.js';
import { RateWindow } from './rates.js';
import { Scheduler, type ScheduledJob } from './scheduler.js';
import { ServerFactory } from './server-factory.js';
import type { CnAgentHost, VmadmHost } from './services.js';
import { MOCKCLOUD_VERSION } from './version.js';

const PACKAGE_VERSION = MOCKCLOUD_VERSION;

export interface DaemonOptions {
  config: DaemonConfig;
  log?: Logger;
  /** Stand-ins for tests; the real CnAgentServer / Vmadm by default. */
  cnAgent?: (ctx: ServiceContext) => Promise<CnAgentHost> | CnAgentHost;
  vmadm?: (ctx: ServiceContext) => Promise<VmadmHost> | VmadmHost;
  plugins?: readonly CnAgentPluginFactory[];
  /** Parallel server creations (POST /servers). */
  createConcurrency?: number;
  loadConcurrency?: number;
}

type DaemonState = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

const RATE_SAMPLE_MS = 5000;

/** Data dirs served by a daemon of this process (daemon.json's pid cannot tell them apart). */
const ACTIVE_DATA_DIRS = new Set<string>();

export class Daemon {
  readonly config: DaemonConfig;
  readonly log: Logger;
  readonly scheduler: Scheduler;
  readonly http: JsonHttpClient;
  readonly errors = new Map<string, number>();
  state: DaemonState = 'new';
  startedAt: Date | undefined;
  private readonly opts: DaemonOptions;
  private cnAgent: CnAgentHost | undefined;
  private vmadm: VmadmHost | undefined;
  private reporterInstance: CnapiReporter | undefined;
  private fleetInstance: Fleet | undefined;
  private factory: ServerFactory | undefined;
  private plugins: CnAgentPlugin[] = [];
  private control: ControlApi | undefined;
  private daemonJson: DaemonJsonWriter | undefined;
  private rates: RateWindow | undefined;
  private rateJob: ScheduledJob | undefined;
  private ownsDataDir = false;

  constructor(opts: DaemonOptions) {
    this.opts = opts;
    this.config = opts.config;
    this.log =
      opts.log ??
      createLogger({
        name: 'mockcloud',
        ...(opts.config.logFile ? { path: opts.config.logFile } : {}),
        ...(opts.config.logLevel ? { level: opts.config.logLevel as 'info' } : {}),
      });
    this.scheduler = new Scheduler({ log: this.log });
    this.http = new JsonHttpClient({ userAgent: `mockcloud/${PACKAGE_VERSION}`, maxSockets: 64 });
  }

  get fleet(): Fleet {
    if (!this.fleetInstance) throw new Error('daemon not started');
    return this.fleetInstance;
  }

  get reporter(): CnapiReporter {
    if (!this.reporterInstance) throw new Error('daemon not started');
    return this.reporterInstance;
  }

  get controlAddress(): { ip: string; port: number; url: string } {
    if (!this.control) throw new Error('daemon not started');
    return this.control.address;
  }

  countError(kind: string): void {
    this.errors.set(kind, (this.errors.get(kind) ?? 0) + 1);
  }

  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`daemon cannot start when ${this.state}`);
    this.state = 'starting';
    this.startedAt = new Date();
    const { config, log } = this;
    try {
      await fsp.mkdir(config.dataDir, { recursive: true });
      await this.refuseSecondDaemon();
      this.scheduler.start();

      const ctx: ServiceContext = { config, log, http: this.http };
      this.vmadm = await (this.opts.vmadm ?? createVmadmHost)(ctx);
      this.cnAgent = await (this.opts.cnAgent ?? createCnAgentHost)(ctx);
      await this.cnAgent.start();

      const reporter = new CnapiReporter({
        log: log.child({ component: 'cnapi-reporter' }),
        scheduler: this.scheduler,
        http: this.http,
        ...(config.urls.cnapi ? { cnapiUrl: config.urls.cnapi } : {}),
        ...(config.timings ? { timings: config.timings } : {}),
        onError: (kind) => this.countError(`cnapi.${kind}`),
      });
      this.reporterInstance = reporter;
      reporter.start();

      const fleetRef: { fleet?: Fleet } = {};
      const pluginCtx = (name: string): AgentPluginContext => ({
        log: log.child({ component: name }),
        scheduler: this.scheduler,
        http: this.http,
        urls: { ...config.urls },
        fleet: {
          get: (uuid) => fleetRef.fleet?.get(uuid),
          list: () => fleetRef.fleet?.list() ?? [],
          get size() {
            return fleetRef.fleet?.size ?? 0;
          },
        },
        bindIp: config.bindIp,
        dataDir: config.dataDir,
        countError: (kind) => this.countError(kind),
      });
      for (const make of this.opts.plugins ?? DEFAULT_PLUGINS) {
        const plugin = make(pluginCtx('agent-plugin'));
        await plugin.start();
        this.plugins.push(plugin);
      }

      this.daemonJson = new DaemonJsonWriter(daemonJsonPath(config.dataDir), () => this.daemonJsonContent(), log);
      const fleet = new Fleet({
        dataDir: config.dataDir,
        log: log.child({ component: 'fleet' }),
        vmadm: this.vmadm,
        cnAgent: this.cnAgent,
        reporter,
        plugins: this.plugins,
        loadConcurrency: this.opts.loadConcurrency ?? 32,
        countError: (kind) => this.countError(kind),
        onChange: () => this.daemonJson?.markDirty(),
        recoverCreation: (uuid) => this.factory!.recoverCreation(uuid),
      });
      this.fleetInstance = fleetRef.fleet = fleet;
      this.factory = new ServerFactory({
        config,
        fleet,
        http: this.http,
        log: log.child({ component: 'create-servers' }),
        concurrency: this.opts.createConcurrency ?? 16,
        countError: (kind) => this.countError(kind),
      });

      this.rates = new RateWindow(() => ({
        heartbeats: reporter.counters.heartbeat.ok,
        statusReports: reporter.counters.status.ok,
      }));
      this.sampleRates();

      this.control = new ControlApi(this.controlHandlers(), log.child({ component: 'control-api' }), config.controlPort);
      await this.control.start();
      await this.daemonJson.flush();

      await fleet.loadAll();
      this.state = 'running';
      await this.daemonJson.flush();
      log.info(
        { control: this.control.address.url, servers: fleet.size, dataDir: config.dataDir, urls: config.urls },
        'mockcloud daemon running',
      );
    } catch (err) {
      await this.stop().catch(() => undefined);
      throw err;
    }
  }

  async stop(): Promise<void> {
    if (this.state === 'stopped' || this.state === 'stopping') return;
    this.state = 'stopping';
    const step = async (what: string, fn: () => unknown): Promise<void> => {
      try {
        await fn();
      } catch (err) {
        this.log.error({ err }, `stopping: ${what} failed`);
      }
    };
    await step('control API', () => this.control?.stop());
    await step('CNAPI reporter', () => this.reporterInstance?.stop());
    for (const plugin of this.plugins) await step(plugin.name, () => plugin.stop());
    await step('cn-agent', () => this.cnAgent?.stop());
    await step('vmadm', () => this.vmadm?.close?.());
    this.scheduler.cancel(this.rateJob);
    this.scheduler.stop();
    this.http.close();
    await step('daemon.json', () => this.daemonJson?.remove());
    if (this.ownsDataDir) ACTIVE_DATA_DIRS.delete(this.config.dataDir);
    this.state = 'stopped';
    this.log.info('mockcloud daemon stopped');
  }

  /** A second daemon on the same data dir would fight over every file: refuse. */
  private async refuseSecondDaemon(): Promise<void> {
    if (ACTIVE_DATA_DIRS.has(this.config.dataDir)) {
      throw new MockcloudError('Conflict', `another mockcloud daemon of this process is using ${this.config.dataDir}`);
    }
    const other = await readDaemonJson(this.config.dataDir);
    if (other && other.pid !== process.pid && isProcessAlive(other.pid)) {
      throw new MockcloudError(
        'Conflict',
        `another mockcloud daemon (pid ${other.pid}, ${other.control.url}) is using ${this.config.dataDir}`,
      );
    }
    ACTIVE_DATA_DIRS.add(this.config.dataDir);
    this.ownsDataDir = true;
  }

  private sampleRates(): void {
    this.rates?.sample();
    this.rateJob = this.scheduler.schedule(RATE_SAMPLE_MS, () => this.sampleRates());
  }

  private daemonJsonContent(): DaemonJson {
    const servers: DaemonJson['servers'] = {};
    for (const cn of this.fleetInstance?.list() ?? []) {
      if (cn.agentAddress) servers[cn.uuid] = { ip: cn.agentAddress.ip, port: cn.agentAddress.port };
    }
    return {
      pid: process.pid,
      startedAt: (this.startedAt ?? new Date()).toISOString(),
      state: this.state === 'running' ? 'running' : 'starting',
      dataDir: this.config.dataDir,
      control: this.controlAddress,
      urls: { ...this.config.urls },
      bindIp: this.config.bindIp,
      servers,
    };
  }

  // ---- control API answers

  private controlHandlers(): ControlHandlers {
    return {
      ping: () => ({ pid: process.pid, state: this.state, version: PACKAGE_VERSION }),
      status: () => this.status(),
      config: () => ({ ...this.config }),
      profiles: () => [...PROFILES.values()],
      listServers: () => this.fleet.list().map((cn) => summary(cn)),
      getServer: (uuid) => {
        const cn = this.fleet.get(uuid);
        if (!cn) throw new MockcloudError('ResourceNotFound', `server ${uuid} not found`);
        return { ...summary(cn), agents: cn.agents, sysinfo: cn.sysinfo, paths: cn.paths };
      },
      createServers: (body) => this.createServers(body),
      deleteServer: (uuid) => this.factory!.remove(uuid),
      rescanServer: (uuid) => this.rescan(uuid),
    };
  }

  private async createServers(body: unknown): Promise<ControlResponse> {
    if (this.state !== 'running') throw new MockcloudError('ServiceUnavailable', `the daemon is ${this.state}`);
    const req = ServerFactory.validate(body);
    const result = await this.factory!.create(req);
    if (result.created.length === 0 && result.errors.length > 0) {
      const first = result.errors[0]!;
      const status = ERROR_CATALOGUE[first.code as ErrorCode] ?? 500;
      return { status, body: { code: first.code, message: first.message, errors: result.errors } };
    }
    return { body: result };
  }

  private async rescan(uuid: string): Promise<unknown> {
    const cn = this.fleet.get(uuid);
    if (!cn) throw new MockcloudError('ResourceNotFound', `server ${uuid} not found`);
    await cn.vms.rescan();
    cn.markStatusDirty();
    const onDisk = await readSysinfoFile(cn.paths.sysinfo, uuid).catch((err: unknown) => {
      throw toMockcloudError(err);
    });
    const current: Record<string, unknown> = { ...cn.sysinfo };
    for (const k of RUNTIME_SYSINFO_KEYS) delete current[k];
    const changed = JSON.stringify(onDisk) !== JSON.stringify(current);
    if (changed) await cn.reloadSysinfo();
    return { uuid, vms: cn.vms.size, sysinfoChanged: changed };
  }

  private status(): unknown {
    const reporter = this.reporterInstance;
    const fleet = this.fleetInstance;
    const rates = this.rates?.rates() ?? {};
    const mem = process.memoryUsage();
    const agents: Record<string, unknown> = {};
    for (const p of this.plugins) if (p.stats) agents[p.name] = p.stats();
    return {
      pid: process.pid,
      version: PACKAGE_VERSION,
      state: this.state,
      hostname: os.hostname(),
      startedAt: this.startedAt?.toISOString(),
      uptimeSeconds: this.startedAt ? Math.round((Date.now() - this.startedAt.getTime()) / 1000) : 0,
      dataDir: this.config.dataDir,
      urls: this.config.urls,
      servers: fleet?.size ?? 0,
      registered: fleet ? fleet.list().filter((cn) => cn.registered).length : 0,
      heartbeatsPerSecond: rates.heartbeats ?? 0,
      statusReportsPerSecond: rates.statusReports ?? 0,
      tasksInFlight: this.cnAgent?.tasksInFlight ?? 0,
      errors: Object.fromEntries([...this.errors.entries()].sort()),
      cnapi: reporter
        ? { url: this.config.urls.cnapi ?? null, standalone: reporter.standalone, failingServers: { ...reporter.failingCns }, ...reporter.counters }
        : undefined,
      cnAgent: this.cnAgent?.stats?.(),
      agents,
      scheduler: { jobs: this.scheduler.size, errors: this.scheduler.errors },
      http: { ...this.http.stats },
      memory: { rssBytes: mem.rss, heapUsedBytes: mem.heapUsed },
    };
  }
}

function summary(cn: MockCnImpl): Record<string, unknown> {
  return {
    uuid: cn.uuid,
    hostname: cn.hostname,
    adminIp: adminNicOf(cn.sysinfo).ip ?? null,
    agentAddress: cn.agentAddress ?? null,
    registered: cn.registered,
    draining: cn.draining,
    vms: cn.vms.size,
  };
}
