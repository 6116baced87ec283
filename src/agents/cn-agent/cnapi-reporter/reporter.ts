/**
 * Every mock CN's traffic to CNAPI, as a real cn-agent sends it (cn-agent-spec §4):
 *
 *   sysinfo   POST /servers/<uuid>/sysinfo {sysinfo}   at start and whenever sysinfo changes;
 *             retried with backoff (0.5 s → 120 s, ×1.6, ±20 %) until accepted; 404
 *             ResourceNotFound means an old CNAPI and is skipped. Accepted = `registered`.
 *   agents    POST /servers/<uuid> {agents}            once registered (errors only logged).
 *   heartbeat POST /servers/<uuid>/events/heartbeat {} 5 s after the previous one ended.
 *   status    POST /servers/<uuid>/events/status       at start, every 60 s, and at most one per
 *             5 s after a VM changed, with the real VM inventory and usage (status-sample.ts).
 *
 * A CN that is down (`cn.power`, e.g. rebooting) has no link at all: nothing is scheduled or
 * sent for it. A graceful shutdown sends one last status report first; coming up starts over
 * as at start (registration with its new sysinfo, then agents, heartbeats and status).
 *
 * One object serves the whole fleet. Per CN it keeps a small `CnLink`: an outgoing queue of
 * concurrency 1 (a bit set of pending message kinds, so at most one of each is queued, as in the
 * real agent) and its jobs on the shared Scheduler, the heartbeats among its hot jobs (they run
 * ahead of every task's and VM's waits due at the same time). All requests go through the
 * shared JsonHttpClient, the heartbeats on its hot lane (never behind the fleet's status
 * reports waiting for a connection). No timer, socket or client per CN.
 *
 * With `heartbeatThread` (the daemon's way) the heartbeat loops run on one worker thread for
 * the fleet instead (heartbeat-loop.ts): under a burst of tasks this thread's turns take
 * hundreds of ms and a heartbeat that waits for them comes seconds late. The queue still
 * decides when a CN's heartbeats are held (behind its registration), and answers come back
 * here in batches to be counted. While fault events are on, the thread hands each heartbeat
 * back to be sent through this thread's client and its fault seam; if the thread dies, its
 * heartbeats go on from here.
 *
 * One write at a time per CN: every write of a CN (sysinfo, agents, status: the queue's, the
 * agents POST of the agents tasks, the last status of a shutdown) waits for the CN's previous
 * one to be answered. CNAPI updates the server's one Moray object for sysinfo, agents and
 * status, with an etag; two writes of one CN at once make one of them lose the etag race (a
 * 500). A real CN's writes are seconds apart; the mock's agents tasks change sysinfo and post
 * agents in the same moment. Heartbeats are no such write (CNAPI keeps them in memory and needs
 * no server record, sdc-cnapi lib/endpoints/servers.js): they wait only behind a registration
 * and the agents POST that follows it, as the real queue orders them, and otherwise go at once
 * on the hot lane. A real CN's status or agents POST takes CNAPI's answer time; the mock's may
 * first wait seconds for one of the fleet's shared connections, and a heartbeat behind it would
 * miss CNAPI's 11 s window.
 *
 * Removing a CN (detach) waits for everything it has on its way to CNAPI; what was queued
 * behind and not sent yet is dropped, so no registration lands after the removal and brings the
 * server back into CNAPI.
 * What CNAPI refuses is handled as the real agent does: sysinfo is retried until accepted, a
 * failed status or heartbeat waits for the next one, and the agents tasks log a refused agents
 * POST and finish (sdc-cn-agent lib/app.js, lib/backends/smartos/tasks/shared.js).
 */
import type { JsonHttpClient } from '../../../common/http-client.js';
import { MockcloudError } from '../../../common/errors.js';
import type { Logger } from '../../../common/log.js';
import { schedulerNow, type Scheduler, type ScheduledJob } from '../../../runtime/scheduler.js';
import type { MockCnHooks } from '../../../mockcn/mock-cn.js';
import type { AgentRecord, MockCn, PowerChange } from '../../../mockcn/types.js';
import { buildStatusSample } from './status-sample.js';
import type { HeartbeatResult } from './heartbeat-protocol.js';
import { HeartbeatThread, HeartbeatThreadWatch, type HeartbeatThreadFigures } from './heartbeat-thread.js';
import { backoffDelay, resolveTimings, type ReporterTimings } from './timings.js';

/** Message kinds, in the order a free queue takes them. */
const SYSINFO = 1;
const AGENTS = 2;
const STATUS = 4;
const HEARTBEAT = 8;

// A heartbeat due goes before a status report due: CNAPI counts a CN dead 11 s after its last one.
const KINDS = [SYSINFO, AGENTS, HEARTBEAT, STATUS] as const;
/** Heartbeats are the scheduler's hot jobs: CNAPI counts a CN dead 11 s after its last one. */
const HOT = { hot: true } as const;
type Kind = (typeof KINDS)[number];

