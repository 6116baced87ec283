/**
 * Deadlines and caps for the connections an HTTP server accepts, so that idle sockets, slow
 * headers and slow bodies cannot hold descriptors forever, and a flood on one listener cannot
 * take the descriptors every other listener (and the fleet's outbound calls) need.
 *
 * Node's own headersTimeout / requestTimeout are checked only for servers that `listen()`
 * themselves, and never for a connection that sends nothing; cn-agent's per-CN sockets are fed
 * into one http.Server with `emit('connection')`. So the guard tracks each connection's phase
 * itself and one sweep per guard (not a timer per connection) closes those past their deadline:
 *
 *   waiting  connected, or answered and kept alive: the next request's headers are due
 *            within `headersTimeoutMs` of the connection, or `idleTimeoutMs` of the last answer;
 *   body     headers read: the body is due within `bodyTimeoutMs`;
 *   busy     the request is with its handler (a cn-agent task may take an hour), or the
 *            connection was upgraded to a websocket: no deadline.
 *
 * Beyond `maxConnections` open connections, a new one is closed at once.
 */
import type http from 'node:http';
import type net from 'node:net';
import type { Duplex } from 'node:stream';

export interface ConnectionLimits {
  /** From connect to a first request's complete headers. */
  headersTimeoutMs: number;
  /** From complete headers to the end of the request body. */
  bodyTimeoutMs: number;
  /** From an answer to the next request's complete headers on a kept-alive connection. */
  idleTimeoutMs: number;
  /** Open connections across every server this guard watches. */
  maxConnections: number;
}

/** Node's keep-alive default (5 s); headers and body as generous as Node's own defaults allow. */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 60_000,
  idleTimeoutMs: 5_000,
  // Above the task queue's bound and the tasks in flight (admission.ts: 4096 + 128), so a burst
  // of tasks is queued or refused with a 503, never cut; and at 10,000 CNs (10,000 listening
  // sockets) still under a 20,000 descriptor limit.
  maxConnections: 6144,
};

type Phase = 'waiting' | 'body' | 'busy';

interface Tracked {
  phase: Phase;
  deadline: number;
  /** In the body phase: the request whose body is due (its `complete` ends the phase). */
  req?: http.IncomingMessage | undefined;
}

export interface ConnectionGuardStats {
  open: number;
  /** Closed because a deadline passed, by phase. */
  timedOut: { waiting: number; body: number };
  /** Closed at once because `maxConnections` were open. */
  refused: number;
}

export class ConnectionGuard {
  readonly limits: ConnectionLimits;
  private readonly sockets = new Map<net.Socket, Tracked>();
  private readonly counters = { timedOutWaiting: 0, timedOutBody: 0, refused: 0 };
  private sweeper: NodeJS.Timeout | undefined;

  /** How often the sweep runs: a quarter of the shortest deadline, at most once a second. */
  private readonly sweepMs: number;

  constructor(limits: Partial<ConnectionLimits> = {}) {
    this.limits = { ...DEFAULT_CONNECTION_LIMITS, ...limits };
    const { headersTimeoutMs, bodyTimeoutMs, idleTimeoutMs } = this.limits;
    this.sweepMs = Math.max(25, Math.min(1000, Math.min(headersTimeoutMs, bodyTimeoutMs, idleTimeoutMs) / 4));
  }

  /** Guard every connection `server` gets from now on (listened for, or emitted into it). */
  watch(server: http.Server): void {
    server.on('connection', (sock: net.Socket) => this.admit(sock));
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      const sock = req.socket;
      // A body nobody reads never emits 'end', but the parser marks it complete once it is in.
      this.enter(sock, 'body', this.limits.bodyTimeoutMs, req);
      res.once('finish', () => this.enter(sock, 'waiting', this.limits.idleTimeoutMs));
    });
  }

  start(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => this.sweep(Date.now()), this.sweepMs);
    this.sweeper.unref();
  }

  stop(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  get open(): number {
    return this.sockets.size;
  }

  stats(): ConnectionGuardStats {
    return {
      open: this.sockets.size,
      timedOut: { waiting: this.counters.timedOutWaiting, body: this.counters.timedOutBody },
      refused: this.counters.refused,
    };
  }

  /**
   * A connection upgraded to a websocket (a changefeed) speaks that protocol from now on, with
   * its own pings: no HTTP deadline applies to it any more. It still counts while open.
   */
  upgraded(sock: net.Socket | Duplex): void {
    this.enter(sock as net.Socket, 'busy', 0);
  }

  /** Close what is past its deadline (exposed for tests; the sweep calls it). */
  sweep(now: number): void {
    for (const [sock, t] of this.sockets) {
      if (t.phase === 'body' && t.req?.complete) this.enter(sock, 'busy', 0);
      if (t.phase === 'busy' || now < t.deadline) continue;
      if (t.phase === 'waiting') this.counters.timedOutWaiting++;
      else this.counters.timedOutBody++;
      this.sockets.delete(sock);
      sock.destroy();
    }
  }

  private admit(sock: net.Socket): void {
    if (this.sockets.size >= this.limits.maxConnections) {
      this.counters.refused++;
      sock.destroy();
      return;
    }
    this.sockets.set(sock, { phase: 'waiting', deadline: Date.now() + this.limits.headersTimeoutMs });
    sock.once('close', () => this.sockets.delete(sock));
  }

  private enter(sock: net.Socket, phase: Phase, timeoutMs: number, req?: http.IncomingMessage): void {
    const t = this.sockets.get(sock);
    if (!t) return;
    t.phase = phase;
    t.deadline = Date.now() + timeoutMs;
    t.req = req;
  }
}
