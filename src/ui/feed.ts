/**
 * The fleet page's live feed: ONE job on the daemon's shared scheduler, once a second.
 *
 * Always: it samples the fleet's running totals (heartbeats, tasks, task time, errors) and the
 * RSS into 10 minutes of per-second points for the charts (O(1), whatever the fleet's size).
 * Heartbeats per second are counted over a window of two heartbeat intervals (at least 10 s),
 * as `mockcloud status` counts them over its window: every CN beats the same number of times in
 * it, so a steady fleet reads steady, where a one-second count swings with how the beats fall
 * into seconds (82 to 251 at 1,000 CNs). A page that connects gets the current rate at once.
 * Only while a page is connected: it walks the fleet once, compares each CN's cell (state, VM
 * count, last heartbeat) with what it last sent, and sends every page one message with only
 * what changed. A page that connects gets the whole fleet first (`snapshot`), then `delta`s.
 * The per-CN arrays exist only while some page is connected.
 *
 *   snapshot {t:'snapshot', now, lateMs, states, cells:[[slot, uuid, hostname, profile, state, vms, hbAgeMs|-1]], series, totals, heartbeatsPerSecond, windowSeconds}
 *   delta    {t:'delta', now, added:[cell...], removed:[slot...], changed:[[slot, state, vms]...], hb:[slot...], point, totals}
 *
 * `hb` lists the CNs whose heartbeat CNAPI accepted since the previous message: the page keeps
 * each cell's heartbeat age itself, so ages cost nothing on the wire. A cell's age is that of the
 * last heartbeat CNAPI took from the CN, also while it is down (the page says when that was).
 */
import type { Logger } from '../common/log.js';
import type { Scheduler, ScheduledJob } from '../runtime/scheduler.js';
import { CELL_STATES, cellState, isComputeNode, lateAfterMs, type FleetCounters, type FleetSource, type PageCn } from './source.js';

export const TICK_MS = 1000;
/** 10 minutes of per-second points. */
export const SERIES_POINTS = 600;

export interface SeriesPoint {
  /** epoch seconds */
  t: number;
  heartbeatsPerSecond: number;
  tasksPerSecond: number;
  /** Mean time to a task's answer over the second, ms (null: none answered). */
  taskLatencyMs: number | null;
  errorsPerSecond: number;
  rssMiB: number;
}

export interface FeedClient {
  send(message: string): void;
}

type Cell = [slot: number, uuid: string, hostname: string, profile: string, state: number, vms: number, hbAgeMs: number];

export class FleetFeed {
  private job: ScheduledJob | undefined;
  private readonly clients = new Set<FeedClient>();
  private readonly series: SeriesPoint[] = [];
  private last: { at: number; c: FleetCounters } | undefined;
  /** The counters of the last `windowSeconds` seconds, oldest first: the heartbeat rate's window. */
  private readonly window: { at: number; heartbeats: number }[] = [];
  readonly windowSeconds: number;
  private totals = { cns: 0, vms: 0, states: {} as Record<string, number> };
  // Per slot, while a page is connected (slots are not reused until no page is connected).
  private slots = new Map<string, number>();
  private uuids: (string | undefined)[] = [];
  private states: number[] = [];
  private vms: number[] = [];
  private hbs: number[] = [];
  private seen: number[] = [];
  private gen = 0;
  private running = false;

  constructor(
    private readonly source: FleetSource,
    private readonly scheduler: Scheduler,
    private readonly log: Logger,
  ) {
    this.windowSeconds = Math.max(10, Math.ceil((2 * source.heartbeatIntervalMs) / 1000));
  }

  start(): void {
    this.running = true;
    this.last = { at: Date.now(), c: this.source.counters() };
    this.window.push({ at: this.last.at, heartbeats: this.last.c.heartbeats });
    this.job = this.scheduler.schedule(TICK_MS, () => this.tick());
  }

  stop(): void {
    this.running = false;
    this.scheduler.cancel(this.job);
    this.job = undefined;
    this.clients.clear();
    this.forget();
  }

  /** A page connected: it gets the whole fleet now, then the deltas. */
  add(client: FeedClient): void {
    if (this.clients.size === 0) this.forget();
    const now = Date.now();
    const d = this.walk(now, true);
    // What changed since the last tick goes to the pages already connected, as they have not seen it.
    if (this.clients.size > 0 && d.added.length + d.removed.length + d.changed.length + d.hb.length > 0) {
      const message = JSON.stringify({ t: 'delta', now, added: d.added, removed: d.removed, changed: d.changed, hb: d.hb, totals: this.totals });
      for (const c of this.clients) c.send(message);
    }
    const cells = d.all;
    this.clients.add(client);
    client.send(
      JSON.stringify({
        t: 'snapshot',
        now,
        lateMs: lateAfterMs(this.source.heartbeatIntervalMs),
        heartbeats: this.source.heartbeats,
        states: CELL_STATES,
        cells,
        series: this.series,
        totals: this.totals,
        heartbeatsPerSecond: this.heartbeatRate(now, this.source.counters().heartbeats),
        windowSeconds: this.windowSeconds,
      }),
    );
  }

  remove(client: FeedClient): void {
    this.clients.delete(client);
    if (this.clients.size === 0) this.forget();
  }

  private forget(): void {
    this.slots = new Map();
    this.uuids = [];
    this.states = [];
    this.vms = [];
    this.hbs = [];
    this.seen = [];
  }