export type MessageKind = 'sysinfo' | 'agents' | 'status' | 'heartbeat';
const KIND_BITS: Record<MessageKind, Kind> = { sysinfo: SYSINFO, agents: AGENTS, status: STATUS, heartbeat: HEARTBEAT };

export interface CnapiReporterOptions {
  log: Logger;
  scheduler: Scheduler;
  http: JsonHttpClient;
  /** CNAPI's base URL; absent = standalone: CNs count as registered and nothing is sent. */
  cnapiUrl?: string;
  timings?: Partial<ReporterTimings>;
  /** Version in the User-Agent when a CN has no cn-agent entry in its agents dir. */
  defaultAgentVersion?: string;
  /** Called once per failed request (for `mockcloud status` error counts). */
  onError?: (kind: MessageKind) => void;
  /**
   * Called as each heartbeat goes out after the first: how long after it was due (the
   * previous one's end plus the interval) it went, in ms. A slow-heartbeat event's lateness,
   * the scheduler's and a wait behind the CN's other messages all count (the daemon's metrics).
   */
  onHeartbeatLate?: (ms: number) => void;
  /** CNAPI accepted the first heartbeat of a CN since it came up (the boot report's `running`). */
  onFirstHeartbeat?: (cn: MockCn) => void;
  /**
   * Heartbeats on a thread of their own (heartbeat-loop.ts), so that a main thread busy with
   * a burst of tasks, or paused by a collection, does not make them late. Not in standalone.
   */
  heartbeatThread?: boolean;
  /**
   * CNAPI answers on this thread (the embedded dev headnode): a pause here holds the answers to
   * the heartbeat thread's heartbeats too, so sendHeartbeatsAhead sends those as well. Another
   * CNAPI does not pause with this thread, and sending its whole fleet's heartbeats at once
   * (after a burst, 8,897 in one second at 10,000 CNs) queued 6,672 of them for a connection:
   * answered up to 0.7 s late, and the next gap of each over 6 s.
   */
  cnapiPausesWithThisThread?: boolean;
}

export interface ReporterCounters {
  ok: number;
  failed: number;
}

/** The heartbeats one sendHeartbeatsAhead call sent, not answered yet, and who waits for them. */
interface AheadBatch {
  pending: number;
  answered: () => void;
}

/** A POST not sent because its CN was detached (removed or down) while it waited its turn. */
const DETACHED = 'not sent: the server is no longer reported';

/** Per-CN state: small, no closures kept beyond the scheduled jobs. */
class CnLink {
  pending = 0;
  busy = false;
  detached = false;
  /** Agents posted and heartbeats/status started (after the first accepted registration). */
  started = false;
  sysinfoGen = 0;
  sentGen = -1;
  attempt = 0;
  /** When the next heartbeat is due without any lateness (scheduler clock); 0: the first. */
  heartbeatDueAt = 0;
  /** Bit set of kinds whose last request failed (log on change only: no log storms). */
  failing = 0;
  statusDirty = false;
  lastStatusAt = 0;
  /** When CNAPI last accepted a heartbeat of this CN (epoch ms; 0: none yet). */
  lastHeartbeatAt = 0;
  /** Its heartbeat was sent ahead (sendHeartbeatsAhead) and is not answered yet: that call's batch. */
  ahead: AheadBatch | undefined;
  /** The kind the queue is sending (0: none). */
  current = 0;
  /** Its heartbeat on its way to CNAPI (never rejects): a detach waits for it. */
  beat: Promise<void> | undefined;
  /** Its heartbeats run on the heartbeat thread (begun there, not ended). */
  threaded = false;
  /** What the thread was last told: held behind the queue, and the slow-heartbeat lateness. */
  threadHeld = false;
  threadLateMs = 0;
  heartbeatJob: ScheduledJob | undefined;
  statusJob: ScheduledJob | undefined;
  retryJob: ScheduledJob | undefined;
  unsubscribe: (() => void) | undefined;
  constructor(readonly cn: MockCn) {}
}

