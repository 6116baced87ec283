/**
 * One-request TCP listeners: what the docker tasks answer as `{host, port}`. On a real CN each
 * docker task forks a helper (sdc-cn-agent lib/backends/smartos/bin/docker-*.js) that listens
 * on an ephemeral port of the CN's admin IP, takes its client(s), and exits when they are done
 * or when nobody connected within its timeout. Here the daemon holds one `StreamListeners` for
 * every CN; a listener and its sockets exist for that one request only:
 *
 * - it binds `host:0` and accepts `connections` clients (1; docker_build takes 2: the build
 *   context, then the build event stream), then stops listening;
 * - it closes when a client it waits for has not come within `timeoutMs`: from the start, and
 *   for a further client from when the previous ones are done (sdc-docker opens the build
 *   stream once the context upload is over; the real build helper would wait forever);
 * - it ends once its clients' sockets are closed; its `signal` then aborts, so whatever the
 *   session runs (a stats interval, an exec's command) stops with it;
 * - it closes when its CN is detached (it is kept with the task's `untilDetach`), and `stop()`
 *   (the daemon stops) closes any still open.
 *
 * Nothing here ticks for a CN without a request in flight.
 */
import net from 'node:net';
import type { Logger } from '../../common/log.js';
import type { UntilDetach } from './until-detach.js';

export interface StreamSessionOptions {
  /** The task's `untilDetach`: the listener closes when its CN is detached. */
  untilDetach: UntilDetach;
  /** What the request was (logs and stats): the task name. */
  name: string;
  /** The address to bind: the CN's agent IP. */
  host: string;
  /** How long an awaited client may take to connect. */
  timeoutMs: number;
  /** Clients accepted before the listener stops listening (default 1). */
  connections?: number;
  /** Keep a socket writable after its client ended its side (the build context upload). */
  allowHalfOpen?: boolean;
  /** Each accepted client, in order (index from 0). */
  onConnection(socket: net.Socket, index: number, session: StreamSession): void;
}

export interface StreamSession {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  /** Aborted when the session ends (clients done, timeout, detach, stop). */
  readonly signal: AbortSignal;
  /** End the session now: stop listening and destroy its sockets. */
  close(reason?: string): void;
}

export interface StreamListenersOptions {
  log: Logger;
  /** Overrides every task's own timeout (tests; the real helpers use 30 s or 60 s). */
  timeoutMs?: number;
}

export class StreamListeners {
  private readonly log: Logger;
  private readonly timeoutOverrideMs: number | undefined;
  private readonly sessions = new Set<Session>();
  private stopped = false;
  /** Counters for `mockcloud status`. */
  readonly counters = { opened: 0, timedOut: 0, connections: 0 };

  constructor(opts: StreamListenersOptions) {
    this.log = opts.log;
    this.timeoutOverrideMs = opts.timeoutMs;
  }

  /** Sessions open now (listening, or serving a client). */
  get size(): number {
    return this.sessions.size;
  }

  stats(): Record<string, number> {
    return { open: this.sessions.size, ...this.counters };
  }

  /** Start listening; resolves once bound, with the session (its `port` is the answer). */
  async open(opts: StreamSessionOptions): Promise<StreamSession> {
    if (this.stopped) throw new Error('cn-agent is stopping');
    const session = new Session(opts, this.timeoutOverrideMs ?? opts.timeoutMs, this.log, (s, how) => {
      this.sessions.delete(s);
      if (how === 'timeout') this.counters.timedOut++;
    }, () => this.counters.connections++);
    this.sessions.add(session);
    try {
      session.forgetOnEnd(opts.untilDetach(() => session.closeAndWait('the mock CN was removed')));
      await session.listen();
    } catch (err) {
      session.close('listen failed');
      throw err;
    }
    this.counters.opened++;
    return session;
  }

  /** Close every session; no new one opens afterwards. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.sessions].map((s) => s.closeAndWait('cn-agent is stopping')));
  }

  /** Let sessions open again after `stop` (a CnAgentServer started again). */
  start(): void {
    this.stopped = false;
  }
}

/**
 * The host a task answers: the address the CN's cn-agent socket is bound to, or, when that is
 * a wildcard address, the CN's `CN Agent IP` (a client cannot connect to 0.0.0.0).
 */
