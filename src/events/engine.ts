/**
 * The events engine: fault events on CNs and their VMs (docs/events.md), started by the
 * control API (POST /events), ended by their duration, by DELETE or on their own (a reboot
 * started, a ramp done), each start and end written to `<data-dir>/events.jsonl`.
 *
 * One object for the daemon. It ticks only through the shared scheduler (durations, flaps,
 * ramps), and costs nothing while no event runs: the HTTP interceptor, fault rules and CN
 * conditions exist only while an event needs them.
 */
import type { FaultState } from './server-state.js';
import { MockcloudError } from '../common/errors.js';
import { randomStream, type RandomStream } from '../common/seeded-random.js';
import { newUuid } from '../common/uuid.js';
import type { ScheduledJob } from '../runtime/scheduler.js';
import type { MockCn } from '../mockcn/types.js';
import { Conditions } from './conditions.js';
import { EventLog } from './event-log.js';
import { offline, flap, partition, powerLoss, reboot, slowHeartbeat } from './kinds/cn.js';
import type { Applied, EventContext, EventKind, EventsHost } from './kinds/context.js';
import { outboundFault, taskFault, timingEvent } from './kinds/faults.js';
import { memoryPressure, zpoolFill } from './kinds/resources.js';
import { vmCrash, vmReboot } from './kinds/vm.js';
import { NetworkFaults } from './network.js';
import { PowerHolds } from './power.js';
import { selectTargets } from './targets.js';
import type { EventLogRecord, EventRequest, EventSource, EventType, EventView } from './types.js';
import { badEvent, validateEvent, validateMark } from './validate.js';

export type { EventsHost } from './kinds/context.js';

/** Where an event or mark came from, as the metrics count it: a scenario's step, or anyone else. */
export type EventOrigin = 'scenario' | 'api';

/** What the engine has done since it started (the daemon's metrics), kept as plain counts. */
export interface EventCounts {
  started: { type: EventType; source: EventOrigin; count: number }[];
  ended: { type: EventType; reason: string; count: number }[];
  marks: { source: EventOrigin; count: number }[];
  active: { type: EventType; count: number }[];
}

const KINDS: { [T in EventType]: EventKind<T> } = {
  offline,
  partition,
  reboot,
  'power-loss': powerLoss,
  flap,
  'slow-heartbeat': slowHeartbeat,
  'vm-crash': vmCrash,
  'vm-reboot': vmReboot,
  'zpool-fill': zpoolFill,
  'memory-pressure': memoryPressure,
  'task-fault': taskFault,
  'outbound-fault': outboundFault,
  timing: timingEvent,
};

interface ActiveEvent {
  id: string;
  req: EventRequest;
  seed: string | undefined;
  servers: MockCn[];
  startedAt: Date;
  endsAt: Date | undefined;
  controller: AbortController;
  jobs: Set<ScheduledJob>;
  applied: Applied | undefined;
  vms: string[];
  skipped: { uuid: string; reason: string }[];
}

export class EventsEngine {
  private readonly active = new Map<string, ActiveEvent>();
  private readonly streams = new Map<string, RandomStream>();
  private readonly log: EventLog;
  private readonly network: NetworkFaults;
  private readonly power: PowerHolds;
  private readonly conditions = new Conditions();
  /** Counts by "<type> <origin>", "<type> <reason>" and "<origin>" (see counts()). */
  private readonly startedBy = new Map<string, number>();
  private readonly endedBy = new Map<string, number>();
  private readonly marksBy = new Map<string, number>();
  private running = false;

  constructor(private readonly host: EventsHost) {
    this.log = new EventLog(host.dataDir);
    this.network = new NetworkFaults(host.http, host.scheduler, host.urls);
    this.power = new PowerHolds(this.network, host.log, { scheduler: host.scheduler, timing: host.timing, bootSeconds: host.bootSeconds });
  }

  get logPath(): string {
    return this.log.path;
  }

  get size(): number {
    return this.active.size;
  }

  async start(): Promise<void> {
    await this.log.open();
    const closed = await this.log.closeLeftOpen();
    if (closed > 0) this.host.log.info({ events: closed }, `ended ${closed} event(s) an earlier run left open in ${this.log.path} (reason daemon-restart)`);
    this.running = true;
  }