export class CnapiReporter implements MockCnHooks {
  readonly timings: ReporterTimings;
  readonly counters: Record<MessageKind, ReporterCounters> = {
    sysinfo: { ok: 0, failed: 0 },
    agents: { ok: 0, failed: 0 },
    status: { ok: 0, failed: 0 },
    heartbeat: { ok: 0, failed: 0 },
  };
  /** How many CNs' last request of each kind failed. */
  readonly failingCns: Record<MessageKind, number> = { sysinfo: 0, agents: 0, status: 0, heartbeat: 0 };
  /** The most recent failure, for `mockcloud status`: what CNAPI (or the way to it) did. */
  lastFailure: { kind: MessageKind; reason: string; at: string } | undefined;
  private readonly links = new Map<string, CnLink>();
  /** CNs attached but down (powered off or booting): no link, nothing sent. */
  private readonly down = new Set<string>();
  /** The last heartbeat of each CN that is down (kept for lastKnownHeartbeatAt; one number per CN down). */
  private readonly downBeats = new Map<string, number>();
  private readonly log: Logger;
  private readonly scheduler: Scheduler;
  private readonly http: JsonHttpClient;
  private readonly cnapiUrl: string | undefined;
  private readonly defaultVersion: string;
  private readonly onError: ((kind: MessageKind) => void) | undefined;
  private readonly onHeartbeatLate: ((ms: number) => void) | undefined;
  private readonly onFirstHeartbeat: ((cn: MockCn) => void) | undefined;
  private readonly useThread: boolean;
  private readonly cnapiPausesWithThisThread: boolean;
  private thread: HeartbeatThread | undefined;
  private readonly threadWatch = new HeartbeatThreadWatch();
  /** Resolves once the heartbeat thread runs, with its kernel thread id (undefined: none to tell, or no thread). */
  private threadStarted: Promise<number | undefined> = Promise.resolve(undefined);
  private unwatchInterceptor: (() => void) | undefined;
  /** Per CN, the detaches waiting for the thread to end its heartbeats (one `ended` per `end`). */
  private readonly threadEnds = new Map<string, (() => void)[]>();
  private readonly aheadCalls = new Map<number, { sent: (n: number) => void; answered: () => void }>();
  private aheadIds = 0;
  private running = false;
  /** Per CN, the end of its last write to CNAPI while one is under way (one write at a time). */
  private readonly writes = new Map<string, Promise<unknown>>();

  constructor(opts: CnapiReporterOptions) {
    this.log = opts.log;
    this.scheduler = opts.scheduler;
    this.http = opts.http;
    this.cnapiUrl = opts.cnapiUrl?.replace(/\/+$/, '') || undefined;
    this.timings = resolveTimings(opts.timings);
    this.defaultVersion = opts.defaultAgentVersion ?? '2.15.0';
    this.onError = opts.onError;
    this.onHeartbeatLate = opts.onHeartbeatLate;
    this.onFirstHeartbeat = opts.onFirstHeartbeat;
    this.useThread = opts.heartbeatThread === true && this.cnapiUrl !== undefined;
    this.cnapiPausesWithThisThread = opts.cnapiPausesWithThisThread === true;
  }

  get standalone(): boolean {
    return this.cnapiUrl === undefined;
  }

  start(): void {
    this.running = true;
    if (this.standalone) this.log.warn('no CNAPI configured: mock CNs count as registered and report to no one');
    if (this.useThread && !this.thread) this.startThread();
    for (const link of this.links.values()) this.pump(link);
  }

  async stop(): Promise<void> {
    this.running = false;
    for (const link of this.links.values()) this.cancelJobs(link);
    const { thread } = this.forgetThread();
    await thread?.close();
  }

  /** Nothing waits for the thread any more; its CNs are no longer threaded. */
  private forgetThread(): { thread: HeartbeatThread | undefined; threaded: CnLink[] } {
    const thread = this.thread;
    this.thread = undefined;
    this.unwatchInterceptor?.();
    this.unwatchInterceptor = undefined;
    const threaded: CnLink[] = [];
    for (const link of this.links.values()) {
      if (link.threaded) threaded.push(link);
      link.threaded = false;
    }
    for (const waiters of this.threadEnds.values()) for (const w of waiters) w();
    this.threadEnds.clear();
    for (const call of this.aheadCalls.values()) {
      call.sent(0);
      call.answered();
    }
    this.aheadCalls.clear();
    return { thread, threaded };
  }

  /** The thread died: its CNs' heartbeats go on from this thread, none of them dropped. */
  private threadLost(err: unknown): void {
    this.log.error({ err }, 'the heartbeat thread ended; heartbeats go on from the main thread');
    const { threaded } = this.forgetThread();
    for (const link of threaded) {
      if (link.detached || !this.running) continue;
      link.heartbeatJob = this.scheduler.schedule(0, () => this.heartbeatDue(link), HOT);
    }
  }

  private startThread(): void {
    let started: (tid: number | undefined) => void = () => undefined;
    this.threadStarted = new Promise((resolve) => (started = resolve));
    const thread = new HeartbeatThread(
      { cnapiUrl: this.cnapiUrl!, intervalMs: this.timings.heartbeatIntervalMs, requestTimeoutMs: this.timings.requestTimeoutMs },
      {
        results: (results) => {
          for (const r of results) this.threadResult(r);
        },
        ended: (uuid) => this.threadEnds.get(uuid)?.shift()?.(),
        send: (uuid, seq, lateMs) => void this.sendForThread(uuid, seq, lateMs),
        aheadSent: (id, sent) => this.aheadCalls.get(id)?.sent(sent),
        aheadAnswered: (id) => {
          const call = this.aheadCalls.get(id);
          this.aheadCalls.delete(id);
          call?.answered();
        },
        started: (tid) => started(tid),
        loop: (figures) => this.threadWatch.add(figures),
        lost: (err) => {
          started(undefined);
          this.threadLost(err);
        },
      },
      this.log,
    );
    this.thread = thread;
    const gate = (on: boolean): void => thread.tell({ op: 'gate', on });
    if (this.http.interceptor) gate(true);
    this.unwatchInterceptor = this.http.watchInterceptor(gate);
  }