export function advertisedHost(serverAddress: { address: string }, sysinfo: Record<string, unknown>): string {
  const a = serverAddress.address;
  if (a !== '0.0.0.0' && a !== '::') return a;
  const agentIp = sysinfo['CN Agent IP'];
  return typeof agentIp === 'string' && agentIp ? agentIp : a;
}

/** The daemon's listeners, as a task finds them in its environment. */
export function streamsOf(env: { streams?: StreamListeners | undefined }): StreamListeners {
  if (!env.streams) throw new Error('this cn-agent has no stream listeners');
  return env.streams;
}

type EndHow = 'done' | 'timeout' | 'closed';

class Session implements StreamSession {
  readonly name: string;
  readonly host: string;
  private readonly server: net.Server;
  private readonly controller = new AbortController();
  private readonly sockets = new Set<net.Socket>();
  private readonly wanted: number;
  private accepted = 0;
  private timer: NodeJS.Timeout | undefined;
  private listening = false;
  private ended = false;
  private readonly serverClosed: Promise<void>;
  private resolveServerClosed!: () => void;
  private forget: () => void = () => undefined;

  constructor(
    private readonly opts: StreamSessionOptions,
    private readonly timeoutMs: number,
    private readonly log: Logger,
    private readonly onEnd: (s: Session, how: EndHow) => void,
    private readonly onAccept: () => void,
  ) {
    this.name = opts.name;
    this.host = opts.host;
    this.wanted = Math.max(1, opts.connections ?? 1);
    this.serverClosed = new Promise((resolve) => {
      this.resolveServerClosed = resolve;
    });
    this.server = net.createServer({ allowHalfOpen: opts.allowHalfOpen === true }, (sock) => this.accept(sock));
    this.server.on('error', (err) => this.log.warn({ err, task: this.name }, 'stream listener error'));
  }

  get port(): number {
    const a = this.server.address();
    return a && typeof a === 'object' ? a.port : 0;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.server.once('error', onError);
      this.server.listen({ host: this.host, port: 0, backlog: this.wanted }, () => {
        this.server.removeListener('error', onError);
        this.listening = true;
        this.arm();
        resolve();
      });
    });
  }

  /** `forget` (what untilDetach returned) runs when the session ends. */
  forgetOnEnd(forget: () => void): void {
    this.forget = forget;
  }

  close(reason = 'closed'): void {
    if (this.ended) return;
    this.log.debug({ task: this.name, port: this.port, reason }, 'stream listener closed');
    this.end('closed');
    for (const s of this.sockets) s.destroy();
  }

  async closeAndWait(reason: string): Promise<void> {
    this.close(reason);
    await this.serverClosed;
  }

  /** Wait `timeoutMs` for the next client; nobody came: close, as the real helpers do. */
  private arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (this.ended) return;
      this.log.warn({ task: this.name, port: this.port, timeoutMs: this.timeoutMs }, 'closing stream listener: no connection');
      this.end('timeout');
      for (const s of this.sockets) s.destroy();
    }, this.timeoutMs);
  }

  private stopListening(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.listening) {
      this.listening = false;
      this.server.close(() => this.resolveServerClosed());
    } else {
      this.resolveServerClosed();
    }
  }

  private accept(sock: net.Socket): void {
    if (this.ended || this.accepted >= this.wanted) {
      sock.destroy();
      return;
    }
    const index = this.accepted++;
    this.onAccept();
    this.sockets.add(sock);
    sock.on('error', (err) => this.log.debug({ err, task: this.name }, 'stream socket error'));
    sock.once('close', () => {
      this.sockets.delete(sock);
      if (this.sockets.size > 0 || this.ended) return;
      if (this.accepted >= this.wanted) this.end('done');
      else this.arm();
    });
    clearTimeout(this.timer);
    if (this.accepted >= this.wanted) this.stopListening();
    try {
      this.opts.onConnection(sock, index, this);
    } catch (err) {
      this.log.error({ err, task: this.name }, 'stream session failed');
      this.close('session failed');
    }
  }

  private end(how: EndHow): void {
    if (this.ended) return;
    this.ended = true;
    this.stopListening();
    this.controller.abort(new Error(`stream session ${how}`));
    this.forget();
    this.onEnd(this, how);
  }
}
