/**
 * The heartbeat thread's work: every threaded CN's heartbeat loop, as cn-agent runs it
 * (sdc-cn-agent lib/heartbeater.js: POST /servers/<uuid>/events/heartbeat, and the next one
 * the interval after the answer),
 * on the thread's own event loop and heap. Under a burst of tasks the main thread's turns run
 * hundreds of ms and its collections pause it; neither holds a heartbeat here.
 *
 * What it does not know, the main thread tells it (heartbeat-protocol.ts): which CNs beat,
 * when a registration holds them, a slow-heartbeat event's lateness, and whether fault events
 * are on (then each heartbeat is handed to the main thread to send through its fault seam).
 * Answers go back in batches, for the counters, the failure logs and the first heartbeat.
 */
import { JsonHttpClient } from '../../../common/http-client.js';
import { schedulerNow, Scheduler, type ScheduledJob } from '../../../runtime/scheduler.js';
import type { FromHeartbeatThread, HeartbeatResult, HeartbeatThreadData, ToHeartbeatThread } from './heartbeat-protocol.js';

const HOT = { hot: true } as const;

interface Beat {
  uuid: string;
  userAgent: string;
  lateMs: number;
  held: boolean;
  /** Due while held: goes at the release. */
  parked: boolean;
  /** When the next one is due without a slow-heartbeat event's lateness (scheduler clock); 0: the first. */
  dueAt: number;
  job: ScheduledJob | undefined;
  inFlight: boolean;
  ended: boolean;
  /** The `send` the main thread has not answered yet. */
  seq: number;
  /** The `ahead` call whose heartbeat this is, until answered. */
  ahead: number | undefined;
}

export class HeartbeatLoop {
  private readonly beats = new Map<string, Beat>();
  private readonly scheduler = new Scheduler();
  private readonly http: JsonHttpClient;
  private gated = false;
  private seq = 0;
  private results: HeartbeatResult[] = [];
  private flushing: NodeJS.Immediate | undefined;
  private readonly aheadPending = new Map<number, number>();

  constructor(
    private readonly data: HeartbeatThreadData,
    private readonly post: (msg: FromHeartbeatThread) => void,
  ) {
    this.http = new JsonHttpClient({ timeoutMs: data.requestTimeoutMs });
    this.scheduler.start();
  }

  stop(): void {
    this.scheduler.stop();
    this.http.close();
  }

  handle(msg: ToHeartbeatThread): void {
    switch (msg.op) {
      case 'begin':
        this.begin(msg);
        return;
      case 'end':
        this.end(msg.uuid);
        return;
      case 'hold': {
        const b = this.beats.get(msg.uuid);
        if (b) b.held = true;
        return;
      }
      case 'release':
        this.release(msg.uuid, msg.userAgent);
        return;
      case 'late':
        this.late(msg.uuid, msg.lateMs);
        return;
      case 'gate':
        this.gated = msg.on;
        return;
      case 'sent': {
        const b = this.beats.get(msg.uuid);
        if (b && b.seq === msg.seq) this.answered(b);
        return;
      }
      case 'ahead':
        this.sendAhead(msg.id, msg.withinMs);
        return;
    }
  }

  private begin(msg: Extract<ToHeartbeatThread, { op: 'begin' }>): void {
    const old = this.beats.get(msg.uuid);
    if (old) this.scheduler.cancel(old.job);
    const b: Beat = {
      uuid: msg.uuid,
      userAgent: msg.userAgent,
      lateMs: msg.lateMs,
      held: msg.held,
      parked: false,
      dueAt: 0,
      job: undefined,
      inFlight: false,
      ended: false,
      seq: 0,
      ahead: undefined,
    };
    this.beats.set(msg.uuid, b);
    b.job = this.scheduler.schedule(msg.delayMs, () => this.due(b), HOT);
  }

  private end(uuid: string): void {
    const b = this.beats.get(uuid);
    if (!b) {
      this.post({ op: 'ended', uuid });
      return;
    }
    this.beats.delete(uuid);
    b.ended = true;
    this.scheduler.cancel(b.job);
    this.aheadDone(b);
    if (!b.inFlight) this.post({ op: 'ended', uuid });
  }