  /** Whether heartbeats go from their own thread now (not standalone, the thread alive). */
  get heartbeatThreadRunning(): boolean {
    return this.thread !== undefined;
  }

  /** The heartbeat thread's kernel id once it runs (Linux); undefined without a thread or off Linux. */
  heartbeatThreadId(): Promise<number | undefined> {
    return this.threadStarted;
  }

  /** How the heartbeat thread's event loop ran since this was last asked (undefined without a thread). */
  heartbeatThreadFigures(): HeartbeatThreadFigures | undefined {
    return this.threadWatch.read();
  }

  /** When CNAPI last accepted this CN's heartbeat (epoch ms); undefined while it has none (down, unregistered, standalone). */
  lastHeartbeatAt(uuid: string): number | undefined {
    return this.links.get(uuid)?.lastHeartbeatAt || undefined;
  }

  /**
   * The last heartbeat CNAPI accepted from this CN, also once it is down (the fleet page says
   * when an offline CN was last heard of); forgotten when the CN is removed.
   */
  lastKnownHeartbeatAt(uuid: string): number | undefined {
    return this.lastHeartbeatAt(uuid) ?? this.downBeats.get(uuid);
  }

  /**
   * Send now every heartbeat due within `withinMs`: ahead of a pause the process knows it is
   * about to take (a full heap collection), so that none falls due during it. Each is
   * rescheduled at once, and the scheduler sends them in its usual slices; the next follows
   * the interval after it. `answered` resolves when all of them have been answered (or their
   * CNs detached). The heartbeat thread's go too only when CNAPI pauses with this thread
   * (cnapiPausesWithThisThread); otherwise nothing holds them.
   */
  async sendHeartbeatsAhead(withinMs: number): Promise<{ sent: number; answered: Promise<void> }> {
    // Each call waits for its own heartbeats only: nothing is kept for a caller that stopped
    // waiting, and a heartbeat that cannot go now does not hold later calls.
    const batch: AheadBatch = { pending: 0, answered: () => undefined };
    if (this.running) {
      const limit = schedulerNow() + withinMs;
      for (const link of this.links.values()) {
        const job = link.heartbeatJob;
        // A heartbeat behind a registration goes when CNAPI accepts it, maybe minutes from now.
        if (!job || job.cancelled || job.due > limit || link.ahead || this.waitsForQueue(link)) continue;
        this.scheduler.cancel(job);
        link.ahead = batch;
        batch.pending++;
        link.heartbeatJob = this.scheduler.schedule(0, () => this.heartbeatDue(link), HOT);
      }
    }
    let sent = batch.pending;
    const answered = sent === 0 ? Promise.resolve() : new Promise<void>((resolve) => (batch.answered = resolve));
    const thread = this.thread;
    if (!thread || !this.running || !this.cnapiPausesWithThisThread) return { sent, answered };
    // The thread's own heartbeats: it does not pause with this thread, but this CNAPI does.
    const id = ++this.aheadIds;
    let threadAnswered!: () => void;
    const threadDone = new Promise<void>((resolve) => (threadAnswered = resolve));
    const threadSent = new Promise<number>((resolve) => this.aheadCalls.set(id, { sent: resolve, answered: threadAnswered }));
    thread.tell({ op: 'ahead', id, withinMs });
    sent += await threadSent;
    return { sent, answered: Promise.all([answered, threadDone]).then(() => undefined) };
  }

  private aheadAnswered(link: CnLink): void {
    const batch = link.ahead;
    if (!batch) return;
    link.ahead = undefined;
    if (--batch.pending === 0) batch.answered();
  }

  /** Start reporting for a CN: registration first, then agents, heartbeats and status. */
  attach(cn: MockCn): void {
    if (cn.power === 'down') {
      void this.detach(cn.uuid);
      this.down.add(cn.uuid);
      cn.registered = false;
      return;
    }
    this.down.delete(cn.uuid);
    if (this.standalone) {
      cn.registered = true;
      return;
    }
    const old = this.links.get(cn.uuid);
    if (old) this.drop(old);
    const link = new CnLink(cn);
    this.links.set(cn.uuid, link);
    // Any VM change, whatever made it (a task, a hand edit found by rescan), makes the next
    // status report due soon: the real agent's zoneevent watcher, which the dummy lacked.
    const sub = cn.vms.subscribe(() => this.statusDirty(cn));
    link.unsubscribe = () => sub.unsubscribe();
    this.enqueue(link, SYSINFO);
  }

