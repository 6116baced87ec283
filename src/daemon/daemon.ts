/**
 * The daemon: one process hosting every mock CN. It owns the shared pieces (scheduler, HTTP
 * client, cn-agent server, vmadm, CNAPI reporter, agent plug-ins, fleet, control API,
 * daemon.json) and their order of start and stop. `stop()` releases every timer and socket,
 * so a SIGTERM ends the process cleanly. What it wires lives beside it: the start-up checks
 * (preflight.ts), the embedded dev headnode (embedded-headnode.ts), what the metrics read
 * (metrics-wiring.ts) and the control API's answers (control-answers.ts).
 */
import path from 'node:path';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { CnapiReporter } from '../agents/cn-agent/cnapi-reporter/index.js';
import { TASK_REGISTRY } from '../agents/cn-agent/tasks/index.js';
import { MockcloudError } from '../common/errors.js';
import { JsonHttpClient } from '../common/http-client.js';
import { createLogger, failureFields, type Logger } from '../common/log.js';
import { describeSystemError } from '../common/system-errors.js';
import type { Headnode } from '../headnode/index.js';
import { ProfileCatalogue } from '../mockcn/profiles.js';
import { loadProfileFiles } from '../mockcn/profile-files.js';
import { batchMixes, type Mix } from './fleet-mix.js';
import type { MockCn } from '../mockcn/types.js';
import type { AgentPluginContext, CnAgentPlugin, CnAgentPluginFactory } from '../runtime/agent-plugin.js';
import { settingHint, type DaemonConfig } from './config.js';
import { CONTROL_SOCKET, ControlApi } from './control-api.js';
import { ControlAnswers } from './control-answers.js';
import { ensureHeadnodeServer, startEmbeddedHeadnode, type EmbeddedHeadnodeWish } from './embedded-headnode.js';
import { DaemonJsonWriter, daemonJsonPath, type DaemonJson } from './daemon-json.js';
import { createCnAgentHost, createVmadmHost, type ServiceContext } from './default-services.js';
import { defaultPlugins } from './default-plugins.js';
import { LoopbackAgentIps } from './agent-ips.js';
import { CmonAgentPlugin } from '../agents/cmon-agent/index.js';
import { FirewallerPlugin } from '../agents/firewaller/index.js';
import { SapiInstancesPlugin, type SapiInstancesOptions } from '../agents/sapi-instances/index.js';
import { Fleet } from './fleet.js';
import { startFleetPage } from './fleet-page.js';
import type { UiServer } from '../ui/server.js';
import { EventsEngine } from '../events/index.js';
import { prepareDataDir, preflight, probeBindIp } from './preflight.js';
import { hostedByValue, loadDaemonId } from './daemon-id.js';
import { RateWindow } from './rates.js';
import { Scheduler, type ScheduledJob } from '../runtime/scheduler.js';
import { INSTANT } from '../timing/builtin.js';
import type { TimingProfile } from '../timing/profile.js';
import { resolveTiming } from '../timing/resolve.js';
import { Timing } from '../timing/timing.js';
import { waitOn } from '../timing/wait.js';
import { ServerFactory, type CreateResult } from './server-factory.js';
import { removeStaleServerTemps, removeStaleTempsAtStart } from './stale-temps.js';
import type { CnAgentHost, VmadmHost } from './services.js';
import { MOCKCLOUD_VERSION } from './version.js';
import { METRICS_CONTENT_TYPE, type DaemonMetrics } from '../metrics/index.js';
import { MetricsListener } from './metrics-listener.js';
import { createDaemonMetrics } from './metrics-wiring.js';
import { firstBoot, startBootService, type BootWiring } from './boot-wiring.js';

const PACKAGE_VERSION = MOCKCLOUD_VERSION;

export interface DaemonOptions {
  config: DaemonConfig;
  log?: Logger;
  /** Stand-ins for tests; the real CnAgentServer / Vmadm by default. */
  cnAgent?: (ctx: ServiceContext) => Promise<CnAgentHost> | CnAgentHost;
  vmadm?: (ctx: ServiceContext) => Promise<VmadmHost> | VmadmHost;
  /** The agent plug-ins; `defaultPlugins(config)` (vm-agent, net-agent, cmon-agent) by default. */
  plugins?: readonly CnAgentPluginFactory[];
  /** Parallel server creations (POST /servers). */
  createConcurrency?: number;
  loadConcurrency?: number;
  /** A stand-in for tests: the MAC draw of server creation (e.g. to force clashes). */
  randomMac?: () => string;
  /** Tuning of the SAPI adoption of agent instances (tests: short delays). */
  sapiInstances?: Partial<SapiInstancesOptions>;
  /**
   * Run the embedded dev headnode (src/headnode) in this process when no Triton address is
   * configured (no CNAPI, VMAPI, NAPI, IMGAPI or SAPI URL), and point every CN at it. Off unless
   * asked: `mockcloud daemon` asks unless run with --no-headnode.
   */
  embeddedHeadnode?: EmbeddedHeadnodeWish;
}

