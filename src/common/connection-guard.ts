/**
 * Deadlines and caps for the connections an HTTP server accepts, so that idle sockets, slow
 * headers and slow bodies cannot hold descriptors forever, a flood on one listener cannot take
 * the descriptors every other listener (and the fleet's outbound calls) need, and a flood of
 * idle connections never stops the work of clients that send requests promptly.
 *
 * Node's own headersTimeout / requestTimeout are checked only for servers that `listen()`
 * themselves, and never for a connection that sends nothing; cn-agent's per-CN sockets are fed
 * into one http.Server with `emit('connection')`. So the guard tracks each connection's phase
 * itself and one sweep per guard (not a timer per connection) closes those past their deadline:
 *
 *   silent   connected, nothing sent yet (where the owner tells: cn-agent hands a connection to
 *            HTTP only once it sends something); its headers are due within `headersTimeoutMs`;
 *   idle     connected, no full request yet: its headers are due within `headersTimeoutMs`
 *            of the connection, its body within `bodyTimeoutMs` of the headers;
 *   kept     answered and kept alive: the next request's headers are due within `idleTimeoutMs`;
 *   busy     a complete request is with its handler (a cn-agent task may take an hour), or the
 *            connection was upgraded to a websocket: no deadline, never shed.
 *
 * At a cap a new connection is not refused while an idle or kept one can make room: the
 * oldest silent connection is shed first, then the oldest kept-alive one, then the oldest idle
 * one (it sent bytes: maybe a whole request waiting to be handed over); never one whose body is
 * arriving (its deadline ends it). Only when none is left to shed is the newcomer closed. So a
 * flood of idle sockets, however often it reconnects, sheds itself: a prompt client's
 * connection is the newest, and its request is in before the flood reaches it.
 *
 *   maxConnections  open connections across every server the guard watches;
 *   reserve         slots idle connections can never take (a sixteenth of the cap, at most
 *                   512, unless given): at `maxConnections - reserve` idle
 *                   ones, a new connection sheds the oldest idle one, so requests (the CLI's,
 *                   CNAPI's) always find room beside the flood;
 *   maxPerGroup     connections of one group (a CN's port) at most: a flood on one CN's port
 *                   sheds that port's idle connections, not every CN's.
 *
 * Reaching a cap is logged at WARN at most once a minute, with the counts since the last line.
 */
import type http from 'node:http';
import type net from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * Every connection some guard took: a connection has one guard. A server may be fed by more
 * than one listener, each with a guard of its own (the control API's TCP port, and its Unix
 * socket for the CLI): a guard watching it takes only the connections no guard took first, so
 * a flood of one listener is shed by that listener's guard alone and never fills another's.
 */
const guarded = new WeakSet<net.Socket>();

export interface ConnectionLimits {
  /** From connect to a first request's complete headers. */
  headersTimeoutMs: number;
  /** From complete headers to the end of the request body. */
  bodyTimeoutMs: number;
  /** From an answer to the next request's complete headers on a kept-alive connection. */
  idleTimeoutMs: number;
  /** Open connections across every server this guard watches. */
  maxConnections: number;
  /** Slots connections without a full request can never take (kept for requests). */
  reserve: number;
  /** Open connections of one group (e.g. one CN's port) at most; 0: no such bound. */
  maxPerGroup: number;
}

/**
 * Node's keep-alive default (5 s); headers within 30 s; a body within Node's requestTimeout
 * (300 s): an image file upload (IMGAPI AddImageFile) takes minutes.
 */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 300_000,
  idleTimeoutMs: 5_000,
  // Above the task queue's bound and the tasks in flight (admission.ts: 4096 + 128), so a burst
  // of tasks is queued or refused with a 503, never cut; and at 10,000 CNs (10,000 listening
  // sockets) still under a 20,000 descriptor limit.
  maxConnections: 6144,
  // A sixteenth of the cap unless given (see the constructor).
  reserve: 384,
  maxPerGroup: 0,
};

/** A WARN about a cap at most this often. */
export const CAP_WARN_INTERVAL_MS = 60_000;

type Phase = 'silent' | 'idle' | 'kept' | 'busy';

interface Tracked {
  sock: net.Socket;
  phase: Phase;
  deadline: number;
  /** The request whose body is due, while idle after its headers (its `complete` ends the phase). */
  req?: http.IncomingMessage | undefined;
  group: Group | undefined;
  /** Its place in its phase's list, and in its group's. */
  link: Link;
  groupLink: Link;
}

/** A place in a Fifo: removing a connection from the middle costs nothing (a flood sheds thousands a second). */
class Link {
  prev: Link | undefined;
  next: Link | undefined;
  list: Fifo | undefined;
  constructor(readonly t: Tracked) {}
}

