/**
 * How many tasks the daemon runs at once. A real CN forks a process per task and its kernel
 * spreads them; every mock CN shares one thread, where 5,000 tasks let loose at once kept the
 * fleet's heartbeats waiting 16 s. So tasks run within a fleet-wide and a per-CN bound; the
 * rest wait their turn in one FIFO queue (a CN at its bound does not hold up the others), and
 * beyond the queue's bound a task is refused at once with the answer a real cn-agent gives
 * when it takes no work (503 ServiceUnavailable, lib/server.js), never by dropping the
 * connection. A waiting task whose client went away leaves the queue.
 *
 * A task waiting out the time a phase takes (a timing profile's draw, docs/timing.md) costs no
 * CPU: it gives its place among the fleet's running tasks back while it waits (`idle`) and
 * takes one again after (`busy`: ahead of every new task, but within the bound, so however
 * many tasks wake at once, no more than the bound work at a time), so thousands of tasks may
 * be in flight while the bound still counts those working. It keeps its place on its CN: a CN
 * runs no more tasks at once than its bound, waiting or not.
 */
import { MockcloudError } from '../../common/errors.js';

export interface AdmissionLimits {
  /** Tasks running at once across the fleet. */
  maxInFlight: number;
  /** Tasks running at once on one CN. */
  maxPerCn: number;
  /** Tasks waiting for their turn across the fleet; beyond it they are refused. */
  maxQueued: number;
}

export const DEFAULT_ADMISSION_LIMITS: AdmissionLimits = { maxInFlight: 128, maxPerCn: 16, maxQueued: 4096 };

/**
 * Tasks started per turn of the event loop. A task such as `nop` runs start to end in
 * microtasks, and requests that arrive together are all parsed in one turn (a burst's 5,000 in
 * one poll phase of 14 s): starting each at once would run them all in that turn while no timer
 * (no heartbeat) fires. So at most this many start per turn; the rest wait their turn in the
 * queue, a slice per turn.
 */
const GRANTS_PER_TURN = 32;
/**
 * Tasks started per turn while the fleet's heartbeats run late (`heartbeatsLate`): the tasks'
 * synchronous work (parsing, a VM's file, its payload's JSON) shares the one thread with the
 * heartbeats, which run only between turns, so a shorter turn lets them catch up. Tasks keep
 * starting, a few per turn, so the burst still progresses.
 */
const GRANTS_PER_TURN_HEARTBEATS_LATE = 4;

export interface AdmissionStats {
  limits: AdmissionLimits;
  /** Tasks working (the fleet's bound counts these). */
  inFlight: number;
  /** Tasks in flight that wait out a phase's time, their fleet place given back. */
  idle: number;
  queued: number;
  /** Tasks that had to wait, ever. */
  waited: number;
  /** Tasks refused because the queue was full, ever. */
  refused: number;
  /** Waiting tasks whose client went away or whose CN was removed, ever. */
  abandoned: number;
}

/**
 * Give back a task's place: call once when it has ended. `idle()` while it only waits out a
 * phase's time, `busy()` when it works again.
 */
export type Release = (() => void) & { idle(): void; busy(): Promise<void> };

interface Waiter {
  cn: string;
  grant: (release: Release) => void;
  fail: (err: Error) => void;
  prev: Waiter | undefined;
  next: Waiter | undefined;
  queued: boolean;
}

interface Resuming {
  resume: () => void;
  next: Resuming | undefined;
}

export class TaskAdmission {
  readonly limits: AdmissionLimits;
  private inFlight = 0;
  private idleTasks = 0;
  private readonly perCn = new Map<string, number>();
  private head: Waiter | undefined;
  private tail: Waiter | undefined;
  private queued = 0;
  private readonly counters = { waited: 0, refused: 0, abandoned: 0 };
  private dispatchPending = false;
  /** Tasks started in the current turn of the event loop (reset by a setImmediate). */
  private grantedThisTurn = 0;

  /**
   * @param heartbeatsLate whether the fleet's heartbeats are running late now (the scheduler's
   *   hot jobs behind): then fewer tasks start per turn.
   */
  constructor(
    limits: Partial<AdmissionLimits> = {},
    private readonly heartbeatsLate: () => boolean = () => false,
  ) {
    this.limits = { ...DEFAULT_ADMISSION_LIMITS, ...limits };
    for (const [k, v] of Object.entries(this.limits)) {
      if (!Number.isInteger(v) || v < (k === 'maxQueued' ? 0 : 1)) {
        throw new MockcloudError('InvalidArgument', `task admission limit ${k} must be a whole number${k === 'maxQueued' ? '' : ' > 0'}`);
      }
    }
  }

  stats(): AdmissionStats {
    return { limits: { ...this.limits }, inFlight: this.inFlight, idle: this.idleTasks, queued: this.queued, ...this.counters };
  }