  /**
   * Stop reporting for a CN; resolves when every request it had on its way to CNAPI has ended
   * (those queued behind them are dropped unsent), so no registration lands after the CN's
   * removal and brings it back into CNAPI.
   */
  async detach(uuid: string): Promise<void> {
    this.down.delete(uuid);
    this.downBeats.delete(uuid);
    const link = this.links.get(uuid);
    if (link) this.drop(link);
    await link?.beat;
    // Bounded: a write that waits here was chained before the detach (the CN has no link now).
    for (let w = this.writes.get(uuid); w !== undefined; w = this.writes.get(uuid)) await w;
  }

  /** CNs that are attached but down (see CnPower). */
  get downCount(): number {
    return this.down.size;
  }

  get size(): number {
    return this.links.size;
  }

  /** CNs whose registration CNAPI has not accepted yet. */
  get unregistered(): number {
    let n = 0;
    for (const link of this.links.values()) if (!link.cn.registered) n++;
    return n;
  }

  // ---- MockCnHooks: what a CN tells the reporter

  statusDirty(cn: MockCn): void {
    const link = this.links.get(cn.uuid);
    if (!link) return;
    link.statusDirty = true;
    if (link.started) this.scheduleStatus(link, link.lastStatusAt + this.timings.statusThrottleMs - Date.now());
  }

  sysinfoChanged(cn: MockCn): void {
    const link = this.links.get(cn.uuid);
    if (!link) return;
    link.sysinfoGen++;
    this.enqueue(link, SYSINFO);
  }

  /**
   * The CN went down (stop everything; after a last status report when the shutdown is
   * graceful) or came up (register again and start over). Only for CNs attached here.
   */
  async powerChanged(cn: MockCn, change: PowerChange): Promise<void> {
    if (cn.power === 'up') {
      if (this.down.has(cn.uuid)) this.attach(cn);
      return;
    }
    const link = this.links.get(cn.uuid);
    if (!link && !this.down.has(cn.uuid) && !this.standalone) return;
    const lastWord = change.graceful && link !== undefined && link.started && this.running;
    if (link?.lastHeartbeatAt) this.downBeats.set(cn.uuid, link.lastHeartbeatAt);
    if (link) this.drop(link);
    this.down.add(cn.uuid);
    cn.registered = false;
    if (!lastWord) return;
    let sample: unknown;
    try {
      sample = buildStatusSample(cn);
    } catch (err) {
      this.log.error({ err, server: cn.uuid }, 'cannot compute the last status sample');
      return;
    }
    // Its link is dropped already: this one goes after the writes under way all the same.
    await this.send(cn, 'status', `/servers/${cn.uuid}/events/status`, sample, { lastWord: true });
  }

  /**
   * The agents POST for tasks (agent_install, refresh_agents, ...): not queued (the real task
   * posts with its own client), but after the CN's request under way. Rejects when CNAPI
   * refuses it.
   */
  async postAgents(cn: MockCn, agents: readonly AgentRecord[]): Promise<void> {
    if (this.standalone) return;
    const ok = await this.send(cn, 'agents', `/servers/${cn.uuid}`, { agents });
    if (ok !== true) {
      throw new MockcloudError('BadGateway', `CNAPI did not accept the agents of server ${cn.uuid}: ${ok}`);
    }
  }

  // ---- the per-CN queue

  private enqueue(link: CnLink, kind: Kind): void {
    link.pending |= kind;
    this.pump(link);
  }

  private pump(link: CnLink): void {
    this.takeNext(link);
    // Every change of what the queue holds passes here (enqueue, done, start).
    if (link.threaded) this.syncThreadHold(link);
  }

  private takeNext(link: CnLink): void {
    if (link.busy || link.detached || !this.running) return;
    for (const kind of KINDS) {
      if ((link.pending & kind) === 0) continue;
      link.pending &= ~kind;
      if (kind === SYSINFO && link.started && link.sentGen === link.sysinfoGen) continue;
      link.busy = true;
      link.current = kind;
      this.run(link, kind);
      return;
    }
  }

  /** The thread's heartbeats of a CN wait while a registration or its agents POST is queued or under way. */
  private syncThreadHold(link: CnLink): void {
    const held = this.waitsForQueue(link);
    if (held === link.threadHeld || !this.thread) return;
    link.threadHeld = held;
    const uuid = link.cn.uuid;
    this.thread.tell(held ? { op: 'hold', uuid } : { op: 'release', uuid, userAgent: this.userAgent(link.cn) });
  }

