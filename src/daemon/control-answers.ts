/**
 * The control API's answers (GET /status, the servers, faults, events, rescans, an agent's
 * state): what a running daemon says of itself and does when asked, read from the parts the
 * daemon started (`DaemonParts`). The daemon (daemon.ts) builds these once its parts are up and
 * hands them to the control API and the fleet page; it keeps the order of start and stop.
 */
import type { IntervalHistogram } from 'node:perf_hooks';
import os from 'node:os';
import type { CnapiReporter } from '../agents/cn-agent/cnapi-reporter/index.js';
import { validateFaultSpec } from '../agents/cn-agent/faults.js';
import { TASK_REGISTRY } from '../agents/cn-agent/tasks/index.js';
import { ConfigAgentPlugin } from '../agents/config-agent/index.js';
import { FirewallerPlugin } from '../agents/firewaller/index.js';
import { ERROR_CATALOGUE, MockcloudError, toMockcloudError, type ErrorCode } from '../common/errors.js';
import type { JsonHttpClient } from '../common/http-client.js';
import type { Logger } from '../common/log.js';
import type { EventsEngine } from '../events/index.js';
import type { MockCnImpl } from '../mockcn/mock-cn.js';
import { placementBody, type ProfileCatalogue } from '../mockcn/profiles.js';
import { adminNicOf, DERIVED_SYSINFO_KEYS, readSysinfoFile, RUNTIME_SYSINFO_KEYS } from '../mockcn/sysinfo-file.js';
import { isHeadnodeSysinfo } from '../mockcn/sysinfo-template.js';
import type { CnAgentPlugin } from '../runtime/agent-plugin.js';
import type { Scheduler } from '../runtime/scheduler.js';
import type { Timing } from '../timing/timing.js';
import { bootReport, bootStatus, type BootWiring } from './boot-wiring.js';
import type { DaemonConfig } from './config.js';
import type { ControlHandlers, ControlResponse } from './control-api.js';
import type { Fleet } from './fleet.js';
import type { RateWindow } from './rates.js';
import { validateCreateRequest, validatePlacement } from './create-request.js';
import type { ServerFactory } from './server-factory.js';
import type { CnAgentHost } from './services.js';
import { describeTiming, setTiming } from './timing-control.js';
import { BUILD, MOCKCLOUD_VERSION } from './version.js';

/** What the answers read: the parts of a started daemon, and the few that change as it runs. */
export interface DaemonParts {
  readonly config: DaemonConfig;
  readonly scheduler: Scheduler;
  readonly http: JsonHttpClient;
  readonly log: Logger;
  /** How long things take (docs/timing.md): the daemon's profile, the CNs' own, events' adjustments. */
  readonly timing: Timing;
  readonly errors: ReadonlyMap<string, number>;
  readonly profiles: ProfileCatalogue;
  readonly daemonId: string;
  /** sysinfo `Mockcloud Daemon` of this daemon's CNs. */
  readonly hostedBy: string;
  readonly startedAt: Date;
  readonly fleet: Fleet;
  readonly factory: ServerFactory;
  readonly reporter: CnapiReporter;
  readonly cnAgent: CnAgentHost;
  readonly plugins: readonly CnAgentPlugin[];
  readonly events: EventsEngine;
  readonly boot: BootWiring;
  readonly rates: RateWindow;
  /** How late the event loop ran (the one thread every CN's heartbeats share), between two /status reads. */
  readonly loopDelay: IntervalHistogram;
  /** The daemon's state now (starting, running, stopping). */
  state(): string;
  /** The fleet web page's address; none with --ui-address none. */
  uiUrl(): string | undefined;
  scrapeMetrics(): Promise<{ contentType: string; body: string }>;
}

export class ControlAnswers {
  constructor(private readonly d: DaemonParts) {}

