/**
 * At most `limit` holders at once; the others wait in arrival order. Cheap with tens of
 * thousands waiting (a start with 100,000 VMs queues that many agent syncs): a waiter is one
 * closure, and taking the next one is O(1).
 *
 * The limit may be a function, read at every entry and exit: a gate that narrows while
 * something more urgent waits (the HTTP client's background turns), and widens again when
 * told (`recheck`).
 */
export class Gate {
  private holders = 0;
  private waiters: ((() => void) | undefined)[] = [];
  private head = 0;
  /** Once opened (shutdown), everyone passes at once. */
  private opened = false;

  private readonly limit: () => number;

  constructor(limit: number | (() => number)) {
    if (typeof limit === 'number') {
      if (!(limit >= 1)) throw new Error(`gate limit must be at least 1, not ${limit}`);
      this.limit = () => limit;
    } else {
      this.limit = limit;
    }
  }

  /** Holding a turn now. */
  get held(): number {
    return this.holders;
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

  /** Let waiters in up to the limit as it is now (a limit function's value grew). */
  recheck(): void {
    if (this.opened) return;
    while (this.holders < this.limit()) {
      const next = this.take();
      if (!next) return;
      this.holders++;
      next();
    }
  }

  private enter(): Promise<void> {
    if (this.opened || (this.holders < this.limit() && this.waiting === 0)) {
      this.holders++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private leave(): void {
    // A limit that narrowed meanwhile takes the turn back instead of passing it on.
    const next = this.opened || this.holders > this.limit() ? undefined : this.take();
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