type DaemonState = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

const RATE_SAMPLE_MS = 5000;

/** How long `sendHeartbeatsAhead` waits for the heartbeats it sent to be answered. */
const AHEAD_WAIT_MS = 1500;
/** Beyond the pause and the wait. */
const AHEAD_MARGIN_MS = 500;

/** Data dirs served by a daemon of this process (daemon.json's pid cannot tell them apart). */
const ACTIVE_DATA_DIRS = new Set<string>();

export class Daemon {
  readonly config: DaemonConfig;
  readonly log: Logger;
  readonly scheduler: Scheduler;
  readonly http: JsonHttpClient;
  readonly errors = new Map<string, number>();
  /** What the start-up checks changed (a cmon-agent port moved off a taken 9163), for the operator. */
  readonly notices: string[] = [];
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
  /** The live fleet web page's listener (src/ui); none with --ui-address none. */
  private ui: UiServer | undefined;
  private eventsEngine: EventsEngine | undefined;
  /** GET /metrics (src/metrics), and its own listener with --metrics-address. */
  private metrics: DaemonMetrics | undefined;
  private metricsListener: MetricsListener | undefined;
  /** Tasks answered and their summed time to the answer (ms), for the fleet page. */
  private readonly taskLatency = { count: 0, totalMs: 0 };
  private daemonJson: DaemonJsonWriter | undefined;
  private rates: RateWindow | undefined;
  /** How late the event loop ran (the one thread every CN's heartbeats share), between two /status reads. */
  private loopDelay: IntervalHistogram | undefined;
  private rateJob: ScheduledJob | undefined;
  private ownsDataDir = false;
  private headnodeInstance: Headnode | undefined;
  /** How the CNs boot: the relay to booter and the boot service (src/boot). */
  private boot: BootWiring | undefined;
  private agentIps: LoopbackAgentIps | undefined;
  /** Finishing the removals an earlier run left (ServerFactory.resumeRemovals). */
  private resuming: Promise<void> | undefined;
  /** Removing the temp files an earlier run left in the CNs' dirs (stale-temps.ts). */
  private sweeping: Promise<void> | undefined;
  /** This data dir's daemon id (daemon-id.ts); known once started. */
  daemonId: string | undefined;
  /** The hardware profiles: the built-ins and the profile files' (read at start). */
  profiles = new ProfileCatalogue();
  /** How long things take (docs/timing.md): the daemon's profile, the CNs' own, events' adjustments. */
  readonly timing: Timing;
  /** The timing of each hardware profile that names one (its `timing:`). */
  private readonly profileTimings = new Map<string, TimingProfile>();

  /** sysinfo `Mockcloud Daemon` of this daemon's CNs: "<id>@<host>". */
  get hostedBy(): string {
    if (!this.daemonId) throw new Error('daemon not started');
    return hostedByValue(this.daemonId);
  }