  /**
   * A place for one task on `cn`: at once when there is room, else after the tasks before it.
   * Rejects with 503 ServiceUnavailable when the queue is full, and with `signal`'s reason when
   * it is aborted while waiting.
   */
  acquire(cn: string, signal?: AbortSignal): Promise<Release> {
    // Every dispatch hands places to the waiters that fit, so while `cn` has room and no
    // dispatch is pending, nobody who could run is waiting: those in the queue wait for CNs
    // at their bound.
    if (this.hasRoom(cn) && !this.dispatchPending && !this.resumeHead && this.grantedThisTurn < this.grantsPerTurn()) {
      return Promise.resolve(this.take(cn));
    }
    if (this.queued >= this.limits.maxQueued) return Promise.reject(this.refusal(0));
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<Release>((resolve, reject) => {
      const w: Waiter = { cn, grant: resolve, fail: reject, prev: this.tail, next: undefined, queued: true };
      if (this.tail) this.tail.next = w;
      else this.head = w;
      this.tail = w;
      this.queued++;
      this.counters.waited++;
      // It may wait only for the next turn, when no ending task would call a dispatch.
      this.scheduleDispatch();
      signal?.addEventListener(
        'abort',
        () => {
          if (!w.queued) return;
          this.unlink(w);
          this.counters.abandoned++;
          w.fail(abortReason(signal));
        },
        { once: true },
      );
    });
  }

  /**
   * Count a refusal and make its error: the queue is full, counting `alsoWaiting` tasks that
   * wait before they reach the queue (requests not yet handled).
   */
  refusal(alsoWaiting: number): MockcloudError {
    this.counters.refused++;
    return new MockcloudError(
      'ServiceUnavailable',
      `CN Agent is not accepting tasks: ${this.inFlight} running and ${this.queued + alsoWaiting} waiting`,
    );
  }

  /** Fail every task of `cn` still waiting (the CN is going away). */
  dropCn(cn: string, reason: Error): void {
    for (let w = this.head; w; ) {
      const next = w.next;
      if (w.cn === cn) {
        this.unlink(w);
        this.counters.abandoned++;
        w.fail(reason);
      }
      w = next;
    }
  }

  private grantsPerTurn(): number {
    return this.heartbeatsLate() ? GRANTS_PER_TURN_HEARTBEATS_LATE : GRANTS_PER_TURN;
  }

  private hasRoom(cn: string): boolean {
    return this.inFlight < this.limits.maxInFlight && (this.perCn.get(cn) ?? 0) < this.limits.maxPerCn;
  }

  private take(cn: string): Release {
    if (this.grantedThisTurn++ === 0) {
      setImmediate(() => {
        this.grantedThisTurn = 0;
      });
    }
    this.inFlight++;
    this.perCn.set(cn, (this.perCn.get(cn) ?? 0) + 1);
    let released = false;
    let idle = false;
    const release = (() => {
      if (released) return;
      released = true;
      if (idle) this.idleTasks--;
      else this.inFlight--;
      const left = (this.perCn.get(cn) ?? 1) - 1;
      if (left === 0) this.perCn.delete(cn);
      else this.perCn.set(cn, left);
      this.scheduleDispatch();
    }) as Release;
    release.idle = () => {
      if (released || idle) return;
      idle = true;
      this.inFlight--;
      this.idleTasks++;
      this.scheduleDispatch();
    };
    release.busy = () => {
      if (released || !idle) return Promise.resolve();
      const resume = (): void => {
        if (released || !idle) return;
        idle = false;
        this.idleTasks--;
        this.inFlight++;
      };
      if (this.inFlight < this.limits.maxInFlight && !this.resumeHead) {
        resume();
        return Promise.resolve();
      }
      // Ahead of the new tasks: it started already, and holds its CN's place meanwhile.
      return new Promise<void>((resolve) => {
        this.pushResuming(() => {
          resume();
          resolve();
        });
      });
    };
    return release;
  }

  /** Tasks in flight waiting to work again, oldest first (served before the queue). */
  private resumeHead: Resuming | undefined;
  private resumeTail: Resuming | undefined;

  private pushResuming(resume: () => void): void {
    const item: Resuming = { resume, next: undefined };
    if (this.resumeTail) this.resumeTail.next = item;
    else this.resumeHead = item;
    this.resumeTail = item;
    this.scheduleDispatch(true);
  }

  private scheduleDispatch(force = false): void {
    if (this.dispatchPending || (this.queued === 0 && !force && !this.resumeHead)) return;
    this.dispatchPending = true;
    setImmediate(() => {
      this.dispatchPending = false;
      this.dispatch();
    });
  }

  /**
   * Start the oldest waiting tasks that now fit (a slice of them per turn), skipping those of
   * CNs at their bound.
   */
  private dispatch(): void {
    let granted = 0;
    const grants = this.grantsPerTurn();
    // Tasks in flight coming back from a wait first, one slice per turn like the rest.
    while (this.resumeHead && this.inFlight < this.limits.maxInFlight) {
      if (granted >= grants) {
        this.scheduleDispatch(true);
        return;
      }
      const item = this.resumeHead;
      this.resumeHead = item.next;
      if (!this.resumeHead) this.resumeTail = undefined;
      item.resume();
      granted++;
    }
    if (this.resumeHead) return;
    for (let w = this.head; w && this.inFlight < this.limits.maxInFlight; ) {
      if (granted >= grants) {
        this.scheduleDispatch();
        return;
      }
      const next = w.next;
      if ((this.perCn.get(w.cn) ?? 0) < this.limits.maxPerCn) {
        this.unlink(w);
        w.grant(this.take(w.cn));
        granted++;
      }
      w = next;
    }
  }

  private unlink(w: Waiter): void {
    w.queued = false;
    if (w.prev) w.prev.next = w.next;
    else this.head = w.next;
    if (w.next) w.next.prev = w.prev;
    else this.tail = w.prev;
    w.prev = w.next = undefined;
    this.queued--;
  }
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}
