/**
 * One scheduler for the whole daemon. Every periodic job of every mock CN (heartbeats, status
 * reports, agent syncs, retries) and every wait of a task or a VM (a timing profile's draws) is
 * an entry in one of two min-heaps driven by a single Node timer, so 10,000 CNs cost 10,000
 * heap entries, not 10,000 timers.
 *
 * A `hot` job (a CN's heartbeat: what CNAPI's view of the CN's life rides on) has a heap of its
 * own and runs ahead of every other job due: a burst of 20,000 machine_create on a timing
 * profile has hundreds of thousands of task and VM waits falling due, and in one heap a
 * heartbeat waited behind all those due before it (33 s at 10,000 CNs). Every slice runs the
 * hot jobs due first, then a bounded number of the others.
 */
import type { Logger } from '../common/log.js';

/** Other jobs per slice: about 2-5 ms of status reports, syncs or task waits. */
const JOBS_PER_TICK = 32;
/**
 * Time per slice for hot jobs. 10,000 CNs send 2,000 heartbeats a second, each 0.1-0.3 ms of
 * work, and under a burst of tasks the loop turns every 100-250 ms: some 500 fall due between
 * two slices, and a bound of 16 ms left heartbeats seconds late. The bound only keeps a fleet's
 * worth due at once (after a pause of the process) from holding the loop for long.
 */
const HOT_SLICE_MS = 100;
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

export interface ScheduleOptions {
  /** Run ahead of every other job due (see the top of this file): heartbeats only. */
  hot?: boolean;
}

interface Entry extends ScheduledJob {
  due: number;
  seq: number;
  fn: ScheduledFn;
  cancelled: boolean;
}

export class Scheduler {
  /** Hot jobs (ScheduleOptions.hot), and the others. */
  private readonly hot: Entry[] = [];
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
    this.hot.length = 0;
    this.heap.length = 0;
  }

  get size(): number {
    return this.hot.length + this.heap.length;
  }

  /**
   * How late the most overdue job of each heap is now (ms; 0 when none is due): what
   * `mockcloud status` shows of a scheduler that falls behind.
   */
  lag(): { hotMs: number; otherMs: number } {
    const now = schedulerNow();
    const late = (heap: Entry[]): number => (heap.length > 0 ? Math.max(0, Math.round(now - heap[0]!.due)) : 0);
    return { hotMs: late(this.hot), otherMs: late(this.heap) };
  }

  /**
   * Whether a hot job (a heartbeat) is due more than `byMs` ago: work that may yield (a burst's
   * task starts) gives the loop back sooner while it is.
   */
  hotLate(byMs: number): boolean {
    return this.hot.length > 0 && schedulerNow() - this.hot[0]!.due > byMs;
  }

  /** Run `fn` once, `delayMs` from now. Cancel with `cancel()`. */
  schedule(delayMs: number, fn: ScheduledFn, opts?: ScheduleOptions): ScheduledJob {
    const entry: Entry = { due: schedulerNow() + Math.max(0, delayMs), seq: this.seq++, fn, cancelled: false };
    push(opts?.hot ? this.hot : this.heap, entry);
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
    if (!this.running || this.size === 0 || this.slicePending) return;
    const due = Math.min(this.hot[0]?.due ?? Infinity, this.heap[0]?.due ?? Infinity);
    this.timerDue = due;
    this.timer = setTimeout(() => this.runDue(), Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(due - schedulerNow()))));
    this.timer.unref?.();
  }

  private runDue(): void {
    // Whatever woke us (the timer or a slice), no other wake-up may stay armed: a forgotten timer
    // would start a second chain of wake-ups, and each further one another.
    this.disarm();
    const now = schedulerNow() + EARLY_MS;
    // Hot jobs first, every one due within the slice's time; then the others, bounded per
    // slice so a burst (thousands of waits due after a pause) runs in small slices with I/O in
    // between: a task request arriving meanwhile waits one slice, not all.
    const until = performance.now() + HOT_SLICE_MS;
    while (this.running && this.hot.length > 0 && this.hot[0]!.due <= now && performance.now() < until) this.runTop(this.hot);
    let budget = JOBS_PER_TICK;
    while (this.running && this.heap.length > 0 && this.heap[0]!.due <= now && budget-- > 0) this.runTop(this.heap);
    if (this.running && Math.min(this.hot[0]?.due ?? Infinity, this.heap[0]?.due ?? Infinity) <= now) {
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

  private runTop(heap: Entry[]): void {
    const entry = pop(heap)!;
    if (entry.cancelled) return;
    entry.cancelled = true;
    this.invoke(entry.fn);
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
}

function push(heap: Entry[], entry: Entry): void {
  heap.push(entry);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!less(heap[i]!, heap[parent]!)) break;
    [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
    i = parent;
  }
}

function pop(heap: Entry[]): Entry | undefined {
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

function less(a: Entry, b: Entry): boolean {
  return a.due < b.due || (a.due === b.due && a.seq < b.seq);
}