  constructor(opts: DaemonOptions) {
    this.opts = opts;
    // A copy: the embedded headnode fills in the URLs, the caller's object stays as given.
    this.config = { ...opts.config, urls: { ...opts.config.urls }, sources: { ...opts.config.sources } };
    this.log =
      opts.log ??
      createLogger({
        name: 'mockcloud',
        ...(opts.config.logFile ? { path: opts.config.logFile } : {}),
        ...(opts.config.logLevel ? { level: opts.config.logLevel as 'info' } : {}),
      });
    this.scheduler = new Scheduler({ log: this.log });
    this.timing = new Timing({
      profile: this.config.timingProfile ?? INSTANT,
      seed: this.config.seed,
      profileOfServer: (server) => {
        if (this.profileTimings.size === 0) return undefined;
        const cn = this.fleetInstance?.get(server);
        return cn ? this.profileTimings.get(cn.profile) : undefined;
      },
    });
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

  /** Where the fleet web page listens; undefined with --ui-address none. */
  get uiAddress(): { ip: string; port: number; url: string } | undefined {
    return this.ui?.address;
  }

  get controlAddress(): { ip: string; port: number; url: string; socket?: string } {
    if (!this.control) throw new Error('daemon not started');
    return this.control.address;
  }

  /**
   * Ahead of a pause of about `expectedMs` (a full heap collection): every heartbeat that would
   * fall due during it, or while the ones sent now are answered, is sent now, and we wait (at
   * most AHEAD_WAIT_MS) for the answers. A CN's heartbeat comes early rather than late; the next
   * follows the usual interval after it.
   */
  async sendHeartbeatsAhead(expectedMs: number): Promise<number> {
    // Twice the expected pause: on a busy machine a collection took 2.9 s where 1.4 s was
    // expected. Never more than one interval: each CN's heartbeat is then sent once, now.
    const windowMs = Math.min(this.reporter.timings.heartbeatIntervalMs, 2 * expectedMs + AHEAD_WAIT_MS + AHEAD_MARGIN_MS);
    const { sent, answered } = await this.reporter.sendHeartbeatsAhead(windowMs);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([answered, new Promise((r) => (timer = setTimeout(r, AHEAD_WAIT_MS)))]);
    clearTimeout(timer);
    return sent;
  }

  /** The fleet's cn-agent tasks in flight, and started plus ended ever (the heap policy's "working"). */
  taskActivity(): { inFlight: number; startedOrEnded: number } {
    return { inFlight: this.cnAgent?.tasksInFlight ?? 0, startedOrEnded: this.cnAgent?.tasksStartedOrEnded ?? 0 };
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
      await this.preflight();
      await probeBindIp(config.bindIp);
      await prepareDataDir(config.dataDir);
      await removeStaleTempsAtStart(config.dataDir, log);
      // Before anything starts: a bad profile file is the operator's to fix, named by file and line.
      this.profiles = new ProfileCatalogue(
        await loadProfileFiles(config.profilesDir ?? path.join(config.dataDir, 'profiles'), config.profilesDir !== undefined),
      );
      const profilesDir = config.profilesDir ?? path.join(config.dataDir, 'profiles');
      for (const p of this.profiles.list()) {
        if (p.timing !== undefined) this.profileTimings.set(p.name, await resolveTiming(p.timing, profilesDir));
      }
      this.daemonId = await loadDaemonId(config.dataDir);
      // The dev DC's workflows and waitlist take the daemon's timing, on its scheduler.
      this.headnodeInstance = await startEmbeddedHeadnode(this.opts.embeddedHeadnode, config, log, {
        ms: (key: string) => this.timing.ms(key),
        wait: waitOn(this.scheduler),
      });
      this.scheduler.start();
      this.loopDelay = monitorEventLoopDelay({ resolution: 20 });
      this.loopDelay.enable();
      const metrics = createDaemonMetrics({
        config, daemonId: this.daemonId, scheduler: this.scheduler, http: this.http, errors: this.errors,
        parts: () => ({ fleet: this.fleetInstance, events: this.eventsEngine, reporter: this.reporterInstance, cnAgent: this.cnAgent, plugins: this.plugins }),
      });
      this.metrics = metrics;

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
      // RFD 82: agent instances in SAPI. Built before cn-agent, whose agent_install adopts through it.
      const sapiInstances = config.urls.sapi ? new SapiInstancesPlugin(pluginCtx('sapi-instances'), this.opts.sapiInstances) : undefined;

      const ctx: ServiceContext = {
        config,
        log,
        http: this.http,
        scheduler: this.scheduler,
        timing: this.timing,
        ...(sapiInstances ? { agentInstances: sapiInstances } : {}),
        firewallState: (uuid) => {
          const s = this.plugins.find((p): p is FirewallerPlugin => p instanceof FirewallerPlugin)?.state(uuid);
          return s ? { rules: s.rules, rvms: s.rvms } : undefined;
        },
        // One observation of each task's end, for the metrics and the fleet page's latency chart.
        onTaskEnd: (task, end, ms) => {
          this.taskLatency.count++;
          this.taskLatency.totalMs += ms;
          metrics.taskEnded(task, end, ms);
        },
      };
      this.vmadm = await (this.opts.vmadm ?? createVmadmHost)(ctx);
      this.cnAgent = await (this.opts.cnAgent ?? createCnAgentHost)(ctx);
      await this.cnAgent.start();

      const boot = await startBootService({
        config, headnode: this.headnodeInstance, scheduler: this.scheduler, http: this.http, log, remoteId: this.hostedBy, timing: this.timing,
      });
      this.boot = boot;
      const reporter = new CnapiReporter({
        log: log.child({ component: 'cnapi-reporter' }),
        scheduler: this.scheduler,
        http: this.http,
        ...(config.urls.cnapi ? { cnapiUrl: config.urls.cnapi } : {}),
        ...(config.timings ? { timings: config.timings } : {}),
        onError: (kind) => this.countError(`cnapi.${kind}`),
        onHeartbeatLate: metrics.heartbeatLate,
        onFirstHeartbeat: (cn) => boot.service.heartbeat(cn),
        heartbeatThread: true,
        cnapiPausesWithThisThread: this.headnodeInstance !== undefined,
      });
      this.reporterInstance = reporter;
      reporter.start();

      for (const make of this.opts.plugins ?? defaultPlugins(config)) {
        const plugin = make(pluginCtx('agent-plugin'));
        await plugin.start();
        this.plugins.push(plugin);
      }
      if (sapiInstances) {
        await sapiInstances.start();
        this.plugins.push(sapiInstances);
      }

      this.daemonJson = new DaemonJsonWriter(daemonJsonPath(config.dataDir), () => this.daemonJsonContent(), log);
      if (config.agentIps === 'loopback') {
        this.agentIps = new LoopbackAgentIps(config.dataDir, log.child({ component: 'agent-ips' }));
        await this.agentIps.load();
      }
      const agentIps = this.agentIps;
      const cmon = this.cmonAgent();
      // cmon-agent opens a CN's own address ('agent-ips') when the CN's agents start, which for
      // a CN booting through booter is after it joined the fleet: daemon.json follows its sockets.
      cmon?.watchAddresses(() => this.daemonJson?.markDirty());
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
        hostedBy: this.hostedBy,
        boot: boot.service,
        ...(agentIps ? { agentIpFor: (uuid: string) => agentIps.addressFor(uuid) } : {}),
      });
      this.fleetInstance = fleetRef.fleet = fleet;
      this.factory = new ServerFactory({
        config,
        fleet,
        http: this.http,
        log: log.child({ component: 'create-servers' }),
        concurrency: this.opts.createConcurrency ?? 16,
        countError: (kind) => this.countError(kind),
        ...(agentIps ? { onRemoved: (uuid: string) => agentIps.release(uuid) } : {}),
        ...(sapiInstances ? { releaseAgentInstances: (cn) => sapiInstances.release(cn) } : {}),
        ...(this.opts.randomMac ? { randomMac: this.opts.randomMac } : {}),
        profiles: this.profiles,
        externalNics: config.externalNics ?? this.headnodeInstance !== undefined,
        ...(boot.relay ? { firstBoot: (cn: MockCn) => firstBoot(boot, this.scheduler, cn) } : {}),
        stopped: () => this.state === 'stopping' || this.state === 'stopped',
        daemonId: () => this.daemonId,
      });