  /** A heartbeat the thread sent: counted, logged and followed up as one sent here. */
  private threadResult(r: HeartbeatResult): void {
    const ok = r.statusCode >= 200 && r.statusCode < 300;
    this.http.stats.requests++;
    const observer = this.http.observer;
    if (ok) this.accepted(r.uuid, 'heartbeat');
    else {
      this.http.stats.errors += r.statusCode === 0 ? 1 : 0;
      this.refused(r.uuid, 'heartbeat', r.statusCode === 0 ? (r.message ?? 'failed') : refusal(r.statusCode, r));
    }
    if (observer) {
      const req = { method: 'POST' as const, url: `${this.cnapiUrl}/servers/${r.uuid}/events/heartbeat`, hot: true };
      observer(req, r.statusCode === 0 ? undefined : r.statusCode, r.statusCode === 0 ? new Error(r.message ?? 'failed') : undefined, r.ms);
    }
    const link = this.links.get(r.uuid);
    if (link?.threaded) this.threadBeatAnswered(link, ok ? true : 'failed', r.lateMs, r.at);
  }

  /** Gated (fault events on): the thread's heartbeat goes through this thread's client and its fault seam. */
  private async sendForThread(uuid: string, seq: number, lateMs: number): Promise<void> {
    const link = this.links.get(uuid);
    if (link?.threaded && !link.detached) {
      const result = await this.post(link.cn, 'heartbeat', `/servers/${uuid}/events/heartbeat`, {}, false);
      if (link.threaded && !link.detached) this.threadBeatAnswered(link, result, lateMs, Date.now());
    }
    this.thread?.tell({ op: 'sent', uuid, seq });
  }

  private threadBeatAnswered(link: CnLink, result: true | string, lateMs: number, at: number): void {
    if (lateMs >= 0) this.onHeartbeatLate?.(lateMs);
    const first = result === true && link.lastHeartbeatAt === 0;
    if (result === true) link.lastHeartbeatAt = at;
    const late = link.cn.conditions?.heartbeatLateMs ?? 0;
    if (late !== link.threadLateMs) {
      link.threadLateMs = late;
      this.thread?.tell({ op: 'late', uuid: link.cn.uuid, lateMs: late });
    }
    if (first) this.onFirstHeartbeat?.(link.cn);
  }

  private done(link: CnLink): void {
    link.busy = false;
    link.current = 0;
    this.pump(link);
  }

  /** A heartbeat waits its turn only behind a registration and the agents POST after it. */
  private waitsForQueue(link: CnLink): boolean {
    return (link.pending & (SYSINFO | AGENTS)) !== 0 || link.current === SYSINFO || link.current === AGENTS;
  }

  private run(link: CnLink, kind: Kind): void {
    switch (kind) {
      case SYSINFO:
        this.register(link);
        return;
      case AGENTS:
        void this.sendAgents(link);
        return;
      case STATUS:
        void this.sendStatus(link);
        return;
      case HEARTBEAT:
        this.sendHeartbeat(link, true);
        return;
    }
  }

  /** One registration attempt; on failure the queue stays busy until a retry succeeds. */
  private register(link: CnLink): void {
    link.retryJob = undefined;
    if (link.detached || !this.running) return;
    const gen = link.sysinfoGen;
    void this.send(link.cn, 'sysinfo', `/servers/${link.cn.uuid}/sysinfo`, { sysinfo: link.cn.sysinfo }, { oldCnapiOk: true }).then(
      (result) => {
        if (link.detached) return;
        if (result === true || result === 'old-cnapi') {
          if (result === 'old-cnapi') {
            this.log.info({ server: link.cn.uuid }, 'CNAPI has no sysinfo registration (404 ResourceNotFound): skipped');
          }
          link.sentGen = gen;
          link.attempt = 0;
          link.cn.registered = true;
          if (!link.started) this.startReporting(link);
          this.done(link);
          return;
        }
        const delay = backoffDelay(this.timings.sysinfoBackoff, link.attempt++);
        this.log.debug({ server: link.cn.uuid, delay, attempt: link.attempt }, 'sysinfo registration failed; retrying');
        link.retryJob = this.scheduler.schedule(delay, () => this.register(link));
      },
    );
  }

  private startReporting(link: CnLink): void {
    link.started = true;
    link.pending |= AGENTS;
    const spread = this.timings.startSpreadMs;
    if (this.thread) {
      link.threaded = true;
      link.threadHeld = true;
      link.threadLateMs = link.cn.conditions?.heartbeatLateMs ?? 0;
      this.thread.tell({
        op: 'begin', uuid: link.cn.uuid, userAgent: this.userAgent(link.cn), delayMs: Math.random() * spread, lateMs: link.threadLateMs, held: true,
      });
    } else link.heartbeatJob = this.scheduler.schedule(Math.random() * spread, () => this.heartbeatDue(link), HOT);
    link.statusDirty = true;
    this.scheduleStatus(link, Math.random() * Math.min(spread, this.timings.statusThrottleMs));
  }

  private async sendAgents(link: CnLink): Promise<void> {
    await this.send(link.cn, 'agents', `/servers/${link.cn.uuid}`, { agents: link.cn.agents ?? [] });
    this.done(link);
  }

