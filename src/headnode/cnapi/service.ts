/**
 * The dev headnode's CNAPI: server records fed by mock CNs (sysinfo, heartbeats, status),
 * the heartbeat reconciler, and the task endpoints that drive each CN's cn-agent the way
 * CNAPI does. State (servers, tasks) lives in two documents of the headnode store.
 */
import path from 'node:path';
import type { Pacing } from '../../timing/wait.js';
import { failureFields, logFailure, type Logger } from '../../common/log.js';
import { JsonHttpClient, HttpStatusError } from '../../common/http-client.js';
import type { Sysinfo } from '../../common/sysinfo.js';
import { DEFAULT_PLATFORM } from '../../common/triton-defaults.js';
import { newAllocator } from './allocate.js';
import type { Allocator } from './dapi/allocator.js';
import type { CnapiContext } from './context.js';
import { CnAgentDispatcher } from './dispatch.js';
import { HeartbeatReconciler } from './heartbeats.js';
import { closeServer, createServer, listen, type RestifyServer } from '../http.js';
import { mountDockerRoutes } from './routes-docker.js';
import { mountAllocationRoutes } from './routes-allocation.js';
import { mountBootRoutes } from './routes-boot.js';
import { mountMiscRoutes } from './routes-misc.js';
import { mountServerRoutes } from './routes-servers.js';
import { mountSetupRoutes } from './routes-setup.js';
import { mountWaitlistRoutes } from './routes-waitlist.js';
import { Waitlist } from './waitlist.js';
import { mountTaskRoutes } from './routes-tasks.js';
import { mountImageRoutes } from './routes-images.js';
import { mountMigrateRoutes } from './routes-migrate.js';
import { mountVmRoutes } from './routes-vms.js';
import { mountZfsRoutes } from './routes-zfs.js';
import { fieldsFromSysinfo, ServerRegistry } from './servers.js';
import { TaskRegistry } from './tasks.js';
import type { HeadnodeStore, JournaledDocument, StateDocument } from '../store.js';

export interface CnapiServiceOptions {
  log: Logger;
  /** How long waitlist activations and workflow steps take (docs/timing.md); absent: no time. */
  pacing?: Pacing | undefined;
  /** The headnode's persistence (src/headnode/store.ts). */
  store: HeadnodeStore;
  napiUrl: string;
  imgapiUrl: string;
  /** Only for the deprecated `GET /servers/:uuid/vms`; may be set later with setPeers. */
  vmapiUrl?: string;
  /** `server.datacenter` of new servers (CNAPI's config datacenter_name). */
  datacenter?: string;
  /** Test knobs; the defaults are CNAPI's 5 s and 11 s. */
  heartbeat?: { periodMs?: number; lifetimeMs?: number };
  /** The headnode's platform (the `default` server record's boot platform). */
  platform?: string;
}

/** How long a registered NIC tag is trusted to exist before NAPI is asked again. */
const NIC_TAG_CACHE_MS = 60_000;

export class CnapiService {
  private readonly log: Logger;
  private readonly http: JsonHttpClient;
  private readonly servers: ServerRegistry;
  private readonly tasks: TaskRegistry;
  private readonly heartbeats: HeartbeatReconciler;
  private readonly dispatcher: CnAgentDispatcher;
  private readonly allocator: Allocator = newAllocator();
  private readonly liveImage: string;
  private readonly storeDir: string;
  private readonly serverDoc: JournaledDocument;
  private readonly taskDoc: StateDocument;
  private readonly waitlistDoc: StateDocument;
  private readonly waitlist: Waitlist;
  private readonly peers: { napi: string; imgapi: string; vmapi?: string };
  /** tag -> when NAPI last confirmed it, or the creation in flight. */
  private readonly nicTags = new Map<string, number | Promise<void>>();
  private server: RestifyServer | undefined;
  private cleanupTimer: NodeJS.Timeout | undefined;
  private _url: string | undefined;