/** Connections of one phase, oldest first. */
class Fifo {
  private head: Link | undefined;
  private tail: Link | undefined;
  size = 0;

  push(l: Link): void {
    l.list = this;
    l.prev = this.tail;
    l.next = undefined;
    if (this.tail) this.tail.next = l;
    else this.head = l;
    this.tail = l;
    this.size++;
  }

  remove(l: Link): void {
    if (l.list !== this) return;
    if (l.prev) l.prev.next = l.next;
    else this.head = l.next;
    if (l.next) l.next.prev = l.prev;
    else this.tail = l.prev;
    l.prev = l.next = l.list = undefined;
    this.size--;
  }

  /** Oldest first; the current one may be removed while iterating. */
  *[Symbol.iterator](): IterableIterator<Tracked> {
    for (let l = this.head; l; ) {
      const next = l.next;
      yield l.t;
      l = next;
    }
  }
}

interface Group {
  key: string;
  count: number;
  /** Its silent, idle and kept connections, each oldest first. */
  silent: Fifo;
  idle: Fifo;
  kept: Fifo;
}

export interface ConnectionGuardStats {
  open: number;
  /**
   * Open now: without a full request (idle; of them, `silent` sent nothing yet), answered and
   * kept alive (kept), with a request (busy).
   */
  idle: number;
  silent: number;
  kept: number;
  busy: number;
  /** Closed because a deadline passed, by phase. */
  timedOut: { waiting: number; body: number };
  /** Closed to make room for a newer connection at a cap: idle (no full request) or kept alive. */
  shed: { idle: number; kept: number };
  /** Closed at once because every slot was busy. */
  refused: number;
}

/** What a WARN about a cap says. */
export interface CapReport {
  open: number;
  idle: number;
  kept: number;
  busy: number;
  maxConnections: number;
  reserve: number;
  maxPerGroup: number;
  /** Since the last report. */
  shedIdle: number;
  shedKept: number;
  refused: number;
  /** Groups (CN ports) whose own bound was reached since the last report. */
  groupsAtCap: number;
}

export interface ConnectionGuardOptions {
  /** Told, at most once a minute, that a cap was reached, with the counts (a WARN line). */
  onCap?: (report: CapReport) => void;
}

export class ConnectionGuard {
  /** The limits in force (the cap may be moved by setMaxConnections). */
  readonly limits: ConnectionLimits;
  private readonly sockets = new Map<net.Socket, Tracked>();
  /** Silent, idle and kept connections, each oldest first. */
  private readonly silent = new Fifo();
  private readonly idle = new Fifo();
  private readonly kept = new Fifo();
  private readonly groups = new Map<string, Group>();
  private readonly counters = { timedOutWaiting: 0, timedOutBody: 0, refused: 0, shedIdle: 0, shedKept: 0 };
  private readonly sinceWarn = { shedIdle: 0, shedKept: 0, refused: 0, groups: new Set<string>() };
  private lastWarnAt = -Infinity;
  private sweeper: NodeJS.Timeout | undefined;

  /** How often the sweep runs: a quarter of the shortest deadline, at most once a second. */
  private readonly sweepMs: number;

  /** Whether the reserve follows the cap (not given), for setMaxConnections. */
  private readonly derivedReserve: boolean;

  constructor(
    limits: Partial<ConnectionLimits> = {},
    private readonly opts: ConnectionGuardOptions = {},
  ) {
    const l = { ...DEFAULT_CONNECTION_LIMITS, ...limits };
    this.derivedReserve = limits.reserve === undefined;
    if (this.derivedReserve) l.reserve = derivedReserve(l.maxConnections);
    // A reserve larger than the cap would leave no room for a connection to arrive in.
    l.reserve = Math.max(0, Math.min(l.reserve, l.maxConnections - 1));
    this.limits = l;
    const { headersTimeoutMs, bodyTimeoutMs, idleTimeoutMs } = this.limits;
    this.sweepMs = Math.max(25, Math.min(1000, Math.min(headersTimeoutMs, bodyTimeoutMs, idleTimeoutMs) / 4));
  }