  private heartbeatDue(link: CnLink): void {
    link.heartbeatJob = undefined;
    if (link.detached) return;
    if (!this.running || this.waitsForQueue(link)) this.enqueue(link, HEARTBEAT);
    else this.sendHeartbeat(link, false);
  }

  /** `queued`: the queue picked it (and waits for its end), else it goes beside the queue. */
  private sendHeartbeat(link: CnLink, queued: boolean): void {
    // As it leaves: a slow-heartbeat event's lateness, the scheduler's and a wait in the queue.
    if (link.heartbeatDueAt > 0) this.onHeartbeatLate?.(Math.max(0, schedulerNow() - link.heartbeatDueAt));
    const beat = this.post(link.cn, 'heartbeat', `/servers/${link.cn.uuid}/events/heartbeat`, {}, false)
      .then((result) => {
        try {
          this.heartbeatAnswered(link, result);
        } finally {
          if (link.beat === beat) link.beat = undefined;
          if (queued) this.done(link);
        }
      })
      .catch((err: unknown) => this.log.error({ err, server: link.cn.uuid }, 'after a heartbeat'));
    link.beat = beat;
  }

  private heartbeatAnswered(link: CnLink, result: true | 'old-cnapi' | string): void {
    const first = result === true && link.lastHeartbeatAt === 0 && !link.detached;
    if (result === true) link.lastHeartbeatAt = Date.now();
    if (!link.detached && this.running) {
      // A slow-heartbeat event makes each one late by its lateMs (CNAPI's 11 s lifetime).
      const late = link.cn.conditions?.heartbeatLateMs ?? 0;
      link.heartbeatDueAt = schedulerNow() + this.timings.heartbeatIntervalMs;
      link.heartbeatJob = this.scheduler.schedule(this.timings.heartbeatIntervalMs + late, () => this.heartbeatDue(link), HOT);
    }
    this.aheadAnswered(link);
    if (first) this.onFirstHeartbeat?.(link.cn);
  }

  /** Make sure a status report is due no later than `delayMs` from now (one job per CN). */
  private scheduleStatus(link: CnLink, delayMs: number): void {
    if (link.detached || !this.running) return;
    const due = schedulerNow() + Math.max(0, delayMs);
    const job = link.statusJob;
    if (job && !job.cancelled && job.due <= due) return;
    this.scheduler.cancel(job);
    link.statusJob = this.scheduler.schedule(Math.max(0, delayMs), () => {
      link.statusJob = undefined;
      link.statusDirty = true;
      this.enqueue(link, STATUS);
    });
  }

  private async sendStatus(link: CnLink): Promise<void> {
    link.statusDirty = false;
    link.lastStatusAt = Date.now();
    let sample: unknown;
    try {
      sample = buildStatusSample(link.cn);
    } catch (err) {
      // As the real agent: a failed sample is marked dirty and retried after the throttle.
      this.log.error({ err, server: link.cn.uuid }, 'cannot compute status sample');
      link.statusDirty = true;
    }
    if (sample !== undefined) await this.send(link.cn, 'status', `/servers/${link.cn.uuid}/events/status`, sample);
    const next = link.statusDirty
      ? link.lastStatusAt + this.timings.statusThrottleMs - Date.now()
      : this.timings.statusIntervalMs;
    this.scheduleStatus(link, next);
    this.done(link);
  }

  /**
   * Write to CNAPI as this CN, once its previous write has been answered. Resolves true when
   * accepted, 'old-cnapi' for a 404 ResourceNotFound when `oldCnapiOk`, otherwise a short
   * reason (never rejects). A write of a CN that is detached before its turn comes is not sent,
   * unless it is the `lastWord` of a CN going down (sent after its link is dropped).
   */
  private send(
    cn: MockCn,
    kind: MessageKind,
    path: string,
    body: unknown,
    opts: { oldCnapiOk?: boolean; lastWord?: boolean } = {},
  ): Promise<true | 'old-cnapi' | string> {
    const owner = opts.lastWord ? undefined : this.links.get(cn.uuid);
    const go = (): Promise<true | 'old-cnapi' | string> =>
      owner?.detached ? Promise.resolve(DETACHED) : this.post(cn, kind, path, body, opts.oldCnapiOk ?? false);
    const before = this.writes.get(cn.uuid);
    // post never rejects; `go` on both paths all the same, so one failure cannot stop every later write.
    const sent = before === undefined ? go() : before.then(go, go);
    this.writes.set(cn.uuid, sent);
    void sent
      .finally(() => {
        if (this.writes.get(cn.uuid) === sent) this.writes.delete(cn.uuid);
      })
      .catch(() => undefined);
    return sent;
  }

