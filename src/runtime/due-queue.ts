/**
 * Per-CN due times on ONE scheduler job: a poll that every mock CN makes on its own interval
 * (config-agent's SAPI poll, firewaller's periodic sync) is a key here, not a scheduler entry
 * or timer per CN. Keys are kept in one-tick slots; the job wakes once a tick, only while
 * something is queued, and hands over every key that fell due, oldest slot first.
 */
import { Scheduler, schedulerNow, type ScheduledJob } from './scheduler.js';

export class DueQueue<K> {
  private readonly due = new Map<K, number>();
  private readonly slots = new Map<number, Set<K>>();
  private job: ScheduledJob | undefined;
  private running = false;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly tickMs: number,
    private readonly onDue: (keys: K[]) => void,
  ) {}

  get size(): number {
    return this.due.size;
  }

  start(): void {
    this.running = true;
    this.arm();
  }

  stop(): void {
    this.running = false;
    this.scheduler.cancel(this.job);
    this.job = undefined;
  }

  /** Due `delayMs` from now (replacing any earlier due time of the key). */
  set(key: K, delayMs: number): void {
    this.delete(key);
    const slot = Math.floor((schedulerNow() + Math.max(0, delayMs)) / this.tickMs);
    this.due.set(key, slot);
    let s = this.slots.get(slot);
    if (!s) this.slots.set(slot, (s = new Set()));
    s.add(key);
    this.arm();
  }

  /**
   * A CN's own polls across a power change: none while it is down; once it is up again, its
   * start-up poll within `spreadMs` (as at the daemon's start).
   */
  followPower(key: K, down: boolean, spreadMs: number): void {
    if (down) this.delete(key);
    else this.set(key, Math.random() * spreadMs);
  }

  has(key: K): boolean {
    return this.due.has(key);
  }

  delete(key: K): void {
    const slot = this.due.get(key);
    if (slot === undefined) return;
    this.due.delete(key);
    const s = this.slots.get(slot);
    s?.delete(key);
    if (s && s.size === 0) this.slots.delete(slot);
  }

  private arm(): void {
    if (!this.running || this.job || this.due.size === 0) return;
    this.job = this.scheduler.schedule(this.tickMs, () => {
      this.job = undefined;
      this.tick();
      this.arm();
    });
  }

  private tick(): void {
    const now = Math.floor(schedulerNow() / this.tickMs);
    const ready: number[] = [];
    for (const slot of this.slots.keys()) if (slot <= now) ready.push(slot);
    if (ready.length === 0) return;
    ready.sort((a, b) => a - b);
    const keys: K[] = [];
    for (const slot of ready) {
      for (const k of this.slots.get(slot)!) {
        this.due.delete(k);
        keys.push(k);
      }
      this.slots.delete(slot);
    }
    this.onDue(keys);
  }
}