  /** Every event ends (logged `daemon-stop`); CNs taken offline load up at the next start. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const id of [...this.active.keys()]) await this.end(id, 'daemon-stop').catch(() => undefined);
    this.power.forgetAll();
    this.network.releaseAll();
    await this.log.close();
  }

  /** What the metrics show of the events: started, ended, marks and active ones, by kind. */
  counts(): EventCounts {
    const split = (key: string): [string, string] => key.split(' ', 2) as [string, string];
    const active = new Map<EventType, number>();
    for (const ev of this.active.values()) active.set(ev.req.type, (active.get(ev.req.type) ?? 0) + 1);
    return {
      started: [...this.startedBy].map(([k, count]) => {
        const [type, source] = split(k);
        return { type: type as EventType, source: source as EventOrigin, count };
      }),
      ended: [...this.endedBy].map(([k, count]) => {
        const [type, reason] = split(k);
        return { type: type as EventType, reason, count };
      }),
      marks: [...this.marksBy].map(([source, count]) => ({ source: source as EventOrigin, count })),
      active: [...active].map(([type, count]) => ({ type, count })),
    };
  }

  /**
   * What events do to this CN right now: taken offline (offline, flap), cut off the network
   * (partition), or nothing.
   */
  faultState(uuid: string): FaultState {
    if (this.power.isHeld(uuid)) return 'offline';
    return this.network.isBlocked(uuid) ? 'partitioned' : undefined;
  }

  list(): { active: EventView[] } {
    return { active: [...this.active.values()].map(view) };
  }

  /** POST /events: validate, pick the targets, act, log; the answer's status is 201. */
  async startEvent(body: unknown): Promise<EventView> {
    const req = validateEvent(body);
    if (!this.running) throw new MockcloudError('ServiceUnavailable', 'the events engine is not running');
    if (req.type === 'task-fault') {
      const task = (req as EventRequest<'task-fault'>).params.task;
      if (task !== undefined && this.host.knownTask && !this.host.knownTask(task)) {
        throw badEvent(`params.task: cn-agent has no task ${JSON.stringify(task)}`);
      }
    }
    const seed = req.seed ?? this.host.seed;
    const servers = selectTargets(this.host.fleet.list(), req.target, this.stream(seed, 'event-targets'));
    const id = seed === undefined ? newUuid() : this.stream(seed, 'event-ids').uuid();
    const startedAt = new Date();
    const ev: ActiveEvent = {
      id,
      req,
      seed,
      servers,
      startedAt,
      endsAt: req.durationMs !== undefined ? new Date(startedAt.getTime() + req.durationMs) : undefined,
      controller: new AbortController(),
      jobs: new Set(),
      applied: undefined,
      vms: [],
      skipped: [],
    };
    this.active.set(id, ev);
    const ctx = this.context(ev);
    try {
      ev.applied = await (KINDS[req.type] as EventKind<EventType>)(ctx);
    } catch (err) {
      this.active.delete(id);
      ev.controller.abort();
      for (const job of ev.jobs) this.host.scheduler.cancel(job);
      const e = err instanceof MockcloudError ? err : new MockcloudError('InternalError', (err as Error).message, { cause: err });
      // Nothing was applied when the targets held nothing to act on: nothing to log then.
      if (e.code !== 'NoMatchingServers') {
        await this.log.append(this.record(ev, 'start'));
        await this.log.append({ ...this.record(ev, 'end'), reason: 'failed', error: e.message });
      }
      throw e;
    }
    await this.log.append(this.record(ev, 'start'));
    bump(this.startedBy, `${req.type} ${originOf(req.source)}`);
    this.host.log.info({ event: id, type: req.type, servers: servers.length, durationMs: req.durationMs }, 'event started');
    if (!this.active.has(id)) return view(ev);
    if (req.durationMs !== undefined) {
      this.schedule(ev, req.durationMs, () => this.end(id, 'duration'));
    }
    ev.applied.finished
      ?.then(
        () => this.end(id, 'done'),
        () => this.end(id, 'failed'),
      )
      .catch((err: unknown) => this.host.log.error({ err, event: id }, 'ending an event failed'));
    return view(ev);
  }

  /** DELETE /events/:id. */
  async endEvent(id: string): Promise<{ id: string; ended: true }> {
    if (!(await this.end(id, 'deleted'))) throw new MockcloudError('ResourceNotFound', `event ${id} is not active`);
    return { id, ended: true };
  }