  private release(uuid: string, userAgent: string): void {
    const b = this.beats.get(uuid);
    if (!b) return;
    b.held = false;
    b.userAgent = userAgent;
    if (b.parked) {
      b.parked = false;
      this.send(b);
    }
  }

  private late(uuid: string, lateMs: number): void {
    const b = this.beats.get(uuid);
    if (!b || b.lateMs === lateMs) return;
    b.lateMs = lateMs;
    // The next heartbeat, already waiting: due the new lateness after its interval.
    if (b.job && !b.job.cancelled && b.dueAt > 0) {
      this.scheduler.cancel(b.job);
      b.job = this.scheduler.schedule(b.dueAt + lateMs - schedulerNow(), () => this.due(b), HOT);
    }
  }

  private due(b: Beat): void {
    b.job = undefined;
    if (b.ended) return;
    if (b.held) b.parked = true;
    else this.send(b);
  }

  private send(b: Beat): void {
    const lateMs = b.dueAt > 0 ? Math.max(0, schedulerNow() - b.dueAt) : -1;
    b.inFlight = true;
    if (this.gated) {
      b.seq = ++this.seq;
      this.post({ op: 'send', uuid: b.uuid, seq: b.seq, lateMs });
      return;
    }
    const t0 = performance.now();
    this.http
      .request<{ code?: string; message?: string } | undefined>({
        method: 'POST',
        url: `${this.data.cnapiUrl}/servers/${b.uuid}/events/heartbeat`,
        body: {},
        headers: { 'user-agent': b.userAgent },
        timeoutMs: this.data.requestTimeoutMs,
        hot: true,
      })
      .then(
        (res) => {
          const ok = res.statusCode >= 200 && res.statusCode < 300;
          this.result({
            uuid: b.uuid,
            at: Date.now(),
            statusCode: res.statusCode,
            ...(ok ? {} : restError(res.body)),
            lateMs,
            ms: performance.now() - t0,
          });
        },
        (err: unknown) => {
          this.result({ uuid: b.uuid, at: Date.now(), statusCode: 0, message: (err as Error)?.message || String(err), lateMs, ms: performance.now() - t0 });
        },
      )
      .finally(() => this.answered(b));
  }

  /** Its answer is in (or the main thread sent it): the next one the interval (and lateness) after. */
  private answered(b: Beat): void {
    b.inFlight = false;
    this.aheadDone(b);
    if (b.ended) {
      this.post({ op: 'ended', uuid: b.uuid });
      return;
    }
    const interval = this.data.intervalMs;
    b.dueAt = schedulerNow() + interval;
    b.job = this.scheduler.schedule(interval + b.lateMs, () => this.due(b), HOT);
  }

  private sendAhead(id: number, withinMs: number): void {
    const limit = schedulerNow() + withinMs;
    let sent = 0;
    for (const b of this.beats.values()) {
      const job = b.job;
      if (!job || job.cancelled || job.due > limit || b.held || b.ahead !== undefined) continue;
      this.scheduler.cancel(job);
      b.ahead = id;
      sent++;
      b.job = this.scheduler.schedule(0, () => this.due(b), HOT);
    }
    this.post({ op: 'aheadSent', id, sent });
    if (sent === 0) this.post({ op: 'aheadAnswered', id });
    else this.aheadPending.set(id, sent);
  }

  private aheadDone(b: Beat): void {
    const id = b.ahead;
    if (id === undefined) return;
    b.ahead = undefined;
    const left = (this.aheadPending.get(id) ?? 1) - 1;
    if (left > 0) this.aheadPending.set(id, left);
    else {
      this.aheadPending.delete(id);
      this.post({ op: 'aheadAnswered', id });
    }
  }

  /** Answers go to the main thread once per turn of this loop, not one message each. */
  private result(r: HeartbeatResult): void {
    this.results.push(r);
    this.flushing ??= setImmediate(() => {
      this.flushing = undefined;
      const results = this.results;
      this.results = [];
      this.post({ op: 'results', results });
    });
  }
}

function restError(body: unknown): { code?: string; message?: string } {
  const b = body as { code?: unknown; message?: unknown } | undefined;
  return {
    ...(typeof b?.code === 'string' ? { code: b.code } : {}),
    ...(typeof b?.message === 'string' ? { message: b.message } : {}),
  };
}