  handlers(): ControlHandlers {
    return {
      ping: () => ({ pid: process.pid, state: this.d.state(), version: MOCKCLOUD_VERSION }),
      status: () => this.status(),
      config: () => {
        const { timingProfile: _read, ...config } = this.d.config;
        return { ...config, timingProfile: this.d.timing.profile.name };
      },
      timing: () => describeTiming(this.d.timing),
      setTiming: (body) => setTiming(this.d.timing, body, process.cwd(), this.d.log),
      profiles: () => this.d.profiles.list(),
      listServers: () => this.d.fleet.list().map((cn) => this.described(cn)),
      getServer: (uuid) => {
        const cn = this.d.fleet.get(uuid);
        if (!cn) throw new MockcloudError('ResourceNotFound', `server ${uuid} not found`);
        return { ...this.described(cn), agents: cn.agents, sysinfo: cn.sysinfo, paths: cn.paths };
      },
      createServers: (body) => this.createServers(body),
      deleteServer: (uuid) => this.d.factory.remove(uuid),
      rescanServer: (uuid) => this.rescan(uuid),
      setPlacement: async (uuid, body) => {
        const cn = this.d.fleet.get(uuid);
        if (!cn) throw new MockcloudError('ResourceNotFound', `server ${uuid} not found`);
        const placement = validatePlacement(body, 'placement');
        const update = placementBody(placement);
        if (Object.keys(update).length === 0) throw new MockcloudError('InvalidArgument', 'placement: nothing to set (traits, reserved, reservoir, overprovisionRatios)');
        await this.d.factory.updateInCnapi(cn.uuid, update);
        return { uuid: cn.uuid, cnapi: update };
      },
      rescanAll: async () => {
        const results: unknown[] = [];
        const errors: { uuid: string; message: string }[] = [];
        for (const cn of this.d.fleet.list()) {
          await this.rescan(cn.uuid).then(
            (r) => results.push(r),
            (err: unknown) => errors.push({ uuid: cn.uuid, message: toMockcloudError(err).message }),
          );
        }
        return { servers: results, errors };
      },
      listFaults: () => this.faults().list(),
      setFault: (body) => this.faults().set(this.checkFaultTargets(body)),
      clearFaults: (server) => {
        const f = this.faults();
        const before = f.list().length;
        f.clear(server);
        return { removed: before - f.list().length };
      },
      removeFault: (id) => {
        if (!this.faults().remove(id)) throw new MockcloudError('ResourceNotFound', `fault rule ${id} not found`);
        return { removed: 1 };
      },
      listEvents: () => this.d.events.list(),
      startEvent: (body) => this.d.events.startEvent(body),
      endEvent: (id) => this.d.events.endEvent(id),
      endAllEvents: () => this.d.events.endAll(),
      markEvents: (body) => this.d.events.mark(body),
      metrics: () => this.d.scrapeMetrics(),
      serverAgent: (uuid, what, query) => this.serverAgent(uuid, what, query),
      boots: (query) => bootReport(this.d.boot, this.d.fleet.list(), query),
    };
  }

  /** GET /servers/:uuid/{config-agent,firewall,fwadm}: what the CN's config-agent and firewaller hold. */
  private serverAgent(uuid: string, what: string, query: URLSearchParams): ControlResponse {
    if (!this.d.fleet.get(uuid)) throw new MockcloudError('ResourceNotFound', `server ${uuid} not found`);
    const fw = this.d.plugins.find((p): p is FirewallerPlugin => p instanceof FirewallerPlugin);
    if (what === 'config-agent') {
      const ca = this.d.plugins.find((p): p is ConfigAgentPlugin => p instanceof ConfigAgentPlugin)?.details(uuid);
      if (!ca) throw new MockcloudError('ServiceUnavailable', 'config-agent is not running (no SAPI)');
      return { body: ca };
    }
    const state = fw?.state(uuid);
    if (!fw || !state) throw new MockcloudError('ServiceUnavailable', 'firewaller is not running (no FWAPI)');
    if (what === 'firewall') return { body: state };
    const args = (query.get('cmd') ?? 'list').trim().split(/\s+/);
    const out = fw.fwadm(uuid, args)!;
    return { status: out.code === 0 ? 200 : out.code === 2 ? 400 : 404, text: { contentType: 'text/plain; charset=utf-8', body: out.code === 0 ? out.stdout : out.stderr } };
  }