  private tick(): void {
    if (!this.running) return;
    try {
      const point = this.sample();
      if (this.clients.size > 0) {
        const now = Date.now();
        const d = this.walk(now, false);
        const message = JSON.stringify({ t: 'delta', now, added: d.added, removed: d.removed, changed: d.changed, hb: d.hb, point, totals: this.totals });
        for (const c of this.clients) c.send(message);
      }
    } catch (err) {
      this.log.warn({ err }, 'fleet page feed: tick failed');
    } finally {
      if (this.running) this.job = this.scheduler.schedule(TICK_MS, () => this.tick());
    }
  }

  /** One per-second point for the charts, from the running totals. */
  private sample(): SeriesPoint {
    const at = Date.now();
    const c = this.source.counters();
    const prev = this.last ?? { at: at - TICK_MS, c };
    const secs = Math.max(0.001, (at - prev.at) / 1000);
    const rate = (n: number): number => Math.round((n / secs) * 10) / 10;
    const answered = c.tasksAnswered - prev.c.tasksAnswered;
    // The window ends now and starts at the newest sample at least windowSeconds old.
    this.window.push({ at, heartbeats: c.heartbeats });
    while (this.window.length > 2 && at - this.window[1]!.at >= this.windowSeconds * 1000) this.window.shift();
    const point: SeriesPoint = {
      t: Math.round(at / 1000),
      heartbeatsPerSecond: this.heartbeatRate(at, c.heartbeats),
      tasksPerSecond: rate(c.tasks - prev.c.tasks),
      taskLatencyMs: answered > 0 ? Math.round((c.taskMsTotal - prev.c.taskMsTotal) / answered) : null,
      errorsPerSecond: rate(c.errors - prev.c.errors),
      rssMiB: Math.round(process.memoryUsage.rss() / 1048576),
    };
    this.last = { at, c };
    this.series.push(point);
    if (this.series.length > SERIES_POINTS) this.series.splice(0, this.series.length - SERIES_POINTS);
    return point;
  }

  /** Heartbeats per second from the oldest sample of the window to `at` (0 with nothing to count over). */
  private heartbeatRate(at: number, heartbeats: number): number {
    const oldest = this.window[0];
    if (!oldest || at - oldest.at < 500) return 0;
    return Math.round(((heartbeats - oldest.heartbeats) / ((at - oldest.at) / 1000)) * 10) / 10;
  }

  /** Every compute node against what was last sent: the changes, and every cell (for a snapshot). */
  private walk(now: number, wantAll: boolean): { all: Cell[]; added: Cell[]; removed: number[]; changed: [number, number, number][]; hb: number[] } {
    const src = this.source;
    const lateMs = lateAfterMs(src.heartbeatIntervalMs);
    const gen = ++this.gen;
    const all: Cell[] = [];
    const added: Cell[] = [];
    const changed: [number, number, number][] = [];
    const hb: number[] = [];
    const counts = new Array<number>(CELL_STATES.length).fill(0);
    let vmTotal = 0;
    let cns = 0;
    for (const cn of src.list()) {
      if (!isComputeNode(cn)) continue;
      cns++;
      const current = src.lastHeartbeatAt(cn.uuid);
      const state = cellState(cn, src.faultState(cn.uuid), current, now, lateMs, src.heartbeats, cn.power === 'down' && src.booting?.(cn.uuid) === true);
      // A CN that is down has no current heartbeat; its cell still tells when it last had one.
      const lastHb = current ?? src.lastKnownHeartbeatAt?.(cn.uuid);
      const vms = cn.vms.size;
      counts[state]!++;
      vmTotal += vms;
      let slot = this.slots.get(cn.uuid);
      if (slot === undefined) {
        slot = this.uuids.length;
        this.slots.set(cn.uuid, slot);
        this.uuids.push(cn.uuid);
        this.states.push(state);
        this.vms.push(vms);
        this.hbs.push(lastHb ?? 0);
        this.seen.push(gen);
        added.push(cellOf(cn, slot, state, vms, lastHb, now));
      } else {
        if (this.states[slot] !== state || this.vms[slot] !== vms) changed.push([slot, state, vms]);
        if (lastHb !== undefined && lastHb !== this.hbs[slot]) hb.push(slot);
        this.states[slot] = state;
        this.vms[slot] = vms;
        this.hbs[slot] = lastHb ?? 0;
        this.seen[slot] = gen;
      }
      if (wantAll) all.push(cellOf(cn, slot, state, vms, lastHb, now));
    }
    const removed: number[] = [];
    for (let i = 0; i < this.uuids.length; i++) {
      const uuid = this.uuids[i];
      if (uuid !== undefined && this.seen[i] !== gen) {
        removed.push(i);
        this.slots.delete(uuid);
        this.uuids[i] = undefined;
      }
    }
    this.totals = { cns, vms: vmTotal, states: Object.fromEntries(CELL_STATES.map((s, i) => [s, counts[i]!])) };
    return { all, added, removed, changed, hb };
  }
}

function cellOf(cn: PageCn, slot: number, state: number, vms: number, lastHb: number | undefined, now: number): Cell {
  return [slot, cn.uuid, cn.hostname, cn.profile, state, vms, lastHb === undefined ? -1 : Math.max(0, now - lastHb)];
}
