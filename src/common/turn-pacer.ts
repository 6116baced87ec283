/**
 * At most N callbacks per turn of the event loop; the rest wait, in order, for the next turns.
 *
 * Thousands of requests that arrive together are all parsed in one poll phase (Node's HTTP
 * parser reads straight from the socket), and handling each there and then keeps every timer
 * (every CN's heartbeat) waiting for seconds. Passing each request's handling through a pacer
 * bounds the work of a turn to parsing plus N handlings.
 */
export class TurnPacer {
  private ranThisTurn = 0;
  private readonly waiting: (() => void)[] = [];
  private head = 0;
  private drainScheduled = false;

  constructor(private readonly perTurn: number) {}

  /** Callbacks waiting for a later turn. */
  get backlog(): number {
    return this.waiting.length - this.head;
  }

  run(fn: () => void): void {
    if (this.backlog === 0 && this.ranThisTurn < this.perTurn) {
      this.count();
      fn();
      return;
    }
    this.waiting.push(fn);
    this.scheduleDrain();
  }

  private count(): void {
    if (this.ranThisTurn++ === 0) {
      setImmediate(() => {
        this.ranThisTurn = 0;
      });
    }
  }

  private scheduleDrain(): void {
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setImmediate(() => this.drain());
  }

  private drain(): void {
    this.drainScheduled = false;
    for (let n = 0; n < this.perTurn && this.head < this.waiting.length; n++) {
      const fn = this.waiting[this.head]!;
      this.waiting[this.head++] = noop;
      this.count();
      fn();
    }
    if (this.head === this.waiting.length) {
      this.waiting.length = 0;
      this.head = 0;
    } else {
      if (this.head > 1024) {
        this.waiting.splice(0, this.head);
        this.head = 0;
      }
      this.scheduleDrain();
    }
  }
}

function noop(): void {}