  /** DELETE /events. */
  async endAll(): Promise<{ ended: number }> {
    let ended = 0;
    for (const id of [...this.active.keys()]) if (await this.end(id, 'deleted')) ended++;
    return { ended };
  }

  /** POST /events/marks: a label in the log, for a scenario's step or a test's phase. */
  async mark(body: unknown): Promise<{ time: string; label: string }> {
    const m = validateMark(body);
    if (!this.running) throw new MockcloudError('ServiceUnavailable', 'the events engine is not running');
    const time = new Date().toISOString();
    await this.log.append({ time, phase: 'mark', label: m.label, ...(m.source ? { source: m.source } : {}) });
    bump(this.marksBy, originOf(m.source));
    return { time, label: m.label };
  }

  private async end(id: string, reason: string): Promise<boolean> {
    const ev = this.active.get(id);
    if (!ev) return false;
    this.active.delete(id);
    ev.controller.abort();
    for (const job of ev.jobs) this.host.scheduler.cancel(job);
    ev.jobs.clear();
    try {
      await ev.applied?.undo?.(reason === 'daemon-stop');
    } catch (err) {
      this.host.log.warn({ err, event: id }, 'undoing an event failed');
    }
    await this.log.append({ ...this.record(ev, 'end'), reason });
    bump(this.endedBy, `${ev.req.type} ${reason}`);
    this.host.log.info({ event: id, type: ev.req.type, reason }, 'event ended');
    return true;
  }

  private context(ev: ActiveEvent): EventContext {
    return {
      id: ev.id,
      req: ev.req,
      servers: ev.servers,
      host: this.host,
      network: this.network,
      power: this.power,
      conditions: this.conditions,
      random: (purpose) => this.stream(ev.seed, purpose),
      eventRandom: (purpose) => randomStream(ev.seed === undefined ? undefined : `${ev.seed}/${ev.id}`, purpose),
      schedule: (ms, fn) => this.schedule(ev, ms, fn),
      signal: ev.controller.signal,
      vms: ev.vms,
      skipped: ev.skipped,
    };
  }

  private schedule(ev: ActiveEvent, ms: number, fn: () => unknown): void {
    if (ev.controller.signal.aborted) return;
    const job = this.host.scheduler.schedule(ms, async () => {
      ev.jobs.delete(job);
      if (!ev.controller.signal.aborted) await fn();
    });
    ev.jobs.add(job);
  }

  /** One stream per seed and purpose for the engine's life: a replay draws the same values. */
  private stream(seed: string | undefined, purpose: string): RandomStream {
    const key = `${seed ?? ''}\0${purpose}`;
    let s = this.streams.get(key);
    if (!s) this.streams.set(key, (s = randomStream(seed, purpose)));
    return s;
  }

  private record(ev: ActiveEvent, phase: 'start' | 'end'): EventLogRecord {
    return {
      time: (phase === 'start' ? ev.startedAt : new Date()).toISOString(),
      id: ev.id,
      phase,
      type: ev.req.type,
      servers: ev.servers.map((cn) => cn.uuid),
      params: ev.req.params,
      seed: ev.seed ?? null,
      ...(ev.req.source ? { source: ev.req.source } : {}),
      ...(ev.vms.length > 0 ? { vms: ev.vms } : {}),
    };
  }
}

function bump(m: Map<string, number>, key: string): void {
  m.set(key, (m.get(key) ?? 0) + 1);
}

/** A scenario's step names its scenario in `source` (src/scenarios/runner.ts). */
function originOf(source: EventSource | undefined): EventOrigin {
  return source?.scenario !== undefined ? 'scenario' : 'api';
}

function view(ev: ActiveEvent): EventView {
  return {
    id: ev.id,
    type: ev.req.type,
    servers: ev.servers.map((cn) => cn.uuid),
    startedAt: ev.startedAt.toISOString(),
    ...(ev.endsAt ? { endsAt: ev.endsAt.toISOString() } : {}),
    params: ev.req.params,
    ...(ev.req.source ? { source: ev.req.source } : {}),
    ...(ev.vms.length > 0 ? { vms: ev.vms } : {}),
    ...(ev.skipped.length > 0 ? { skipped: ev.skipped } : {}),
  };
}
