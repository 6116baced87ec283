/**
 * The task time limit (3600 s on a real agent, lib/task_agent/task_runner.js) for every task
 * in flight, on one scheduler entry: every task gets the same limit, so their deadlines come
 * in the order the tasks started, and only the earliest needs a wake-up. A task that ends
 * leaves the queue at once (nothing of it stays behind for the rest of the hour).
 */
import { schedulerNow, type Scheduler } from '../../runtime/scheduler.js';

export interface Deadline {
  /** Forget it: the task ended in time. */
  cancel(): void;
}

interface Entry {
  due: number;
  onExpiry: () => void;
}

export class Deadlines {
  private readonly entries = new Set<Entry>();
  private wakeAt = Infinity;
  private job: unknown;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly limitMs: number,
    /** The shared scheduler; without one (a bare server in tests), one timer for the earliest. */
    private readonly scheduler?: Scheduler,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** Call `onExpiry` once the limit has passed, unless cancelled first. */
  add(onExpiry: () => void): Deadline {
    const entry: Entry = { due: schedulerNow() + this.limitMs, onExpiry };
    this.entries.add(entry);
    if (this.entries.size === 1) this.arm(entry.due);
    return { cancel: () => void this.entries.delete(entry) };
  }

  stop(): void {
    this.disarm();
    this.entries.clear();
  }

  private arm(due: number): void {
    if (due >= this.wakeAt) return;
    this.disarm();
    this.wakeAt = due;
    const delay = Math.max(0, due - schedulerNow());
    if (this.scheduler) this.job = this.scheduler.schedule(delay, () => this.expire());
    else {
      this.timer = setTimeout(() => this.expire(), Math.min(delay, 2 ** 31 - 1));
      this.timer.unref?.();
    }
  }

  private disarm(): void {
    if (this.job !== undefined) this.scheduler?.cancel(this.job as never);
    if (this.timer) clearTimeout(this.timer);
    this.job = this.timer = undefined;
    this.wakeAt = Infinity;
  }

  private expire(): void {
    this.job = this.timer = undefined;
    this.wakeAt = Infinity;
    const now = schedulerNow();
    for (const entry of this.entries) {
      if (entry.due > now) {
        this.arm(entry.due);
        return;
      }
      this.entries.delete(entry);
      entry.onExpiry();
    }
  }
}