      this.rates = new RateWindow(() => ({
        heartbeats: reporter.counters.heartbeat.ok,
        statusReports: reporter.counters.status.ok,
      }));
      this.sampleRates();

      this.eventsEngine = this.createEventsEngine(fleet);
      await this.eventsEngine.start();
      await this.startMetricsListener();

      const handlers = new ControlAnswers({
        config, scheduler: this.scheduler, http: this.http, log, timing: this.timing, errors: this.errors, profiles: this.profiles,
        daemonId: this.daemonId, hostedBy: this.hostedBy, startedAt: this.startedAt, fleet, factory: this.factory, reporter,
        cnAgent: this.cnAgent, plugins: this.plugins, events: this.eventsEngine, boot, rates: this.rates, loopDelay: this.loopDelay,
        state: () => this.state,
        uiUrl: () => this.ui?.address.url,
        scrapeMetrics: () => this.scrapeMetrics(),
      }).handlers();
      this.control = new ControlApi(handlers, log.child({ component: 'control-api' }), {
        port: config.controlPort,
        socketPath: path.join(config.dataDir, CONTROL_SOCKET),
        ...(config.maxControlConnections !== undefined ? { maxConnections: config.maxControlConnections } : {}),
      });
      await this.control.start().catch((err: unknown) => {
        throw new MockcloudError(
          'InvalidArgument',
          `the control API cannot listen on 127.0.0.1:${config.controlPort}: ${describeSystemError(err)}; ` +
            `choose another port with ${settingHint('controlPort')}, or 0 for any free one`,
          { cause: err },
        );
      });
      this.ui = await startFleetPage({
        config, log: log.child({ component: 'fleet-page' }), scheduler: this.scheduler, fleet, reporter,
        cnAgent: this.cnAgent, taskLatency: this.taskLatency, events: this.eventsEngine, errors: this.errors, control: handlers,
        agentFacts: (uuid) => Object.assign({}, ...this.plugins.map((p) => p.describe?.(uuid))) as Record<string, unknown>,
        boot: boot.service,
      });
      await this.daemonJson.flush();