  /** A CN's row of GET /servers: its summary and what the agent plug-ins say of it. */
  private described(cn: MockCnImpl): Record<string, unknown> {
    const row = summary(cn);
    for (const p of this.d.plugins) Object.assign(row, p.describe?.(cn.uuid));
    return row;
  }

  /**
   * A rule that can never fire is a mistake to say, not to keep: its task must be one cn-agent
   * runs (the task registry), its server one of this fleet.
   */
  private checkFaultTargets(body: unknown): unknown {
    const spec = validateFaultSpec(body);
    if (spec.task !== undefined && !TASK_REGISTRY.has(spec.task)) {
      throw new MockcloudError(
        'InvalidArgument',
        `fault: cn-agent has no task ${JSON.stringify(spec.task)}; its tasks are ${[...TASK_REGISTRY.keys()].sort().join(', ')}`,
      );
    }
    if (spec.server !== undefined && !this.d.fleet.get(spec.server)) {
      throw new MockcloudError('InvalidArgument', `fault: server ${spec.server} is not one of this daemon's mock CNs (see mockcloud list-servers)`);
    }
    return body;
  }

  private faults(): NonNullable<CnAgentHost['faults']> {
    const f = this.d.cnAgent.faults;
    if (!f) throw new MockcloudError('ServiceUnavailable', 'this daemon\'s cn-agent has no fault injection');
    return f;
  }

  private async createServers(body: unknown): Promise<ControlResponse> {
    if (this.d.state() !== 'running') throw new MockcloudError('ServiceUnavailable', `the daemon is ${this.d.state()}`);
    const req = validateCreateRequest(body, this.d.profiles);
    const result = await this.d.factory.create(req);
    if (result.created.length === 0 && result.errors.length > 0) {
      const first = result.errors[0]!;
      const status = ERROR_CATALOGUE[first.code as ErrorCode] ?? 500;
      return { status, body: { code: first.code, message: first.message, errors: result.errors } };
    }
    return { body: result };
  }

  private async rescan(uuid: string): Promise<unknown> {
    const cn = this.d.fleet.get(uuid);
    if (!cn) throw new MockcloudError('ResourceNotFound', `server ${uuid} not found`);
    await cn.vms.rescan();
    cn.markStatusDirty();
    const onDisk = await readSysinfoFile(cn.paths.sysinfo, uuid).catch((err: unknown) => {
      throw toMockcloudError(err);
    });
    const current: Record<string, unknown> = { ...cn.sysinfo };
    const file: Record<string, unknown> = { ...onDisk };
    for (const k of [...RUNTIME_SYSINFO_KEYS, ...DERIVED_SYSINFO_KEYS]) {
      delete current[k];
      delete file[k];
    }
    const changed = JSON.stringify(file) !== JSON.stringify(current);
    if (changed) await cn.reloadSysinfo();
    return { uuid, vms: cn.vms.size, sysinfoChanged: changed };
  }

  /** Event-loop delay since the previous /status read (then the histogram starts again). */
  private eventLoopFigures(): { delayP99Ms: number; delayMaxMs: number } | undefined {
    const h = this.d.loopDelay;
    if (h.count === 0) return undefined;
    // The histogram counts the whole sampling interval; what the loop was late is beyond it.
    const late = (ns: number): number => Math.max(0, Math.round(ns / 1e6 - 20));
    const out = { delayP99Ms: late(h.percentile(99)), delayMaxMs: late(h.max) };
    h.reset();
    return out;
  }