  /** One POST; resolves as `send` says, never rejects (whatever a hook or the log throws). */
  private async post(
    cn: MockCn,
    kind: MessageKind,
    path: string,
    body: unknown,
    oldCnapiOk: boolean,
  ): Promise<true | 'old-cnapi' | string> {
    try {
      return await this.attempt(cn, kind, path, body, oldCnapiOk);
    } catch (err) {
      return `failed: ${(err as Error)?.message ?? String(err)}`;
    }
  }

  private async attempt(
    cn: MockCn,
    kind: MessageKind,
    path: string,
    body: unknown,
    oldCnapiOk: boolean,
  ): Promise<true | 'old-cnapi' | string> {
    const bit = KIND_BITS[kind];
    let reason: string;
    try {
      const request = this.http.request<{ code?: string; message?: string } | undefined>({
        method: 'POST',
        url: `${this.cnapiUrl}${path}`,
        body,
        headers: { 'user-agent': this.userAgent(cn) },
        timeoutMs: this.timings.requestTimeoutMs,
        hot: bit === HEARTBEAT,
      });
      const res = await request;
      if (res.statusCode >= 200 && res.statusCode < 300) {
        this.accepted(cn.uuid, kind);
        return true;
      }
      if (oldCnapiOk && res.statusCode === 404 && res.body?.code === 'ResourceNotFound') {
        this.counters[kind].ok++;
        return 'old-cnapi';
      }
      reason = refusal(res.statusCode, res.body);
    } catch (err) {
      reason = (err as Error).message || String(err);
    }
    this.refused(cn.uuid, kind, reason);
    return reason;
  }

  private accepted(uuid: string, kind: MessageKind): void {
    this.counters[kind].ok++;
    this.recovered(uuid, kind, KIND_BITS[kind]);
  }

  private refused(uuid: string, kind: MessageKind, reason: string): void {
    const bit = KIND_BITS[kind];
    this.counters[kind].failed++;
    this.lastFailure = { kind, reason, at: new Date().toISOString() };
    this.onError?.(kind);
    const link = this.links.get(uuid);
    if (link && (link.failing & bit) === 0) {
      link.failing |= bit;
      this.log.debug({ server: uuid, kind, reason }, `CNAPI ${kind} failed`);
      // One warning when the first CN starts failing, not one per CN: 10,000 CNs against a
      // CNAPI that is down must not flood the log. `mockcloud status` has the counts.
      if (this.failingCns[kind]++ === 0) {
        this.log.warn(
          { server: uuid, kind, reason, cnapi: this.cnapiUrl },
          `CNAPI ${kind} failed (${reason}); retrying as the real agent does; further failures are counted in status, not logged`,
        );
      }
    }
  }

  private recovered(uuid: string, kind: MessageKind, bit: number): void {
    const link = this.links.get(uuid);
    if (link && (link.failing & bit) !== 0) {
      link.failing &= ~bit;
      if (--this.failingCns[kind] === 0) this.log.info({ kind, cnapi: this.cnapiUrl }, `CNAPI ${kind} works again for every CN`);
    }
  }

  private userAgent(cn: MockCn): string {
    const version = cn.agents?.find((a) => a.name === 'cn-agent')?.version ?? this.defaultVersion;
    return `cn-agent/${version} (node/${process.versions.node}) server/${cn.uuid}`;
  }

  private cancelJobs(link: CnLink): void {
    this.scheduler.cancel(link.heartbeatJob);
    this.scheduler.cancel(link.statusJob);
    this.scheduler.cancel(link.retryJob);
    link.heartbeatJob = link.statusJob = link.retryJob = undefined;
    this.aheadAnswered(link);
  }

  private drop(link: CnLink): void {
    for (const kind of Object.keys(KIND_BITS) as MessageKind[]) if (link.failing & KIND_BITS[kind]) this.failingCns[kind]--;
    link.failing = 0;
    link.detached = true;
    link.unsubscribe?.();
    link.unsubscribe = undefined;
    this.cancelJobs(link);
    if (link.threaded && this.thread) {
      // Its heartbeat on its way is waited for as one sent here would be.
      link.threaded = false;
      const uuid = link.cn.uuid;
      let waiters = this.threadEnds.get(uuid);
      if (!waiters) this.threadEnds.set(uuid, (waiters = []));
      const list = waiters;
      link.beat = new Promise<void>((resolve) => list.push(resolve)).then(() => {
        if (list.length === 0 && this.threadEnds.get(uuid) === list) this.threadEnds.delete(uuid);
      });
      this.thread.tell({ op: 'end', uuid });
    }
    if (this.links.get(link.cn.uuid) === link) this.links.delete(link.cn.uuid);
  }
}

/** CNAPI's refusal in one line: the status, then its restify code and message when it gave them. */
function refusal(statusCode: number, body: { code?: string; message?: string } | undefined): string {
  return `${statusCode}${body?.code ? ` ${body.code}` : ''}${body?.message ? `: ${body.message}` : ''}`;
}