      const loaded = await fleet.loadAll();
      // Removals an earlier run could not finish: in the background, the CNs are not waiting.
      this.resuming = this.factory.resumeRemovals(loaded.deleting);
      this.sweeping = removeStaleServerTemps(config.dataDir, log).catch((err: unknown) => log.warn({ err }, 'cannot remove the temp files of an earlier run'));
      if (this.headnodeInstance) await ensureHeadnodeServer(fleet, this.factory, log, (kind) => this.countError(kind));
      await cmon?.settled();
      this.state = 'running';
      await this.daemonJson.flush();
      log.info(
        { control: this.control.address.url, servers: fleet.size, dataDir: config.dataDir, urls: config.urls, timing: this.timing.profile.name },
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
        this.log.error(failureFields(err), `stopping: ${what} failed`);
      }
    };
    this.loopDelay?.disable();
    this.boot?.service.stop();
    await step('control API', () => this.control?.stop());
    await step('fleet page', () => this.ui?.stop());
    await step('events', () => this.eventsEngine?.stop());
    await step('metrics listener', () => this.metricsListener?.stop());
    await step('CNAPI reporter', () => this.reporterInstance?.stop());
    for (const plugin of this.plugins) await step(plugin.name, () => plugin.stop());
    await step('cn-agent', () => this.cnAgent?.stop());
    await step('vmadm', () => this.vmadm?.close?.());
    await step('DHCP relay', () => this.boot?.relay?.stop());
    this.scheduler.cancel(this.rateJob);
    this.scheduler.stop();
    this.http.observer = undefined;
    this.metrics?.stop();
    this.http.close();
    await step('interrupted removals', () => this.resuming);
    await step('temp files of an earlier run', () => this.sweeping);
    await step('daemon.json', () => this.daemonJson?.remove());
    await step('embedded headnode', () => this.headnodeInstance?.stop());
    if (this.ownsDataDir) ACTIVE_DATA_DIRS.delete(this.config.dataDir);
    this.state = 'stopped';
    this.log.info('mockcloud daemon stopped');
  }

  /** Where --metrics-address serves GET /metrics; undefined without one. */
  get metricsAddress(): { ip: string; port: number; url: string } | undefined {
    return this.metricsListener?.address;
  }

  /** --metrics-address: the same /metrics on a listener of its own, for a scraper elsewhere. */
  private async startMetricsListener(): Promise<void> {
    const where = this.config.metricsAddress;
    if (!where) return;
    this.metricsListener = new MetricsListener(where, () => this.scrapeMetrics(), this.log.child({ component: 'metrics' }));
    await this.metricsListener.start().catch((err: unknown) => {
      throw new MockcloudError(
        'InvalidArgument',
        `metrics cannot be served on ${where.ip}:${where.port}: ${describeSystemError(err)}; choose another address with ${settingHint('metricsAddress')}`,
        { cause: err },
      );
    });
    this.log.info({ metrics: this.metricsListener.address.url }, 'serving metrics');
  }

  private async scrapeMetrics(): Promise<{ contentType: string; body: string }> {
    if (!this.metrics) throw new MockcloudError('ServiceUnavailable', `the daemon is ${this.state}`);
    return { contentType: METRICS_CONTENT_TYPE, body: await this.metrics.scrape() };
  }

  /** The fault events engine (POST /events); known once started. */
  get events(): EventsEngine {
    if (!this.eventsEngine) throw new Error('daemon not started');
    return this.eventsEngine;
  }

  private createEventsEngine(fleet: Fleet): EventsEngine {
    const { config } = this;
    const faults = this.cnAgent?.faults;
    const addEventRule = faults?.addEventRule?.bind(faults);
    return new EventsEngine({
      log: this.log.child({ component: 'events' }),
      scheduler: this.scheduler,
      http: this.http,
      dataDir: config.dataDir,
      ...(config.seed !== undefined ? { seed: config.seed } : {}),
      urls: { cnapi: config.urls.cnapi, vmapi: config.urls.vmapi, napi: config.urls.napi },
      fleet,
      ...(faults && addEventRule ? { taskFaults: { addEventRule, remove: (id: string) => faults.remove(id) } } : {}),
      knownTask: (name) => TASK_REGISTRY.has(name),
      ...(config.bootSeconds !== undefined ? { bootSeconds: config.bootSeconds } : {}),
      timing: this.timing,
    });
  }

  /** Whether start() runs the embedded dev headnode: asked for, and no Triton address configured. */
  get devMode(): boolean {
    const urls = this.config.urls;
    return this.opts.embeddedHeadnode !== undefined && !urls.cnapi && !urls.vmapi && !urls.napi && !urls.imgapi;
  }

  /** The embedded dev headnode, when this daemon runs one. */
  get headnode(): Headnode | undefined {
    return this.headnodeInstance;
  }

  /**
   * Create CNs until the fleet has at least `count` compute nodes (the daemon's --servers; the
   * headnode server does not count): the same code as create-servers, in batches so the log
   * shows progress. Never deletes.
   */
  async growTo(count: number, onProgress?: (done: number, wanted: number) => void, mix?: Mix): Promise<CreateResult> {
    if (this.state !== 'running') throw new MockcloudError('ServiceUnavailable', `the daemon is ${this.state}`);
    const all: CreateResult = { created: [], errors: [] };
    const missing = count - this.fleet.computeNodeCount;
    if (missing <= 0) return all;
    if (mix) for (const [name] of mix) this.profiles.get(name);
    this.log.info({ servers: this.fleet.computeNodeCount, wanted: count }, `creating ${missing} server(s)`);
    const batch = 32;
    const sizes: number[] = [];
    for (let left = missing; left > 0; left -= batch) sizes.push(Math.min(batch, left));
    // The run's exact counts, batch by batch (fleet-mix.ts).
    const mixes = mix ? batchMixes(missing, mix, sizes) : [];
    for (let done = 0, b = 0; done < missing && this.state === 'running'; b++) {
      const n = sizes[b]!;
      const res = await this.factory!.create({ count: n, ...(mixes[b] ? { mix: mixes[b] } : {}) });
      all.created.push(...res.created);
      all.errors.push(...res.errors);
      done += n;
      this.log.info({ created: all.created.length, failed: all.errors.length, wanted: missing }, `created ${all.created.length}/${missing} servers`);
      onProgress?.(all.created.length, missing);
      if (res.created.length === 0) break; // nothing works (NAPI down, ...): say so, do not spin
    }
    return all;
  }

  /**
   * Before anything is written: a second daemon on the same data dir would fight over every
   * file, and a port that cannot be listened on would fail the start half-way (preflight.ts).
   */
  private async preflight(): Promise<void> {
    const checked = await preflight(this.config, {
      devMode: this.devMode,
      activeDataDirs: ACTIVE_DATA_DIRS,
      cmonAgent: this.opts.plugins === undefined,
    });
    if (checked.config.cmonPort !== this.config.cmonPort) this.config.cmonPort = checked.config.cmonPort;
    for (const notice of checked.notices) {
      this.notices.push(notice);
      this.log.warn(notice);
    }
    ACTIVE_DATA_DIRS.add(this.config.dataDir);
    this.ownsDataDir = true;
  }

  /** Where cmon-agent listens; undefined when this daemon runs without it. */
  get cmonAddresses(): { ip: string; port: number }[] | undefined {
    return this.cmonAgent()?.addresses();
  }

  /** The cmon-agent plug-in, when this daemon runs it. */
  private cmonAgent(): CmonAgentPlugin | undefined {
    return this.plugins.find((p): p is CmonAgentPlugin => p instanceof CmonAgentPlugin);
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
    const json: DaemonJson = {
      pid: process.pid,
      ...(this.daemonId ? { daemonId: this.daemonId, hostedBy: this.hostedBy } : {}),
      startedAt: (this.startedAt ?? new Date()).toISOString(),
      state: this.state === 'running' ? 'running' : 'starting',
      dataDir: this.config.dataDir,
      control: this.controlAddress,
      ...(this.ui ? { ui: this.ui.address } : {}),
      urls: { ...this.config.urls },
      bindIp: this.config.bindIp,
      agentIps: this.config.agentIps ?? 'shared',
      servers,
    };
    const cmon = this.cmonAgent();
    if (cmon) {
      const addresses = cmon.addresses();
      json.cmonAgent = { port: addresses[0]?.port ?? cmon.options.port, addresses };
    }
    return json;
  }
}