  private status(): unknown {
    const { reporter, fleet } = this.d;
    const rates = this.d.rates.rates();
    const mem = process.memoryUsage();
    const agents: Record<string, unknown> = {};
    for (const p of this.d.plugins) if (p.stats) agents[p.name] = p.stats();
    return {
      pid: process.pid,
      version: MOCKCLOUD_VERSION,
      gitSha: BUILD.gitSha,
      buildTime: BUILD.buildTime,
      state: this.d.state(),
      hostname: os.hostname(),
      /** Which daemon this is for Triton: its CNs' sysinfo `Mockcloud Daemon` is `hostedBy`. */
      daemonId: this.d.daemonId,
      hostedBy: this.d.hostedBy,
      startedAt: this.d.startedAt.toISOString(),
      uptimeSeconds: Math.round((Date.now() - this.d.startedAt.getTime()) / 1000),
      dataDir: this.d.config.dataDir,
      urls: this.d.config.urls,
      /** The live fleet web page (`mockcloud ui`); null with --ui-address none. */
      ui: this.d.uiUrl() ?? null,
      servers: fleet.size,
      /** Removed CNs whose NICs, VMs or CNAPI record are not gone yet (finished at the next start). */
      deletingServers: this.d.factory.deletingServers,
      /** Triton objects a removal found were not its CN's and left alone, by kind (never delete what you did not check). */
      leftAlone: this.d.factory.leftAlone,
      /** The dev DC's headnode server among them, when this daemon hosts it. */
      headnodeServer: fleet.headnode()?.uuid ?? null,
      registered: fleet.list().filter((cn) => cn.registered).length,
      /** CNs by the hardware profile they were made with (the headnode server among them). */
      profiles: countBy(fleet.list().map((cn) => cn.profile)),
      /** The seed of creation draws (--seed), when one is set. */
      seed: this.d.config.seed ?? null,
      /** The daemon's timing profile (docs/timing.md) and the events adjusting it now. */
      timing: { profile: this.d.timing.profile.name, adjustments: this.d.timing.activeAdjustments.length },
      /** CNs down (rebooting): not heartbeating, cn-agent not listening. */
      down: fleet.list().filter((cn) => cn.power === 'down').length,
      heartbeatsPerSecond: rates.heartbeats ?? 0,
      statusReportsPerSecond: rates.statusReports ?? 0,
      tasksInFlight: this.d.cnAgent.tasksInFlight ?? 0,
      /** Fault events running now (GET /events lists them). */
      activeEvents: this.d.events.size,
      eventLoop: this.eventLoopFigures(),
      /** The heartbeat thread's own loop since the last /status: late turns, CPU time and waits for a CPU. */
      heartbeatThread: reporter.heartbeatThreadFigures() ?? null,
      boot: bootStatus(this.d.boot, fleet.list()),
      errors: Object.fromEntries([...this.d.errors.entries()].sort()),
      cnapi: {
        url: this.d.config.urls.cnapi ?? null,
        standalone: reporter.standalone,
        failingServers: { ...reporter.failingCns },
        lastFailure: reporter.lastFailure ?? null,
        ...reporter.counters,
      },
      cnAgent: this.d.cnAgent.stats?.(),
      agents,
      /** `lag`: how late the most overdue hot job (heartbeats) and other job are (a busy daemon falls behind). */
      scheduler: { jobs: this.d.scheduler.size, errors: this.d.scheduler.errors, lag: this.d.scheduler.lag() },
      http: { ...this.d.http.stats, backgroundQueued: this.d.http.backgroundQueued, queued: this.d.http.queued },
      memory: {
        rssBytes: mem.rss,
        heapUsedBytes: mem.heapUsed,
        heapTotalBytes: mem.heapTotal,
        externalBytes: mem.external,
        arrayBuffersBytes: mem.arrayBuffers,
      },
    };
  }
}

function countBy(names: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const n of [...names].sort()) out[n] = (out[n] ?? 0) + 1;
  return out;
}

function summary(cn: MockCnImpl): Record<string, unknown> {
  return {
    uuid: cn.uuid,
    hostname: cn.hostname,
    adminIp: adminNicOf(cn.sysinfo).ip ?? null,
    agentAddress: cn.agentAddress ?? null,
    registered: cn.registered,
    draining: cn.draining,
    /** The dev DC's headnode server: listed, but never counted or deleted by the fleet commands. */
    headnode: isHeadnodeSysinfo(cn.sysinfo),
    vms: cn.vms.size,
    /** The hardware profile it was made with. */
    profile: cn.profile,
    /** sysinfo "Zpool Creation" (epoch seconds at creation): what "newest" means for ensure/delete --count. */
    createdAt: typeof cn.sysinfo['Zpool Creation'] === 'number' ? cn.sysinfo['Zpool Creation'] : null,
  };
}