  constructor(opts: CnapiServiceOptions) {
    this.log = opts.log.child({ component: 'cnapi' });
    this.http = new JsonHttpClient({ maxSockets: 2048, timeoutMs: 60_000, userAgent: 'cnapi/1.26.6 (mockcloud)' });
    this.peers = { napi: trimSlash(opts.napiUrl), imgapi: trimSlash(opts.imgapiUrl) };
    if (opts.vmapiUrl) this.peers.vmapi = trimSlash(opts.vmapiUrl);
    this.servers = new ServerRegistry({ datacenter: opts.datacenter ?? 'coal' });
    this.liveImage = opts.platform ?? DEFAULT_PLATFORM;
    this.storeDir = opts.store.dir;
    // Server records change on every status sample; unacknowledged changes are saved
    // within a second, acknowledged ones (registration, ServerUpdate) before the answer.
    // Journaled: a registration appends its server's record instead of rewriting every one.
    this.serverDoc = opts.store.journaled(
      'cnapi-servers',
      { snapshot: () => ({ servers: this.servers.snapshot() }), drain: () => this.servers.drainJournal() },
      { lazyDelayMs: 1000 },
    );
    this.tasks = new TaskRegistry({ onChange: () => this.taskDoc.saveSoon() });
    // Task records carry whole VM objects; the newest 5000 are kept (CNAPI keeps 30 days,
    // a dev headnode under a benchmark would grow without bound) and saved at most once a second.
    this.taskDoc = opts.store.document('cnapi-tasks', () => ({ tasks: this.tasks.snapshot() }), { lazyDelayMs: 1000 });
    this.waitlist = new Waitlist({ onChange: () => this.waitlistDoc.saveSoon(), pacing: opts.pacing });
    this.waitlistDoc = opts.store.document('cnapi-waitlist', () => ({ tickets: this.waitlist.snapshot() }));
    this.heartbeats = new HeartbeatReconciler({
      servers: this.servers,
      log: this.log,
      periodMs: opts.heartbeat?.periodMs,
      lifetimeMs: opts.heartbeat?.lifetimeMs,
      onStatusChange: () => this.serverDoc.saveSoon(),
    });
    this.dispatcher = new CnAgentDispatcher({ http: this.http, tasks: this.tasks, log: this.log });
  }

  get url(): string {
    if (!this._url) throw new Error('CNAPI is not started');
    return this._url;
  }

  /** Peers known only after they start (VMAPI starts after CNAPI). */
  setPeers(peers: { vmapi?: string }): void {
    if (peers.vmapi) this.peers.vmapi = trimSlash(peers.vmapi);
  }

  /** Counters for `mockcloud status` and diagnostics. */
  stats(): Record<string, number> {
    return {
      servers: this.servers.size,
      tasks_in_flight: this.dispatcher.tasksInFlight,
      tasks_active: this.tasks.stats.active,
      tasks_complete: this.tasks.stats.complete,
      tasks_failure: this.tasks.stats.failure,
      heartbeats: this.heartbeats.stats.beats,
    };
  }