  /**
   * Guard the connections `server` gets from now on (listened for, or emitted into it); requests
   * on a connection move it through the phases of the guard that took it. A connection some
   * guard's `admit` already took (at accept, before it was handed over) is not taken again.
   * With `admitNew: false` this guard takes none here: its connections are those it admits at
   * its own listener's accept, and the server's other connections belong to other guards (a
   * guard that took them too would shed them, and its own, at its smaller cap).
   */
  watch(server: http.Server, opts: { admitNew?: boolean } = {}): void {
    if (opts.admitNew !== false) {
      server.on('connection', (sock: net.Socket) => {
        if (!guarded.has(sock)) this.admit(sock);
      });
    }
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      const sock = req.socket;
      // A body nobody reads never emits 'end', but the parser marks it complete once it is in.
      if (req.complete) this.enter(sock, 'busy', 0);
      else this.enter(sock, 'idle', this.limits.bodyTimeoutMs, req);
      res.once('finish', () => this.enter(sock, 'kept', this.limits.idleTimeoutMs));
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

  /**
   * A new cap (the owner sizes it to the descriptors it can spare, which change as its
   * listening sockets come and go). Connections over a lowered cap are shed at once, in the
   * order a cap sheds them (see the top), as far as silent, kept-alive and idle ones go.
   */
  setMaxConnections(n: number, maxPerGroup?: number): void {
    const l = this.limits;
    l.maxConnections = Math.max(1, Math.floor(n));
    if (this.derivedReserve) l.reserve = derivedReserve(l.maxConnections);
    l.reserve = Math.max(0, Math.min(l.reserve, l.maxConnections - 1));
    if (maxPerGroup !== undefined) l.maxPerGroup = maxPerGroup;
    while (this.sockets.size > l.maxConnections && this.shedOne([this.silent, this.kept, this.idle]));
  }

  stats(): ConnectionGuardStats {
    return {
      open: this.sockets.size,
      idle: this.idle.size + this.silent.size,
      silent: this.silent.size,
      kept: this.kept.size,
      busy: this.sockets.size - this.idle.size - this.silent.size - this.kept.size,
      timedOut: { waiting: this.counters.timedOutWaiting, body: this.counters.timedOutBody },
      shed: { idle: this.counters.shedIdle, kept: this.counters.shedKept },
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

  /**
   * Take a new connection (of `group`, e.g. the CN whose port accepted it), making room at a
   * cap by shedding older idle ones. False (and the socket destroyed) when every slot is busy.
   */
  admit(sock: net.Socket, group?: string, opts: { silent?: boolean } = {}): boolean {
    const l = this.limits;
    let g: Group | undefined;
    if (group !== undefined && l.maxPerGroup > 0) {
      g = this.groups.get(group);
      if (!g) this.groups.set(group, (g = { key: group, count: 0, silent: new Fifo(), idle: new Fifo(), kept: new Fifo() }));
      if (g.count >= l.maxPerGroup) {
        this.sinceWarn.groups.add(group);
        if (!this.shedOne([g.silent, g.kept, g.idle])) return this.refuse(sock, g);
      }
    }
    if (this.idle.size + this.silent.size >= l.maxConnections - l.reserve) {
      if (!this.shedOne([this.silent, this.idle]) && this.sockets.size >= l.maxConnections) return this.refuse(sock, g);
    }
    if (this.sockets.size >= l.maxConnections && !this.shedOne([this.silent, this.kept, this.idle])) return this.refuse(sock, g);
    const phase: Phase = opts.silent ? 'silent' : 'idle';
    const t = { sock, phase, deadline: Date.now() + l.headersTimeoutMs, group: g } as Tracked;
    t.link = new Link(t);
    t.groupLink = new Link(t);
    this.sockets.set(sock, t);
    guarded.add(sock);
    this.listOf(phase)!.push(t.link);
    if (g) {
      g.count++;
      this.groupListOf(g, phase)!.push(t.groupLink);
    }
    sock.once('close', () => this.forget(sock));
    return true;
  }

  /** A silent connection sent its first bytes: idle from now on (its deadline stays). */
  spoke(sock: net.Socket): void {
    const t = this.sockets.get(sock);
    if (!t || t.phase !== 'silent') return;
    const deadline = t.deadline;
    this.enter(sock, 'idle', 0);
    t.deadline = deadline;
  }

  /** Close what is past its deadline, and report a cap reached (exposed for tests; the sweep calls it). */
  sweep(now: number): void {
    for (const list of [this.silent, this.idle, this.kept]) {
      // Silent and kept connections are listed in the order of their deadlines: the first one
      // not due ends the walk. Idle ones (a body's deadline moves) are few: all are looked at.
      const ordered = list !== this.idle;
      for (const t of list) {
        if (t.req?.complete) {
          this.enter(t.sock, 'busy', 0);
          continue;
        }
        if (now < t.deadline) {
          if (ordered) break;
          continue;
        }
        if (t.phase === 'kept' || !t.req) this.counters.timedOutWaiting++;
        else this.counters.timedOutBody++;
        this.forget(t.sock);
        t.sock.destroy();
      }
    }
    this.maybeWarn(now);
  }

  /** Shed the oldest connection of the first of `lists` that has one; false when none has. */
  private shedOne(lists: readonly Fifo[]): boolean {
    for (const list of lists) {
      for (const t of list) {
        const sock = t.sock;
        // Its request is in after all: it is busy, not idle (marked now, then the next one).
        if (t.req?.complete) {
          this.enter(sock, 'busy', 0);
          continue;
        }
        // Its headers are in and its body is arriving (an upload): the body deadline ends it.
        if (t.req) continue;
        if (t.phase === 'kept') {
          this.counters.shedKept++;
          this.sinceWarn.shedKept++;
        } else {
          this.counters.shedIdle++;
          this.sinceWarn.shedIdle++;
        }
        this.forget(sock);
        sock.destroy();
        this.maybeWarn(Date.now());
        return true;
      }
    }
    return false;
  }

  private refuse(sock: net.Socket, g: Group | undefined): false {
    this.counters.refused++;
    this.sinceWarn.refused++;
    if (g && g.count === 0) this.groups.delete(g.key);
    sock.destroy();
    this.maybeWarn(Date.now());
    return false;
  }

  private maybeWarn(now: number): void {
    const w = this.sinceWarn;
    if (w.shedIdle + w.shedKept + w.refused === 0) return;
    if (now - this.lastWarnAt < CAP_WARN_INTERVAL_MS) return;
    this.lastWarnAt = now;
    const l = this.limits;
    this.opts.onCap?.({
      open: this.sockets.size,
      idle: this.idle.size + this.silent.size,
      kept: this.kept.size,
      busy: this.sockets.size - this.idle.size - this.silent.size - this.kept.size,
      maxConnections: l.maxConnections,
      reserve: l.reserve,
      maxPerGroup: l.maxPerGroup,
      shedIdle: w.shedIdle,
      shedKept: w.shedKept,
      refused: w.refused,
      groupsAtCap: w.groups.size,
    });
    w.shedIdle = w.shedKept = w.refused = 0;
    w.groups.clear();
  }

  private forget(sock: net.Socket): void {
    const t = this.sockets.get(sock);
    if (!t) return;
    this.sockets.delete(sock);
    t.link.list?.remove(t.link);
    const g = t.group;
    if (g) {
      t.groupLink.list?.remove(t.groupLink);
      if (--g.count === 0) this.groups.delete(g.key);
    }
  }

  private enter(sock: net.Socket, phase: Phase, timeoutMs: number, req?: http.IncomingMessage): void {
    const t = this.sockets.get(sock);
    if (!t) return;
    const was = t.phase;
    t.phase = phase;
    t.deadline = Date.now() + timeoutMs;
    t.req = req;
    const g = t.group;
    if (was !== phase) {
      // Leaving a phase; entering one puts it last (the newest) of its kind.
      t.link.list?.remove(t.link);
      this.listOf(phase)?.push(t.link);
      if (g) {
        t.groupLink.list?.remove(t.groupLink);
        this.groupListOf(g, phase)?.push(t.groupLink);
      }
    }
  }

  private listOf(phase: Phase): Fifo | undefined {
    return phase === 'silent' ? this.silent : phase === 'idle' ? this.idle : phase === 'kept' ? this.kept : undefined;
  }

  private groupListOf(g: Group, phase: Phase): Fifo | undefined {
    return phase === 'silent' ? g.silent : phase === 'idle' ? g.idle : phase === 'kept' ? g.kept : undefined;
  }
}

/** A sixteenth of the cap, at most 512: room for requests, not for a flood. */
/** The slots kept for connections with a request, of a cap whose reserve is not given. */
export function derivedReserve(maxConnections: number): number {
  return Math.min(512, Math.floor(maxConnections / 16));
}

/** The WARN line of a cap reached on `listener`. */
export function capMessage(listener: string, r: CapReport): string {
  const what = [
    r.shedIdle ? `${r.shedIdle} idle connection(s) closed to make room` : '',
    r.shedKept ? `${r.shedKept} kept-alive one(s) closed` : '',
    r.refused ? `${r.refused} refused with every slot busy` : '',
    r.groupsAtCap ? `${r.groupsAtCap} port(s) at their own cap of ${r.maxPerGroup}` : '',
  ].filter(Boolean);
  return (
    `${listener}: connection cap of ${r.maxConnections} reached (${r.open} open: ${r.idle} idle, ${r.kept} kept alive, ${r.busy} busy; ` +
    `${r.reserve} kept for requests): ${what.join(', ')} since the last such line (at most one a minute)`
  );
}
