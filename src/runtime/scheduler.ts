/**
 * One scheduler for the whole daemon. Every periodic job of every mock CN (heartbeats, status
 * reports, agent syncs, retries) is an entry in one min-heap driven by a single Node timer, so
 * 10,000 CNs cost 10,000 heap entries, not 10,000 timers.
 */
import type { Logger } from '../common/log.js';

/** About 2-5 ms of heartbeats/status reports. */
const JOBS_PER_TICK = 32;
/**
 * A Node timer may fire up to a millisecond before the monotonic clock shows its delay elapsed
 * (libuv keeps whole milliseconds). A job due that close runs now: otherwise every such timer
 * would re-arm itself for the remainder, tens of thousands of times a second at 10,000 CNs.
 */
const EARLY_MS = 1;
/** Node fires a longer timer at once (with a warning): a job further off wakes us on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The scheduler's clock: monotonic ms, like Node's timers (wall-clock steps move nothing). */
export function schedulerNow(): number {
  return performance.now();
}

export type ScheduledFn = () => void | Promise<void>;

export interface ScheduledJob {
  /** On the scheduler's clock (`schedulerNow()`), not the wall clock. */
  readonly due: number;
  readonly cancelled: boolean;
}

interface Entry extends ScheduledJob {
  due: number;
  seq: number;
  fn: ScheduledFn;
  cancelled: boolean;
}

export class Scheduler {
  private readonly heap: Entry[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** The next slice of a burst of due jobs, when one is queued. */
  private slicePending: NodeJS.Immediate | undefined;
  private timerDue = Infinity;
  private seq = 0;
  private running = false;
  private readonly log: Logger | undefined;
  /** Jobs that threw or rejected: surfaced by `mockcloud status`. */
  errors = 0;

  constructor(opts: { log?: Logger } = {}) {
    this.log = opts.log;
  }

  start(): void {
    this.running = true;
    this.arm();
  }

  stop(): void {
    this.running = false;
    this.disarm();
    if (this.slicePending) clearImmediate(this.slicePending);
    this.slicePending = undefined;
    this.heap.length = 0;
  }

  get size(): number {
    return this.heap.length;
  }

  /** Run `fn` once, `delayMs` from now. Cancel with `cancel()`. */
  schedule(delayMs: number, fn: ScheduledFn): ScheduledJob {
    const entry: Entry = { due: schedulerNow() + Math.max(0, delayMs), seq: this.seq++, fn, cancelled: false };
    this.push(entry);
    if (this.running && entry.due < this.timerDue && !this.slicePending) this.arm();
    return entry;
  }

  cancel(job: ScheduledJob | undefined): void {
    if (job) (job as Entry).cancelled = true;
  }

  /** A uniformly random delay in [base*(1-spread), base*(1+spread)]: keeps CNs out of lockstep. */
  static jitter(baseMs: number, spread = 0.1): number {
    return baseMs * (1 - spread + Math.random() * 2 * spread);
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDue = Infinity;
  }

  private arm(): void {
    this.disarm();
    // A slice is pending: it re-arms when it has run.
    if (!this.running || this.heap.length === 0 || this.slicePending) return;
    const due = this.heap[0]!.due;
    this.timerDue = due;
    this.timer = setTimeout(() => this.runDue(), Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(due - schedulerNow()))));
    this.timer.unref?.();
  }

  private runDue(): void {
    // Whatever woke us (the timer or a slice), no other wake-up may stay armed: a forgotten timer
    // would start a second chain of wake-ups, and each further one another.
    this.disarm();
    const now = schedulerNow() + EARLY_MS;
    // Bounded per tick so a burst (thousands of heartbeats due after a pause) is sent in small
    // slices with I/O in between: a task request arriving meanwhile waits one slice, not all.
    let budget = JOBS_PER_TICK;
    while (this.running && this.heap.length > 0 && this.heap[0]!.due <= now && budget-- > 0) {
      const entry = this.pop()!;
      if (entry.cancelled) continue;
      entry.cancelled = true;
      this.invoke(entry.fn);
    }
    if (this.running && this.heap.length > 0 && this.heap[0]!.due <= now) {
      // A job above may have armed the timer: the slice replaces it.
      this.disarm();
      this.slicePending ??= setImmediate(() => {
        this.slicePending = undefined;
        this.runDue();
      });
      return;
    }
    this.arm();
  }

  private invoke(fn: ScheduledFn): void {
    try {
      const result = fn();
      if (result && typeof (result as Promise<void>).catch === 'function') {
        (result as Promise<void>).catch((err: unknown) => this.onError(err));
      }
    } catch (err) {
      this.onError(err);
    }
  }

  private onError(err: unknown): void {
    this.errors++;
    this.log?.error({ err }, 'scheduled job failed');
  }

  private push(entry: Entry): void {
    const heap = this.heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!less(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  private pop(): Entry | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  }
}

function less(a: Entry, b: Entry): boolean {
  return a.due < b.due || (a.due === b.due && a.seq < b.seq);
}