  async start(opts: { host: string; port: number }): Promise<void> {
    const sdoc = await this.serverDoc.loadJournaled();
    this.servers.restore((sdoc.snapshot as { servers?: unknown } | undefined)?.servers, sdoc.entries);
    // CNAPI's first start stores the `default` server record (moray.js initializeBuckets).
    this.servers.ensureDefault(this.liveImage);
    const tdoc = (await this.taskDoc.load()) as { tasks?: unknown } | undefined;
    this.tasks.restore(tdoc?.tasks);
    const wdoc = (await this.waitlistDoc.load()) as { tickets?: unknown } | undefined;
    this.waitlist.restore(wdoc?.tickets);

    const server = createServer({ name: 'cnapi', log: this.log });
    const ctx: CnapiContext = {
      log: this.log,
      http: this.http,
      servers: this.servers,
      heartbeats: this.heartbeats,
      tasks: this.tasks,
      dispatcher: this.dispatcher,
      allocator: this.allocator,
      waitlist: this.waitlist,
      saveWaitlist: () => this.waitlistDoc.save(),
      startTimestamp: new Date().toISOString(),
      liveImage: this.liveImage,
      usbkeyOsDir: path.join(this.storeDir, 'usbkey', 'os'),
      peers: this.peers,
      saveServers: (durable) => {
        if (durable) return this.serverDoc.save();
        this.serverDoc.saveSoon();
        return Promise.resolve();
      },
      updateFromSysinfo: (sysinfo) => this.updateFromSysinfo(sysinfo),
    };
    mountMiscRoutes(server, ctx);
    mountBootRoutes(server, ctx);
    mountServerRoutes(server, ctx);
    mountSetupRoutes(server, ctx);
    mountVmRoutes(server, ctx);
    mountTaskRoutes(server, ctx);
    mountZfsRoutes(server, ctx);
    mountDockerRoutes(server, ctx);
    mountImageRoutes(server, ctx);
    mountMigrateRoutes(server, ctx);
    mountAllocationRoutes(server, ctx);
    mountWaitlistRoutes(server, ctx);
    this._url = await listen(server, opts.host, opts.port);
    this.server = server;
    this.heartbeats.start();
    this.waitlist.start();
    this.cleanupTimer = setInterval(() => {
      this.tasks.cleanup();
      this.waitlist.cleanup();
    }, 3600 * 1000);
    this.cleanupTimer.unref();
    this.log.info({ url: this._url, servers: this.servers.size }, 'CNAPI listening');
  }

  async stop(): Promise<void> {
    this.heartbeats.stop();
    this.waitlist.stop();
    if (this.cleanupTimer) clearInterval(this.cleanupTimer);
    this.cleanupTimer = undefined;
    this.tasks.releaseWaiters();
    if (this.server) await closeServer(this.server);
    this.server = undefined;
    this.http.close();
    await Promise.all([
      this.serverDoc.flush().catch((err: unknown) => this.log.error(failureFields(err), 'saving servers failed')),
      this.taskDoc.flush().catch((err: unknown) => this.log.error(failureFields(err), 'saving tasks failed')),
      this.waitlistDoc.flush().catch((err: unknown) => this.log.error(failureFields(err), 'saving the waitlist failed')),
    ]);
  }

  /**
   * `ModelServer.updateFromSysinfo`: create every NIC tag the sysinfo names in NAPI
   * (`Duplicate` is fine, any other NAPI error fails the registration), then upsert.
   */
  private async updateFromSysinfo(sysinfo: Sysinfo): Promise<void> {
    const tags = new Set<string>();
    for (const nic of Object.values(sysinfo['Network Interfaces'] ?? {})) {
      const names = (nic as { 'NIC Names'?: unknown })['NIC Names'];
      if (Array.isArray(names)) for (const t of names) if (typeof t === 'string') tags.add(t);
    }
    await Promise.all([...tags].map((t) => this.ensureNicTag(t)));
    this.servers.upsert(sysinfo.UUID, fieldsFromSysinfo(sysinfo));
    await this.serverDoc.save();
  }

  private async ensureNicTag(name: string): Promise<void> {
    const known = this.nicTags.get(name);
    if (typeof known === 'number' && Date.now() - known < NIC_TAG_CACHE_MS) return;
    if (known instanceof Promise) return known;
    const p = this.http
      .call({ method: 'POST', url: `${this.peers.napi}/nic_tags`, body: { name } })
      .then(
        () => undefined,
        (err: unknown) => {
          const b = err instanceof HttpStatusError ? (err.body as { code?: string; errors?: { code?: string }[] }) : undefined;
          if (b && (b.errors?.[0]?.code === 'Duplicate' || b.code === 'Duplicate')) return;
          logFailure(this.log, err, { tag: name }, 'Error adding nic tag to NAPI');
          throw err;
        },
      )
      .then(
        () => {
          this.nicTags.set(name, Date.now());
        },
        (err: unknown) => {
          this.nicTags.delete(name);
          throw err;
        },
      );
    this.nicTags.set(name, p);
    return p;
  }
}

function trimSlash(u: string): string {
  return u.replace(/\/+$/, '');
}

