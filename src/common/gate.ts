/**
 * At most `limit` holders at once; the others wait in arrival order. Cheap with tens of
 * thousands waiting (a start with 100,000 VMs queues that many agent syncs): a waiter is one
 * closure, and taking the next one is O(1).
 */
export class Gate {
  private holders = 0;
  private waiters: ((() => void) | undefined)[] = [];
  private head = 0;
  /** Once opened (shutdown), everyone passes at once. */
  private opened = false;

  constructor(private readonly limit: number) {
    if (!(limit >= 1)) throw new Error(`gate limit must be at least 1, not ${limit}`);
  }

  /** Waiting for a turn. */
  get waiting(): number {
    return this.waiters.length - this.head;
  }

  /** Run `fn` when a turn is free; the turn passes on when it settles. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.enter();
    try {
      return await fn();
    } finally {
      this.leave();
    }
  }

  /** Let every waiter through now and from now on, limit or not (e.g. when stopping). */
  open(): void {
    this.opened = true;
    for (let next = this.take(); next; next = this.take()) next();
  }

  private enter(): Promise<void> {
    if (this.opened || this.holders < this.limit) {
      this.holders++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private leave(): void {
    const next = this.opened ? undefined : this.take();
    // The turn goes straight to the next waiter: holders stays the same.
    if (next) next();
    else this.holders--;
  }

  private take(): (() => void) | undefined {
    if (this.head >= this.waiters.length) return undefined;
    const next = this.waiters[this.head];
    this.waiters[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.waiters.length) {
      this.waiters = this.waiters.slice(this.head);
      this.head = 0;
    }
    return next;
  }
}
